// Stage 2 with AVX2 + FMA (kernels/cpu/dot.h). Per group of 16 values: two
// 8-wide halves, each 8 int8 -> int32 -> f32, times the group's scale, minus
// its min, then one FMA per token into that token's accumulator. Templated on
// the token count so the accumulators live in registers.
// defines: dot_g16_f32_avx2 (kernels/cpu/dot.h)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <cassert>

#include "kernels/cpu/dot.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define LS_AVX2 __attribute__((target("avx2,fma")))

namespace ls {
namespace {

// Weights 8k..8k+7 of the row, rebuilt as the reference's floats.
template <bool kMin>
LS_AVX2 inline __m256 weights8(const G16Row& w, int64_t i, __m256 s, __m256 m) {
  const __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(w.q + i));
  __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8)), s);
  if constexpr (kMin) f = _mm256_sub_ps(f, m);
  return f;
}

LS_AVX2 inline float hsum(__m256 v) {
  __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  a = _mm_add_ps(a, _mm_movehl_ps(a, a));
  a = _mm_add_ss(a, _mm_movehdup_ps(a));
  return _mm_cvtss_f32(a);
}

// The two halves of a group go to two accumulators (two FMA chains per token
// hide the FMA latency), for every token count: a token's sum must not
// depend on how many share the call (a batch gives each sequence its bits
// alone). 2 × 8 accumulators would not fit in 16 registers, so more than 4
// tokens run as two calls (dot_any): the row, in L1, is rebuilt twice.
template <int NT, bool kMin>
LS_AVX2 void dot_nt(const G16Row& w, int64_t n, const float* x, int64_t ldx, float* y, int64_t ldy,
                    const RowPrefetch& pf) {
  static_assert(NT <= 4);
  constexpr int kAcc = 2;
  const int64_t step16 = pf.step16(n);
  int64_t pf16 = 0;
  __m256 acc[kAcc][NT];
  for (int a = 0; a < kAcc; ++a)
    for (int t = 0; t < NT; ++t) acc[a][t] = _mm256_setzero_ps();
  __m256 m = _mm256_setzero_ps();
  for (int64_t i = 0, g = 0; i < n; i += 16, ++g) {
    if (i % 32 == 0 && step16) {
      _mm_prefetch(reinterpret_cast<const char*>(pf.p + (pf16 >> 16)), _MM_HINT_T0);
      pf16 += step16;
    }
    const __m256 s = _mm256_broadcast_ss(w.s + g);
    if constexpr (kMin) m = _mm256_broadcast_ss(w.m + g);
    const __m256 w0 = weights8<kMin>(w, i, s, m), w1 = weights8<kMin>(w, i + 8, s, m);
    for (int t = 0; t < NT; ++t) {
      acc[0][t] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + t * ldx + i), acc[0][t]);
      acc[1][t] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + t * ldx + i + 8), acc[1][t]);
    }
  }
  for (int t = 0; t < NT; ++t) y[t * ldy] = hsum(_mm256_add_ps(acc[0][t], acc[1][t]));
}

template <bool kMin>
LS_AVX2 void dot_any(const G16Row& w, int64_t n, const float* x, int64_t ldx, int n_tok, float* y,
                     int64_t ldy, const RowPrefetch& pf) {
  if (n_tok > 4) {  // tokens 0-3, then the rest (the prefetch goes with the first)
    dot_nt<4, kMin>(w, n, x, ldx, y, ldy, pf);
    return dot_any<kMin>(w, n, x + 4 * ldx, ldx, n_tok - 4, y + 4 * ldy, ldy, RowPrefetch{});
  }
  switch (n_tok) {
    case 1:
      return dot_nt<1, kMin>(w, n, x, ldx, y, ldy, pf);
    case 2:
      return dot_nt<2, kMin>(w, n, x, ldx, y, ldy, pf);
    case 3:
      return dot_nt<3, kMin>(w, n, x, ldx, y, ldy, pf);
    default:
      return dot_nt<4, kMin>(w, n, x, ldx, y, ldy, pf);
  }
}

}  // namespace

void dot_g16_f32_avx2(const G16Row& w, int64_t n, const float* x, int64_t ldx, int n_tok, float* y,
                      int64_t ldy, const RowPrefetch& pf) {
  assert(n % 32 == 0 && n_tok >= 1 && n_tok <= kDotMaxTokens);
  if (w.m) return dot_any<true>(w, n, x, ldx, n_tok, y, ldy, pf);
  return dot_any<false>(w, n, x, ldx, n_tok, y, ldy, pf);
}

}  // namespace ls

#else  // not x86: never called (cpu_isa_supported says no), but must link.

namespace ls {
void dot_g16_f32_avx2(const G16Row& w, int64_t n, const float* x, int64_t ldx, int n_tok, float* y,
                      int64_t ldy, const RowPrefetch& pf) {
  dot_g16_f32_scalar(w, n, x, ldx, n_tok, y, ldy, pf);
}
}  // namespace ls

#endif
