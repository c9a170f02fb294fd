// The portable vector type of the attention block body (attention_cpu_body.h's
// V): plain C++ over N independent lanes, which a compiler can vectorise for
// whatever baseline the build targets; f16 through fp16_to_fp32, exp by
// std::exp. Everything here has internal linkage.
// defines (internal): VecLanes
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/half.h"

namespace ls {
namespace {

template <int N>
struct VecLanes {
  struct F {
    float x[N];
  };
  static constexpr int W = N;
  static constexpr int kAcc = 8;
  static F zero() { return set1(0.0f); }
  static F set1(float v) {
    F r;
    for (int i = 0; i < N; ++i) r.x[i] = v;
    return r;
  }
  static F load(const float* p) {
    F r;
    for (int i = 0; i < N; ++i) r.x[i] = p[i];
    return r;
  }
  static F load(const uint16_t* p) {
    F r;
    for (int i = 0; i < N; ++i) r.x[i] = fp16_to_fp32(p[i]);
    return r;
  }
  static void store(float* p, const F& v) {
    for (int i = 0; i < N; ++i) p[i] = v.x[i];
  }
  static F fma(const F& a, const F& b, F c) {
    for (int i = 0; i < N; ++i) c.x[i] += a.x[i] * b.x[i];
    return c;
  }
  static F add(F a, const F& b) {
    for (int i = 0; i < N; ++i) a.x[i] += b.x[i];
    return a;
  }
  static F sub(F a, const F& b) {
    for (int i = 0; i < N; ++i) a.x[i] -= b.x[i];
    return a;
  }
  static F max(F a, const F& b) {
    for (int i = 0; i < N; ++i) a.x[i] = std::max(a.x[i], b.x[i]);
    return a;
  }
  // Pairwise tree, a fixed order.
  static float hsum(F a) {
    for (int w = N / 2; w >= 1; w /= 2)
      for (int i = 0; i < w; ++i) a.x[i] += a.x[i + w];
    return a.x[0];
  }
  static void hsums(const F* v, float scale, float* out) {
    for (int i = 0; i < N; ++i) out[i] = hsum(v[i]) * scale;
  }
  // Lane i and lane i ± N/2 swapped (attention_cpu_vec512.h's).
  static F swap_halves(const F& a) {
    F r;
    for (int i = 0; i < N; ++i) r.x[i] = a.x[(i + N / 2) % N];
    return r;
  }
  static float hmax(F a) {
    for (int w = N / 2; w >= 1; w /= 2)
      for (int i = 0; i < w; ++i) a.x[i] = std::max(a.x[i], a.x[i + w]);
    return a.x[0];
  }
  static F exp(F a) {
    for (int i = 0; i < N; ++i) a.x[i] = std::exp(a.x[i]);
    return a;
  }
  static void prefetch_l1(const char*) {}
  static void prefetch_l2(const char*) {}
};

}  // namespace
}  // namespace ls
