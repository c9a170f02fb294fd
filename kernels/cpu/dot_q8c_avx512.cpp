// The chunk-form dot (kernels/cpu/dot_q8c.h) with AVX-512 BW + VNNI: the
// body of kernels/cpu/dot_q8c_body.h over 512-bit registers, 64 values each
// (4 per chunk), vpmaddubsw then vpdpwssd (VNNI's madd + add in one) per
// register and token. Only the primitives below differ from the AVX2
// variant (dot_q8c_avx2.cpp), each the same integer operation on twice the
// lanes (vpshufb, vpmaddubsw and vpmaddwd work within 128-bit lanes or
// lane by lane, so a zmm is two ymm side by side): join puts two ymm side
// by side, bcast128 fills four 128-bit lanes instead of two, fold adds a
// zmm's halves (the total of its int32 lanes is kept), vpdpwssd is vpmaddwd
// + vpaddd (no saturation: vpdpwssds is the saturating one). The block is
// decoded straight into zmm (Q8cVecAvx512::decode, below: a 64-value run
// from loads of its own bytes and a shift per 64-bit lane, where the body's
// AVX2 decode makes 32 values a ymm and joins them): on the dev VM's Zen 4,
// one token from L2, Q5_K and Q6_K 1.15-1.2x, Q4_K 1.0-1.08x. The float
// step is the body's AVX2 code.
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
  // The block straight into zmm (defined below, after the body).
  static constexpr bool kOwnDecode = true;
  template <GgmlType T>
  static void decode(const uint8_t* p, I* u, I* s, __m128i& mn, float& d, float& dmin);
};

}  // namespace
}  // namespace ls

#include "kernels/cpu/dot_q8c_body.h"
#include "kernels/cpu/k4_scales_avx512.h"

namespace ls {
namespace {

// A block's 64-value runs in natural order, each from loads of its own
// bytes, no lane crossing:
//   Q4_K / Q5_K: run c is the low nibbles of qs[32c ..] then their high
//     nibbles: the 32 bytes in both halves of a zmm (one broadcast load),
//     shifted right by 0 in the low half and 4 in the high one (a shift per
//     64-bit lane), masked to 4 bits; Q5_K adds 16 where bit 2c (low half)
//     or 2c + 1 (high half) of qh[l] is set.
//   Q6_K: runs 2h and 2h + 1 are the low and the high nibbles of
//     ql[64h .. 64h + 63]; their two top bits are bits 0-1 and 2-3 (run
//     2h), 4-5 and 6-7 (run 2h + 1) of qh[32h + l], broadcast to both
//     halves and moved to bits 4-5 by a shift per 64-bit lane (bits pulled
//     in from a neighbouring byte are masked off).
// The scales as words, spread by the body's vpshufb patterns.
// Inlined (as the body's own decode is), so u and s stay in registers.
template <GgmlType T>
LS_Q8C_TARGET inline __attribute__((always_inline)) void Q8cVecAvx512::decode(const uint8_t* p,
                                                                              I* u, I* s,
                                                                              __m128i& mn, float& d,
                                                                              float& dmin) {
  const __m512i m15 = _mm512_set1_epi8(0x0F);
  if constexpr (T == GgmlType::Q6_K) {
    const BlockQ6_K* b = reinterpret_cast<const BlockQ6_K*>(p);
    const __m512i m48 = _mm512_set1_epi8(0x30), m32 = _mm512_set1_epi8(32);
    const __m512i up_lo = _mm512_set_epi64(2, 2, 2, 2, 4, 4, 4, 4);
    const __m512i down_hi = _mm512_set_epi64(2, 2, 2, 2, 0, 0, 0, 0);
    LS_Q8C_UNROLL
    for (int h = 0; h < 2; ++h) {
      const __m512i l = _mm512_loadu_si512(b->ql + 64 * h);
      const __m512i qh = _mm512_broadcast_i64x4(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh + 32 * h)));
      const __m512i top_lo = _mm512_and_si512(_mm512_sllv_epi64(qh, up_lo), m48);
      const __m512i top_hi = _mm512_and_si512(_mm512_srlv_epi64(qh, down_hi), m48);
      u[2 * h] = _mm512_sub_epi8(_mm512_or_si512(_mm512_and_si512(l, m15), top_lo), m32);
      u[2 * h + 1] = _mm512_sub_epi8(
          _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m15), top_hi), m32);
    }
    const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->scales));
    const __m512i sw0 = _mm512_broadcast_i32x4(_mm_cvtepi8_epi16(sc));
    const __m512i sw1 = _mm512_broadcast_i32x4(_mm_cvtepi8_epi16(_mm_srli_si128(sc, 8)));
    LS_Q8C_UNROLL
    for (int v = 0; v < 4; ++v)
      s[v] = _mm512_shuffle_epi8(v < 2 ? sw0 : sw1, load(kQ8cPatterns<W>.q6[v]));
    mn = _mm_setzero_si128();
    d = _cvtsh_ss(b->d);
    dmin = 0;
  } else {
    static_assert(T == GgmlType::Q4_K || T == GgmlType::Q5_K);
    const uint8_t* qs = reinterpret_cast<const BlockQ4_K*>(p)->qs;
    if constexpr (T == GgmlType::Q5_K) qs = reinterpret_cast<const BlockQ5_K*>(p)->qs;
    const __m512i down = _mm512_set_epi64(4, 4, 4, 4, 0, 0, 0, 0);
    LS_Q8C_UNROLL
    for (int c = 0; c < 4; ++c) {
      const __m512i z =
          _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * c)));
      u[c] = _mm512_and_si512(_mm512_srlv_epi64(z, down), m15);
    }
    if constexpr (T == GgmlType::Q5_K) {
      const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(reinterpret_cast<const BlockQ5_K*>(p)->qh)));
      const __m512i sixteen = _mm512_set1_epi8(16);
      LS_Q8C_UNROLL
      for (int c = 0; c < 4; ++c) {
        const __m512i bit = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_set1_epi8(static_cast<char>(1u << (2 * c)))),
            _mm256_set1_epi8(static_cast<char>(2u << (2 * c))), 1);
        u[c] = _mm512_mask_add_epi8(u[c], _mm512_test_epi8_mask(qh, bit), u[c], sixteen);
      }
    }
    // d, dmin and the packed scales are the first 16 bytes of both block types.
    const __m128i head = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i bytes = k4_scale_min_xmm(head);
    const __m512i sw = _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(bytes));
    LS_Q8C_UNROLL
    for (int v = 0; v < 4; ++v) s[v] = _mm512_shuffle_epi8(sw, load(kQ8cPatterns<W>.k45[v]));
    mn = _mm_cvtepu8_epi16(_mm_srli_si128(bytes, 8));
    const __m128 dd = _mm_cvtph_ps(head);
    d = _mm_cvtss_f32(dd);
    dmin = _mm_cvtss_f32(_mm_movehdup_ps(dd));
  }
}

}  // namespace
}  // namespace ls

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
