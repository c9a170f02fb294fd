// One attention block (kernels/cpu/attention_cpu_block.h), portable: plain
// C++ over N independent lanes (N = 16 when head_dim allows, so a compiler
// can vectorise for whatever baseline the build targets; 1 for other head
// dims), f16 through fp16_to_fp32, exp by std::exp.
// defines: attention_block_portable (kernels/cpu/attention_cpu_block.h)
#include <algorithm>
#include <cmath>

#include "kernels/cpu/attention_cpu_block.h"
#include "kernels/half.h"

#define LS_ATTN_TARGET

namespace ls {
namespace {

template <int N>
struct VecLanes {
  struct F {
    float x[N];
  };
  static constexpr int W = N;
  static constexpr int kAcc = 8;
  static constexpr int kTiledNg = 8;
  static constexpr int kTiledAcc = 8;
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
  static F mul(F a, const F& b) {
    for (int i = 0; i < N; ++i) a.x[i] *= b.x[i];
    return a;
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

#include "kernels/cpu/attention_cpu_body.h"

namespace ls {
void attention_block_portable(const AttnBlockArgs& a) {
  if (a.head_dim % 16 == 0) return attn_block<VecLanes<16>>(a);
  attn_block<VecLanes<1>>(a);
}
}  // namespace ls
