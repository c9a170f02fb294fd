// One attention block (kernels/cpu/attention_cpu_block.h) with AVX2 + FMA +
// F16C: 8 lanes, f16 keys and values converted by _mm256_cvtph_ps as they
// are loaded, up to 8 value accumulators (of 16 registers: 8 heads × 1
// vector, plus the value and the broadcast weight), exp as the polynomial
// of attention_cpu_exp.h.
// defines: attention_block_avx2 (kernels/cpu/attention_cpu_block.h)
#include "kernels/cpu/attention_cpu_block.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include "kernels/cpu/attention_cpu_exp.h"

#define LS_ATTN_TARGET __attribute__((target("avx2,fma,f16c")))

namespace ls {
namespace {

struct VecAvx2 {
  using F = __m256;
  static constexpr int W = 8;
  static constexpr int kAcc = 8;
  // Tiled scores: 4 heads × 3 vectors of positions (12 of 16 registers):
  // with 8 heads × 1, each accumulator's chain had no slack (8 FMAs a dim
  // at 2 a cycle against a latency of 4), and the form ran 5-15 % behind
  // the row form on a Zen; keys are converted once per 4 heads instead.
  static constexpr int kTiledNg = 4;
  static constexpr int kTiledAcc = 12;
  LS_ATTN_TARGET static F zero() { return _mm256_setzero_ps(); }
  LS_ATTN_TARGET static F set1(float x) { return _mm256_set1_ps(x); }
  LS_ATTN_TARGET static F load(const float* p) { return _mm256_loadu_ps(p); }
  LS_ATTN_TARGET static F load(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  LS_ATTN_TARGET static void store(float* p, F x) { _mm256_storeu_ps(p, x); }
  LS_ATTN_TARGET static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  LS_ATTN_TARGET static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  LS_ATTN_TARGET static F add(F a, F b) { return _mm256_add_ps(a, b); }
  LS_ATTN_TARGET static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  LS_ATTN_TARGET static F max(F a, F b) { return _mm256_max_ps(a, b); }
  LS_ATTN_TARGET static float hsum(F x) {
    __m128 a = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    a = _mm_add_ps(a, _mm_movehl_ps(a, a));
    a = _mm_add_ss(a, _mm_movehdup_ps(a));
    return _mm_cvtss_f32(a);
  }
  // out[i] = hsum(v[i]) · scale for the 8 vectors v[0..7]: unpacks pair up
  // (then quad up) four vectors' partial sums within each 128-bit half, and
  // one cross-half add leaves vector i's total in lane i.
  LS_ATTN_TARGET static void hsums(const F* v, float scale, float* out) {
    __m256 w[2];
    for (int i = 0; i < 2; ++i) {
      const F* x = v + 4 * i;
      const __m256d u0 = _mm256_castps_pd(
          _mm256_add_ps(_mm256_unpacklo_ps(x[0], x[1]), _mm256_unpackhi_ps(x[0], x[1])));
      const __m256d u1 = _mm256_castps_pd(
          _mm256_add_ps(_mm256_unpacklo_ps(x[2], x[3]), _mm256_unpackhi_ps(x[2], x[3])));
      w[i] = _mm256_add_ps(_mm256_castpd_ps(_mm256_unpacklo_pd(u0, u1)),
                           _mm256_castpd_ps(_mm256_unpackhi_pd(u0, u1)));
    }
    const __m256 r = _mm256_add_ps(_mm256_permute2f128_ps(w[0], w[1], 0x20),
                                   _mm256_permute2f128_ps(w[0], w[1], 0x31));
    _mm256_storeu_ps(out, _mm256_mul_ps(r, _mm256_set1_ps(scale)));
  }
  LS_ATTN_TARGET static float hmax(F x) {
    __m128 a = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    a = _mm_max_ps(a, _mm_movehl_ps(a, a));
    a = _mm_max_ss(a, _mm_movehdup_ps(a));
    return _mm_cvtss_f32(a);
  }
  // attention_cpu_exp.h's method; below kExpMin the result is 0.
  LS_ATTN_TARGET static F exp(F x) {
    const __m256 dead = _mm256_cmp_ps(x, _mm256_set1_ps(kExpMin), _CMP_LT_OQ);
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(kExpMin)), _mm256_set1_ps(kExpMax));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
    __m256 p = _mm256_set1_ps(kExpPoly[7]);
    for (int i = 6; i >= 0; --i) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpPoly[i]));
    const __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_andnot_ps(dead, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
  }
  LS_ATTN_TARGET static void prefetch_l1(const char* p) { _mm_prefetch(p, _MM_HINT_T0); }
  LS_ATTN_TARGET static void prefetch_l2(const char* p) { _mm_prefetch(p, _MM_HINT_T1); }
};

}  // namespace
}  // namespace ls

#include "kernels/cpu/attention_cpu_body.h"

namespace ls {
void attention_block_avx2(const AttnBlockArgs& a) {
  attn_block<VecAvx2>(a);
}
}  // namespace ls

#else  // not x86: never called (cpu_isa_supported says no), but must link.

namespace ls {
void attention_block_avx2(const AttnBlockArgs& a) {
  attention_block_portable(a);
}
}  // namespace ls

#endif
