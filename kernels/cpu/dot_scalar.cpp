// Stage 2, portable (kernels/cpu/dot.h): 16 independent lanes per token, so
// that a compiler can vectorise it for whatever baseline the build targets,
// and so that its summation order does not depend on that. Contraction is
// off: w = s * q - m must round twice, as the reference does.
// defines: dot_g16_f32_scalar (kernels/cpu/dot.h)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <cassert>

#include "kernels/cpu/dot.h"

namespace ls {

namespace {

// Templated on the token count and the min, so that the 16-lane loops have
// fixed trip counts and the compiler vectorises them for the baseline ISA.
template <int NT, bool kMin>
void dot_nt(const G16Row& w, int64_t n, const float* x, int64_t ldx, float* y, int64_t ldy) {
  float acc[NT][16] = {};
  for (int64_t g = 0; g < n / 16; ++g) {
    float wf[16];
    const float s = w.s[g];
    const int8_t* q = w.q + 16 * g;
    for (int k = 0; k < 16; ++k) wf[k] = s * static_cast<float>(q[k]);
    if constexpr (kMin) {
      const float m = w.m[g];
      for (int k = 0; k < 16; ++k) wf[k] -= m;
    }
    for (int t = 0; t < NT; ++t) {
      const float* xt = x + t * ldx + 16 * g;
      for (int k = 0; k < 16; ++k) acc[t][k] += wf[k] * xt[k];
    }
  }
  for (int t = 0; t < NT; ++t) {
    float* a = acc[t];
    for (int width = 8; width >= 1; width /= 2)
      for (int k = 0; k < width; ++k) a[k] += a[k + width];
    y[t * ldy] = a[0];
  }
}

template <bool kMin>
void dot_any(const G16Row& w, int64_t n, const float* x, int64_t ldx, int n_tok, float* y,
             int64_t ldy) {
  switch (n_tok) {
    case 1:
      return dot_nt<1, kMin>(w, n, x, ldx, y, ldy);
    case 2:
      return dot_nt<2, kMin>(w, n, x, ldx, y, ldy);
    case 3:
      return dot_nt<3, kMin>(w, n, x, ldx, y, ldy);
    case 4:
      return dot_nt<4, kMin>(w, n, x, ldx, y, ldy);
    case 5:
      return dot_nt<5, kMin>(w, n, x, ldx, y, ldy);
    case 6:
      return dot_nt<6, kMin>(w, n, x, ldx, y, ldy);
    case 7:
      return dot_nt<7, kMin>(w, n, x, ldx, y, ldy);
    default:
      return dot_nt<8, kMin>(w, n, x, ldx, y, ldy);
  }
}

}  // namespace

void dot_g16_f32_scalar(const G16Row& w, int64_t n, const float* x, int64_t ldx, int n_tok,
                        float* y, int64_t ldy, const RowPrefetch& pf) {
  assert(n % 32 == 0 && n_tok >= 1 && n_tok <= kDotMaxTokens);
  (void)pf;
  if (w.m) return dot_any<true>(w, n, x, ldx, n_tok, y, ldy);
  return dot_any<false>(w, n, x, ldx, n_tok, y, ldy);
}

}  // namespace ls
