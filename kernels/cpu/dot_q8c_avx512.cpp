// The chunk-form dot (kernels/cpu/dot_q8c.h) with AVX-512 BW + VNNI: the
// body of kernels/cpu/dot_q8c_body.h over 512-bit registers, 64 values each
// (4 per chunk), vpmaddubsw then vpdpwssd (VNNI's madd + add in one) per
// register and token. Only the primitives below differ from the AVX2
// variant (dot_q8c_avx2.cpp), each the same integer operation on twice the
// lanes (vpshufb, vpmaddubsw and vpmaddwd work within 128-bit lanes or
// lane by lane, so a zmm is two ymm side by side): join puts two ymm side
// by side, bcast128 fills four 128-bit lanes instead of two, fold adds a
// zmm's halves (the total of its int32 lanes is kept), vpdpwssd is vpmaddwd
// + vpaddd (no saturation: vpdpwssds is the saturating one). The unpacking
// of the quants and the float step are the body's AVX2 code.
// No FMA instruction is used (contraction is off: the float step must round
// as dot_q8c_scalar's).
// defines: dot_q8c_avx512 (kernels/cpu/dot_q8c.h)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "kernels/cpu/dot_q8c.h"

#if defined(__x86_64__) || defined(__i386__)
// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized (GCC bug 105593, see
// dot_avx512.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#define LS_Q8C_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,f16c")))

namespace ls {
namespace {

// The policy of dot_q8c_body.h: one zmm = two of Q8cVecAvx2's ymm.
struct Q8cVecAvx512 {
  using I = __m512i;
  static constexpr int W = 64;
  LS_Q8C_TARGET static I join(const __m256i* parts) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(parts[0]), parts[1], 1);
  }
  LS_Q8C_TARGET static I bcast128(__m128i v) { return _mm512_broadcast_i32x4(v); }
  LS_Q8C_TARGET static I zero() { return _mm512_setzero_si512(); }
  LS_Q8C_TARGET static I load(const int8_t* p) { return _mm512_loadu_si512(p); }
  LS_Q8C_TARGET static I xor_(I a, I b) { return _mm512_xor_si512(a, b); }
  LS_Q8C_TARGET static I sub32(I a, I b) { return _mm512_sub_epi32(a, b); }
  LS_Q8C_TARGET static I set1_8(char c) { return _mm512_set1_epi8(c); }
  LS_Q8C_TARGET static I shuffle8(I a, I idx) { return _mm512_shuffle_epi8(a, idx); }
  LS_Q8C_TARGET static I maddubs(I u8, I s8) { return _mm512_maddubs_epi16(u8, s8); }
  LS_Q8C_TARGET static I madd_acc(I acc, I a, I b) { return _mm512_dpwssd_epi32(acc, a, b); }
  LS_Q8C_TARGET static __m256i fold(I v) {
    return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
  }
};

}  // namespace
}  // namespace ls

#include "kernels/cpu/dot_q8c_body.h"

namespace ls {
void dot_q8c_avx512(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                    float* y, int64_t ldy, const RowPrefetch& pf) {
  dot_q8c_body<Q8cVecAvx512>(t, row, x, t0, n_tok, y, ldy, pf);
}
}  // namespace ls

#else  // not x86: never called (dot_q8c_fn does not pick it), but must link.

namespace ls {
void dot_q8c_avx512(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                    float* y, int64_t ldy, const RowPrefetch& pf) {
  dot_q8c_scalar(t, row, x, t0, n_tok, y, ldy, pf);
}
}  // namespace ls

#endif
