// Stage 2 of the CPU matmul: one unpacked weight row (g16 form, see
// kernels/cpu/unpack.h) dotted with up to 8 tokens' f32 activations:
//     y[t * ldy] = sum_i (s[i/16] * q[i] - m[i/16]) * x[t * ldx + i],  t < n_tok
// Each weight is rebuilt in f32 exactly as the reference dequantizes it (a
// multiply, then a subtract; contraction off), so every product w·x is the
// reference's: only the order of the additions differs (see matmul_cpu.h
// for the bound). The row is rebuilt once per 16 values and used for all
// n_tok tokens, so the weights cost the same for 1 token as for 8.
//
// Summation order, fixed per variant (so results do not depend on threads):
//   scalar : 16 lanes (i mod 16), each n/16 terms, then a pairwise tree.
//   avx2   : 8 lanes, each n/8 terms (both halves of a group into one
//            accumulator: 8 tokens × 2 accumulators would not fit 16 registers).
//   avx512 : 2 × 16 lanes (even and odd groups: two independent FMA chains
//            hide the 4-cycle latency at n_tok = 1), each n/32 terms.
// defines: dot_g16_f32_scalar(), dot_g16_f32_avx2(), dot_g16_f32_avx512(), kDotMaxTokens
#pragma once

#include <cstdint>

#include "kernels/cpu/unpack.h"

namespace ls {

inline constexpr int kDotMaxTokens = 8;

// n: values in the row (a multiple of 32); w.m == nullptr: no min.
// n_tok in 1..kDotMaxTokens.
void dot_g16_f32_scalar(const G16Row& w, int64_t n, const float* x, int64_t ldx, int n_tok,
                        float* y, int64_t ldy);
void dot_g16_f32_avx2(const G16Row& w, int64_t n, const float* x, int64_t ldx, int n_tok,
                      float* y, int64_t ldy);
void dot_g16_f32_avx512(const G16Row& w, int64_t n, const float* x, int64_t ldx, int n_tok,
                        float* y, int64_t ldy);

}  // namespace ls
