#include "runtime/probe_gpu.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "runtime/cuda_util.cuh"

namespace ls {
namespace {

// A timed loop of one copy per pass on its own stream.
template <typename Copy>
Expected<GpuBandwidth> time_copies(const char* what, uint64_t counted_bytes, int passes,
                                   Copy copy) {
  cudaStream_t s = nullptr;
  cudaEvent_t a = nullptr, b = nullptr;
  struct Cleanup {
    cudaStream_t& s;
    cudaEvent_t &a, &b;
    ~Cleanup() {
      if (a) cudaEventDestroy(a);
      if (b) cudaEventDestroy(b);
      if (s) cudaStreamDestroy(s);
    }
  } cleanup{s, a, b};
  LS_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  LS_CUDA_TRY(cudaEventCreate(&a));
  LS_CUDA_TRY(cudaEventCreate(&b));
  LS_CUDA_TRY(copy(s));  // warm-up: first-touch and clocks
  LS_CUDA_TRY(cudaStreamSynchronize(s));
  GpuBandwidth r;
  r.what = what;
  for (int i = 0; i < std::max(passes, 1); ++i) {
    LS_CUDA_TRY(cudaEventRecord(a, s));
    LS_CUDA_TRY(copy(s));
    LS_CUDA_TRY(cudaEventRecord(b, s));
    LS_CUDA_TRY(cudaEventSynchronize(b));
    float ms = 0;
    LS_CUDA_TRY(cudaEventElapsedTime(&ms, a, b));
    r.gbps.push_back(static_cast<double>(counted_bytes) / (ms * 1e-3) / 1e9);
  }
  std::vector<double> v = r.gbps;
  std::sort(v.begin(), v.end());
  r.median = v[v.size() / 2];
  r.min = v.front();
  r.max = v.back();
  return r;
}

}  // namespace

Expected<GpuBandwidth> probe_h2d(uint64_t bytes, int passes, bool pinned) {
  void* dev = nullptr;
  void* host = nullptr;
  struct Cleanup {
    void*& dev;
    void*& host;
    bool pinned;
    ~Cleanup() {
      if (dev) cudaFree(dev);
      if (host) pinned ? (void)cudaFreeHost(host) : std::free(host);
    }
  } cleanup{dev, host, pinned};
  LS_CUDA_TRY(cudaMalloc(&dev, bytes));
  if (pinned) {
    LS_CUDA_TRY(cudaHostAlloc(&host, bytes, cudaHostAllocPortable));
  } else {
    host = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    if (!host)
      return make_error("probe: cannot allocate %llu bytes of host memory",
                        static_cast<unsigned long long>(bytes));
  }
  std::memset(host, 0x5A, bytes);  // fault every page in before timing
  return time_copies(pinned ? "pinned H2D" : "pageable H2D", bytes, passes, [&](cudaStream_t s) {
    return cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s);
  });
}

Expected<GpuBandwidth> probe_d2d(uint64_t bytes, int passes) {
  void* a = nullptr;
  void* b = nullptr;
  struct Cleanup {
    void*& a;
    void*& b;
    ~Cleanup() {
      if (a) cudaFree(a);
      if (b) cudaFree(b);
    }
  } cleanup{a, b};
  LS_CUDA_TRY(cudaMalloc(&a, bytes));
  LS_CUDA_TRY(cudaMalloc(&b, bytes));
  LS_CUDA_TRY(cudaMemset(a, 0x5A, bytes));
  return time_copies(
      "device memory (D2D copy, read + write)", 2 * bytes, passes,
      [&](cudaStream_t s) { return cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s); });
}

Expected<double> probe_h2d_until(uint64_t bytes, std::atomic<bool>& started,
                                 const std::atomic<bool>& stop) {
  void* dev = nullptr;
  void* host = nullptr;
  cudaStream_t s = nullptr;
  struct Cleanup {
    void*& dev;
    void*& host;
    cudaStream_t& s;
    std::atomic<bool>& started;
    ~Cleanup() {
      started.store(true);  // never leave the other side waiting
      if (s) cudaStreamDestroy(s);
      if (dev) cudaFree(dev);
      if (host) cudaFreeHost(host);
    }
  } cleanup{dev, host, s, started};
  LS_CUDA_TRY(cudaMalloc(&dev, bytes));
  LS_CUDA_TRY(cudaHostAlloc(&host, bytes, cudaHostAllocPortable));
  std::memset(host, 0x5A, bytes);
  LS_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  LS_CUDA_TRY(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s));  // warm-up
  LS_CUDA_TRY(cudaStreamSynchronize(s));
  started.store(true);
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t moved = 0;
  while (!stop.load()) {
    LS_CUDA_TRY(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s));
    LS_CUDA_TRY(cudaStreamSynchronize(s));
    moved += bytes;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return secs > 0 ? static_cast<double>(moved) / secs / 1e9 : 0.0;
}

}  // namespace ls
