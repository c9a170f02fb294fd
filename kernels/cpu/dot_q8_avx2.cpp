// Int8-activation dot with AVX2 (kernels/cpu/dot_q8.h), the lane form of
// kernels/cpu/q8_lanes.h: one 32-block per ymm, maddubs (u8 x s8 -> pairs
// summed in int16) then madd by ones (-> 8 int32 lanes of 4 products). No
// int16 overflow: the unsigned operand is at most 63 (Q6_K) or 128 (Q8_0 as
// |w|, with x's sign flipped where w < 0), so a pair is at most 2 * 128 * 127
// = 32512. Per chunk of 256 values the scales and mins are decoded once and
// the 8 blocks' unsigned weights once, then per token:
//   p_k  = madd(maddubs(w_k, x_k), 1)        k = 0..7, exact
//   I    = vphaddd tree of p_0..p_7           lane j: block j's sum (Q6_K: two
//                                             vectors, its lo and hi groups)
//   acc  = fma(s * d_x, float(I), acc)        8 lanes, one per block
//   acc  = fma(-m, ds, acc)                   (min or offset; none for Q8_0)
// and at the end the horizontal sum, whose tree is q8_lanes_sum's. From 2
// tokens on (4 for Q6_K and Q8_0; dot_q8_interleaved), the interleaved form: the 8 blocks' ymm
// are transposed once a chunk, by 4-byte groups (transpose8), into
// ActQ8View::qil's layout, where ymm v holds group v (values 4v..4v+3) of
// every block; then per token
//   I = madd(sum over v of maddubs(w_v, x_v), 1)    lane j: block j's sum
// the int16 sums taken over as many slices as cannot overflow (kSlices16),
// so the vphaddd tree (6 hadds, 3 uops each on Intel) is gone and the same
// exact I gives the same bits.
// The body is kernels/cpu/dot_q8_avx2_body.h; with AVX-VNNI (and unless
// LS_AVX_VNNI=0) dot_q8_avx2 runs its vpdpbusd build, dot_q8_avx2_vnni.cpp:
// the same exact int32 sums, so the same bits.
// defines: dot_q8_avx2, dot_q8_avx2_plain, dot_q8_avx_vnni (kernels/cpu/dot_q8.h)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "kernels/cpu/dot_q8.h"

#if defined(__x86_64__) || defined(__i386__)

#define LS_AVX2 __attribute__((target("avx2,fma,f16c")))
#define LS_DOT_AVX_VNNI 0
#include "kernels/cpu/dot_q8_avx2_body.h"
#include "kernels/cpu/gemm_q8.h"
#include "runtime/env.h"

namespace ls {

bool dot_q8_avx_vnni() {
  static const bool on = env_int("LS_AVX_VNNI", 1, 0) != 0 && cpu_has_avx_vnni();
  return on;
}

void dot_q8_avx2(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                 float* y, int64_t ldy, const RowPrefetch& pf) {
  if (dot_q8_avx_vnni()) return dot_q8_avx2_vnni(t, row, x, t0, n_tok, y, ldy, pf);
  return dot_q8_avx2_plain(t, row, x, t0, n_tok, y, ldy, pf);
}

void dot_q8_avx2_plain(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                       float* y, int64_t ldy, const RowPrefetch& pf) {
  dot_tokens(t, row, x, t0, n_tok, y, ldy, pf);
}

}  // namespace ls

#else  // not x86: never called (dot_q8_fn does not pick it), but must link.

namespace ls {
void dot_q8_avx2(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                 float* y, int64_t ldy, const RowPrefetch& pf) {
  dot_q8_scalar(t, row, x, t0, n_tok, y, ldy, pf);
}
void dot_q8_avx2_plain(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                       float* y, int64_t ldy, const RowPrefetch& pf) {
  dot_q8_scalar(t, row, x, t0, n_tok, y, ldy, pf);
}
bool dot_q8_avx_vnni() {
  return false;
}
}  // namespace ls

#endif
