// The AVX2 lane-form dot built with AVX-VNNI's 256-bit vpdpbusd
// (kernels/cpu/dot_q8_avx2_body.h; dot_q8_avx2 picks it where the CPU has
// AVX-VNNI). One instruction where maddubs and madd (or, in the interleaved
// form, an int16 add a slice and a madd a group) were; the same exact int32
// sums, so the same bits (tests/unit/kernels/test_cpu_gemm_q8.cpp).
// defines: dot_q8_avx2_vnni (kernels/cpu/dot_q8.h)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "kernels/cpu/dot_q8.h"

#if defined(__x86_64__) || defined(__i386__)

#define LS_AVX2 __attribute__((target("avx2,fma,f16c,avxvnni")))
#define LS_DOT_AVX_VNNI 1
#include "kernels/cpu/dot_q8_avx2_body.h"

namespace ls {

void dot_q8_avx2_vnni(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                      float* y, int64_t ldy, const RowPrefetch& pf) {
  dot_tokens(t, row, x, t0, n_tok, y, ldy, pf);
}

}  // namespace ls

#else  // not x86: never called, but must link.

namespace ls {
void dot_q8_avx2_vnni(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                      float* y, int64_t ldy, const RowPrefetch& pf) {
  dot_q8_scalar(t, row, x, t0, n_tok, y, ldy, pf);
}
}  // namespace ls

#endif
