// Stage 2 with AVX-512F (kernels/cpu/dot.h). One zmm per group of 16 values:
// 16 int8 -> int32 -> f32, times the group's scale, minus its min, then one
// FMA per token. Even and odd groups go to separate accumulators: at n_tok = 1
// a single chain would wait 4 cycles per FMA, slower than memory on a wide
// core. Templated on the token count so the (up to 16) accumulators live in
// registers (AVX-512 has 32).
// defines: dot_g16_f32_avx512 (kernels/cpu/dot.h)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <cassert>

#include "kernels/cpu/dot.h"

#if defined(__x86_64__) || defined(__i386__)
// GCC 12's AVX-512 headers initialise their "undefined" registers as
// `__m512 __Y = __Y;`, which -Wmaybe-uninitialized reports at every inlined
// intrinsic once a function has a target attribute (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#define LS_AVX512 __attribute__((target("avx512f,avx2,fma")))

namespace ls {
namespace {

// Weights 16g..16g+15 of the row, rebuilt as the reference's floats.
template <bool kMin>
LS_AVX512 inline __m512 weights16(const G16Row& w, int64_t g) {
  const __m128i q8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.q + 16 * g));
  __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q8)), _mm512_set1_ps(w.s[g]));
  if constexpr (kMin) f = _mm512_sub_ps(f, _mm512_set1_ps(w.m[g]));
  return f;
}

template <int NT, bool kMin>
LS_AVX512 void dot_nt(const G16Row& w, int64_t n, const float* x, int64_t ldx, float* y,
                      int64_t ldy, const RowPrefetch& pf) {
  const int64_t step16 = pf.step16(n);
  int64_t pf16 = 0;
  __m512 acc0[NT], acc1[NT];
  for (int t = 0; t < NT; ++t) acc0[t] = acc1[t] = _mm512_setzero_ps();
  for (int64_t i = 0, g = 0; i < n; i += 32, g += 2) {
    if (step16) {
      _mm_prefetch(reinterpret_cast<const char*>(pf.p + (pf16 >> 16)), _MM_HINT_T0);
      pf16 += step16;
    }
    const __m512 w0 = weights16<kMin>(w, g), w1 = weights16<kMin>(w, g + 1);
    for (int t = 0; t < NT; ++t) {
      acc0[t] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x + t * ldx + i), acc0[t]);
      acc1[t] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x + t * ldx + i + 16), acc1[t]);
    }
  }
  for (int t = 0; t < NT; ++t) y[t * ldy] = _mm512_reduce_add_ps(_mm512_add_ps(acc0[t], acc1[t]));
}

template <bool kMin>
LS_AVX512 void dot_any(const G16Row& w, int64_t n, const float* x, int64_t ldx, int n_tok, float* y,
                       int64_t ldy, const RowPrefetch& pf) {
  switch (n_tok) {
    case 1:
      return dot_nt<1, kMin>(w, n, x, ldx, y, ldy, pf);
    case 2:
      return dot_nt<2, kMin>(w, n, x, ldx, y, ldy, pf);
    case 3:
      return dot_nt<3, kMin>(w, n, x, ldx, y, ldy, pf);
    case 4:
      return dot_nt<4, kMin>(w, n, x, ldx, y, ldy, pf);
    case 5:
      return dot_nt<5, kMin>(w, n, x, ldx, y, ldy, pf);
    case 6:
      return dot_nt<6, kMin>(w, n, x, ldx, y, ldy, pf);
    case 7:
      return dot_nt<7, kMin>(w, n, x, ldx, y, ldy, pf);
    default:
      return dot_nt<8, kMin>(w, n, x, ldx, y, ldy, pf);
  }
}

}  // namespace

void dot_g16_f32_avx512(const G16Row& w, int64_t n, const float* x, int64_t ldx, int n_tok,
                        float* y, int64_t ldy, const RowPrefetch& pf) {
  assert(n % 32 == 0 && n_tok >= 1 && n_tok <= kDotMaxTokens);
  if (w.m) return dot_any<true>(w, n, x, ldx, n_tok, y, ldy, pf);
  return dot_any<false>(w, n, x, ldx, n_tok, y, ldy, pf);
}

}  // namespace ls

#else  // not x86: never called (cpu_isa_supported says no), but must link.

namespace ls {
void dot_g16_f32_avx512(const G16Row& w, int64_t n, const float* x, int64_t ldx, int n_tok,
                        float* y, int64_t ldy, const RowPrefetch& pf) {
  dot_g16_f32_scalar(w, n, x, ldx, n_tok, y, ldy, pf);
}
}  // namespace ls

#endif
