// Helpers shared by the GPU op and backend tests: RAII device buffers,
// poisoning, random inputs, and the error measures the thresholds use.
// defines: DevBuf, have_gpu(), nmse(), max_abs_diff(), max_abs(), rand_floats(),
//          Q8Mismatches, q8_mismatches()
#pragma once

#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace ls::gpu_test {

inline bool have_gpu() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return n > 0;
}

template <typename T>
struct DevBuf {
  T* p = nullptr;
  size_t n = 0;
  explicit DevBuf(size_t count) : n(count) {
    REQUIRE(cudaMalloc(&p, std::max<size_t>(count, 1) * sizeof(T)) == cudaSuccess);
  }
  DevBuf(const std::vector<T>& v) : DevBuf(v.size()) { upload(v); }
  ~DevBuf() { cudaFree(p); }
  DevBuf(const DevBuf&) = delete;
  void upload(const std::vector<T>& v) {
    REQUIRE(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  }
  // Every byte 0xFF: NaN for floats, -1 for ints, NaN for halves.
  void poison() { REQUIRE(cudaMemset(p, 0xFF, n * sizeof(T)) == cudaSuccess); }
  std::vector<T> download() const {
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    std::vector<T> v(n);
    REQUIRE(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
    return v;
  }
};

inline std::vector<float> rand_floats(std::mt19937& rng, size_t n, float lo = -1.0f,
                                      float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Normalised mean squared error; NaN anywhere in out gives +inf (never passes).
inline double nmse(const std::vector<float>& out, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(out[i])) return INFINITY;
    const double d = static_cast<double>(out[i]) - ref[i];
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return den > 0 ? num / den : num;
}
inline double max_abs_diff(const std::vector<float>& out, const std::vector<float>& ref) {
  double m = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(out[i])) return INFINITY;
    m = std::max(m, std::fabs(static_cast<double>(out[i]) - ref[i]));
  }
  return m;
}
// 8-bit activations made on the device (q, {d, sum q} per block of 32)
// against the reference's q and d (kernels/ref/act_q8.h): the values,
// scales and block sums that differ in any bit.
struct Q8Mismatches {
  int64_t q = 0, d = 0, sum = 0;
};
inline Q8Mismatches q8_mismatches(const std::vector<int8_t>& q, const std::vector<float2>& ds,
                                  const std::vector<int8_t>& qr, const std::vector<float>& dr) {
  Q8Mismatches m;
  for (size_t i = 0; i < qr.size(); ++i) m.q += q[i] != qr[i];
  for (size_t b = 0; b < dr.size(); ++b) {
    m.d += std::memcmp(&ds[b].x, &dr[b], sizeof(float)) != 0;
    int sum = 0;
    for (size_t i = 0; i < 32; ++i) sum += qr[b * 32 + i];
    m.sum += ds[b].y != static_cast<float>(sum);
  }
  return m;
}
inline double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, std::fabs(static_cast<double>(x)));
  return m;
}

}  // namespace ls::gpu_test

// Skip a GPU test case when no device is present (the main prints SKIPPED).
#define LS_GPU_TEST_GUARD() \
  if (!::ls::gpu_test::have_gpu()) return
