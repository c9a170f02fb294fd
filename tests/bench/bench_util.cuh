// What the GPU micro-benchmarks share: CUDA and Status checks that end the
// bench with a message (a bench has nothing to recover), the event timer
// (median, min, max of `reps` calls after `warm` untimed ones), random inputs.
// defines: CK, ST, Stats, time_it(), randn(), d2d_bound_gbs(), graph_us()
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <type_traits>
#include <vector>

#include "runtime/status.h"

#define CK(call)                                                                                 \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)
#define ST(expr)                                                                          \
  do {                                                                                    \
    ::ls::Status s_ = (expr);                                                             \
    if (!s_.ok()) {                                                                       \
      std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, s_.error().message.c_str()); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

struct Stats {
  double med, min, max;  // ms
};

// f() or f(i), i = the call's index (to rotate over copies of the inputs).
template <typename F>
Stats time_it(cudaStream_t s, int warm, int reps, F&& f) {
  auto call = [&](int i) {
    if constexpr (std::is_invocable_v<F&, int>)
      f(i);
    else
      f();
  };
  for (int i = 0; i < warm; ++i) call(i);
  std::vector<cudaEvent_t> ev(2 * reps);
  for (auto& e : ev) CK(cudaEventCreate(&e));
  for (int i = 0; i < reps; ++i) {
    CK(cudaEventRecord(ev[2 * i], s));
    call(i);
    CK(cudaEventRecord(ev[2 * i + 1], s));
  }
  CK(cudaStreamSynchronize(s));
  CK(cudaGetLastError());
  std::vector<float> ms(reps);
  for (int i = 0; i < reps; ++i) CK(cudaEventElapsedTime(&ms[i], ev[2 * i], ev[2 * i + 1]));
  for (auto& e : ev) cudaEventDestroy(e);
  std::sort(ms.begin(), ms.end());
  return {ms[reps / 2], ms.front(), ms.back()};
}

inline std::vector<float> randn(size_t n, std::mt19937_64& r) {
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> v(n);
  for (auto& f : v) f = nd(r);
  return v;
}

// The device-memory bound: a 2 GiB cudaMemcpy D2D, bytes read + written over
// the median of 20 copies, in GB/s; printed as the run's "bound" line.
inline double d2d_bound_gbs(cudaStream_t s) {
  const size_t cb = size_t(2) << 30;
  void *a, *b;
  CK(cudaMalloc(&a, cb));
  CK(cudaMalloc(&b, cb));
  CK(cudaMemset(a, 1, cb));
  Stats cp =
      time_it(s, 3, 20, [&](int) { CK(cudaMemcpyAsync(b, a, cb, cudaMemcpyDeviceToDevice, s)); });
  const double bw = 2.0 * cb / (cp.med * 1e-3) / 1e9;
  CK(cudaFree(a));
  CK(cudaFree(b));
  std::printf("bound: D2D copy %.0f GB/s (read+write, median of 20; min %.3f max %.3f ms)\n", bw,
              cp.min, cp.max);
  return bw;
}

// As decode runs kernels: n calls of call(i) captured in one CUDA graph, so
// launch gaps are the GPU's, not the host's; the median of 10 launches, in
// microseconds per call.
template <typename F>
double graph_us(cudaStream_t s, int n, F&& call) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < n; ++i) call(i);
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  Stats st = time_it(s, 2, 10, [&](int) { CK(cudaGraphLaunch(ge, s)); });
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  return st.med * 1e3 / n;
}
