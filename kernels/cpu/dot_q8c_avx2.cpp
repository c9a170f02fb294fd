// The chunk-form dot (kernels/cpu/dot_q8c.h) with AVX2: the body of
// kernels/cpu/dot_q8c_body.h over 256-bit registers, 32 values each (8 per
// chunk), maddubs then madd + add per register and token. F16C converts
// the block's d and dmin; no FMA instruction is used (contraction is off:
// the float step must round as dot_q8c_scalar's).
// defines: dot_q8c_avx2 (kernels/cpu/dot_q8c.h)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "kernels/cpu/dot_q8c.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define LS_Q8C_TARGET __attribute__((target("avx2,fma,f16c")))

namespace ls {
namespace {

// The policy of dot_q8c_body.h: one ymm, the reference for the AVX-512 one.
struct Q8cVecAvx2 {
  using I = __m256i;
  static constexpr int W = 32;
  LS_Q8C_TARGET static I join(const __m256i* parts) { return parts[0]; }
  LS_Q8C_TARGET static I bcast128(__m128i v) { return _mm256_broadcastsi128_si256(v); }
  LS_Q8C_TARGET static I zero() { return _mm256_setzero_si256(); }
  LS_Q8C_TARGET static I load(const int8_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
  LS_Q8C_TARGET static I xor_(I a, I b) { return _mm256_xor_si256(a, b); }
  LS_Q8C_TARGET static I sub32(I a, I b) { return _mm256_sub_epi32(a, b); }
  LS_Q8C_TARGET static I set1_8(char c) { return _mm256_set1_epi8(c); }
  LS_Q8C_TARGET static I shuffle8(I a, I idx) { return _mm256_shuffle_epi8(a, idx); }
  LS_Q8C_TARGET static I maddubs(I u8, I s8) { return _mm256_maddubs_epi16(u8, s8); }
  LS_Q8C_TARGET static I madd_acc(I acc, I a, I b) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
  }
  LS_Q8C_TARGET static __m256i fold(I v) { return v; }
  static constexpr bool kOwnDecode = false;  // the body's AVX2 decode
};

}  // namespace
}  // namespace ls

#include "kernels/cpu/dot_q8c_body.h"

namespace ls {
void dot_q8c_avx2(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                  float* y, int64_t ldy, const RowPrefetch& pf) {
  dot_q8c_body<Q8cVecAvx2>(t, row, x, t0, n_tok, y, ldy, pf);
}
}  // namespace ls

#else  // not x86: never called (dot_q8c_fn does not pick it), but must link.

namespace ls {
void dot_q8c_avx2(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                  float* y, int64_t ldy, const RowPrefetch& pf) {
  dot_q8c_scalar(t, row, x, t0, n_tok, y, ldy, pf);
}
}  // namespace ls

#endif
