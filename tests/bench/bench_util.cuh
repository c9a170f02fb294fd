// What the GPU micro-benchmarks share: CUDA and Status checks that end the
// bench with a message (a bench has nothing to recover), the event timer
// (median, min, max of `reps` calls after `warm` untimed ones), random inputs.
// defines: CK, ST, Stats, time_it(), randn()
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
