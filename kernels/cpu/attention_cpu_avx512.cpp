// One attention block (kernels/cpu/attention_cpu_block.h) with AVX-512F: 16
// lanes, f16 keys and values converted by _mm512_cvtph_ps as they are
// loaded, up to 16 value accumulators (of 32 registers), exp as a
// polynomial (below).
// defines: attention_block_avx512 (kernels/cpu/attention_cpu_block.h)
#include "kernels/cpu/attention_cpu_block.h"

#if defined(__x86_64__) || defined(__i386__)
// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized (see dot_avx512.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "kernels/cpu/attention_cpu_exp.h"

#define LS_ATTN_TARGET __attribute__((target("avx512f,avx2,fma,f16c")))

namespace ls {
namespace {

struct VecAvx512 {
  using F = __m512;
  static constexpr int W = 16;
  static constexpr int kAcc = 16;
  static constexpr int kTiledNg = 8;
  static constexpr int kTiledAcc = 16;
  LS_ATTN_TARGET static F zero() { return _mm512_setzero_ps(); }
  LS_ATTN_TARGET static F set1(float x) { return _mm512_set1_ps(x); }
  LS_ATTN_TARGET static F load(const float* p) { return _mm512_loadu_ps(p); }
  LS_ATTN_TARGET static F load(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  LS_ATTN_TARGET static void store(float* p, F x) { _mm512_storeu_ps(p, x); }
  LS_ATTN_TARGET static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  LS_ATTN_TARGET static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  LS_ATTN_TARGET static F add(F a, F b) { return _mm512_add_ps(a, b); }
  LS_ATTN_TARGET static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  LS_ATTN_TARGET static F max(F a, F b) { return _mm512_max_ps(a, b); }
  LS_ATTN_TARGET static float hsum(F x) {
    const __m256 h =
        _mm256_add_ps(_mm512_castps512_ps256(x),
                      _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
    __m128 a = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    a = _mm_add_ps(a, _mm_movehl_ps(a, a));
    a = _mm_add_ss(a, _mm_movehdup_ps(a));
    return _mm_cvtss_f32(a);
  }
  // out[i] = hsum(v[i]) · scale for the 16 vectors v[0..15], by a transposed
  // tree: within each 128-bit quarter, unpacks pair up (then quad up) four
  // vectors' partial sums side by side; two rounds of quarter shuffles then
  // add the quarters, leaving vector i's total in lane i.
  LS_ATTN_TARGET static void hsums(const F* v, float scale, float* out) {
    __m512 w[4];
    for (int i = 0; i < 4; ++i) {
      const F* x = v + 4 * i;
      const __m512d u0 = _mm512_castps_pd(
          _mm512_add_ps(_mm512_unpacklo_ps(x[0], x[1]), _mm512_unpackhi_ps(x[0], x[1])));
      const __m512d u1 = _mm512_castps_pd(
          _mm512_add_ps(_mm512_unpacklo_ps(x[2], x[3]), _mm512_unpackhi_ps(x[2], x[3])));
      w[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(u0, u1)),
                           _mm512_castpd_ps(_mm512_unpackhi_pd(u0, u1)));
    }
    const __m512 z0 = _mm512_add_ps(_mm512_shuffle_f32x4(w[0], w[1], 0x88),
                                    _mm512_shuffle_f32x4(w[0], w[1], 0xDD));
    const __m512 z1 = _mm512_add_ps(_mm512_shuffle_f32x4(w[2], w[3], 0x88),
                                    _mm512_shuffle_f32x4(w[2], w[3], 0xDD));
    const __m512 r =
        _mm512_add_ps(_mm512_shuffle_f32x4(z0, z1, 0x88), _mm512_shuffle_f32x4(z0, z1, 0xDD));
    _mm512_storeu_ps(out, _mm512_mul_ps(r, _mm512_set1_ps(scale)));
  }
  LS_ATTN_TARGET static float hmax(F x) {
    const __m256 h =
        _mm256_max_ps(_mm512_castps512_ps256(x),
                      _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
    __m128 a = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    a = _mm_max_ps(a, _mm_movehl_ps(a, a));
    a = _mm_max_ss(a, _mm_movehdup_ps(a));
    return _mm_cvtss_f32(a);
  }
  // attention_cpu_exp.h's method: n = round(x·log2 e), r = x - n·ln 2 (two
  // steps, Cody-Waite), exp(r) by its degree-7 Taylor polynomial, times 2^n
  // built in the exponent bits; below kExpMin the result is 0 (exp(-inf) too).
  LS_ATTN_TARGET static F exp(F x) {
    const __mmask16 live = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kExpMin), _CMP_GE_OQ);
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(kExpMin)), _mm512_set1_ps(kExpMax));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
    __m512 p = _mm512_set1_ps(kExpPoly[7]);
    for (int i = 6; i >= 0; --i) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpPoly[i]));
    const __m512i e =
        _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_maskz_mov_ps(live, _mm512_mul_ps(p, _mm512_castsi512_ps(e)));
  }
  LS_ATTN_TARGET static void prefetch_l1(const char* p) { _mm_prefetch(p, _MM_HINT_T0); }
  LS_ATTN_TARGET static void prefetch_l2(const char* p) { _mm_prefetch(p, _MM_HINT_T1); }
};

}  // namespace
}  // namespace ls

#include "kernels/cpu/attention_cpu_body.h"

namespace ls {
void attention_block_avx512(const AttnBlockArgs& a) {
  attn_block<VecAvx512>(a);
}
}  // namespace ls

#else  // not x86: never called (cpu_isa_supported says no), but must link.

namespace ls {
void attention_block_avx512(const AttnBlockArgs& a) {
  attention_block_portable(a);
}
}  // namespace ls

#endif
