// Stage 2 of the CPU matmul: one unpacked weight row (g16 form, see
// kernels/cpu/unpack.h) dotted with up to 8 tokens' f32 activations:
//     y[t * ldy] = sum_i (s[i/16] * q[i] - m[i/16]) * x[t * ldx + i],  t < n_tok
// Each weight is rebuilt in f32 exactly as the reference dequantizes it (a
// multiply, then a subtract; contraction off), so every product w·x is the
// reference's: only the order of the additions differs (see matmul_cpu.h
// for the bound). The row is rebuilt once per 16 values and used for all
// n_tok tokens, so the weights cost the same for 1 token as for 8.
//
// Summation order, fixed per variant (so results depend on neither the
// threads nor how many tokens share a pass):
//   scalar : 16 lanes (i mod 16), each n/16 terms, then a pairwise tree.
//   avx2   : 2 × 8 lanes (the two halves of each group), each n/16 terms;
//            5..8 tokens as two passes (8 tokens × 2 accumulators would not
//            fit in 16 registers), so the order is the same at every n_tok.
//   avx512 : 2 × 16 lanes (even and odd groups: two independent FMA chains
//            hide the 4-cycle latency at n_tok = 1), each n/32 terms.
// defines: dot_g16_f32_scalar(), dot_g16_f32_avx2(), dot_g16_f32_avx512(), kDotMaxTokens
#pragma once

#include <cstdint>

#include "kernels/cpu/unpack.h"

namespace ls {

inline constexpr int kDotMaxTokens = 8;

// The next weight row, fetched into cache while this one is dotted: without
// it a thread alternates between waiting for memory (unpacking) and
// computing (the dot), and pays for both. The dot spreads the prefetches
// evenly over its loop (a byte cursor advancing bytes·32/n per 32 values),
// so loads and arithmetic overlap. bytes = 0: nothing to fetch.
// None: p null and bytes 0 (the default).
struct RowPrefetch {
  const uint8_t* p = nullptr;
  int64_t bytes = 0;
  // Cache level it is fetched into (CpuMatmulTuning::prefetch_hint; the
  // AVX-512 q8 kernel honours it, the others fetch into L1).
  int hint = 0;
  // Cursor step per 32 values, in 1/65536 bytes (fixed point: no division
  // in the loop).
  int64_t step16(int64_t n) const { return n > 0 ? (bytes << 16) / n * 32 : 0; }
};

// n: values in the row (a multiple of 32); w.m == nullptr: no min.
// n_tok in 1..kDotMaxTokens. pf: the next row to prefetch (the portable
// variant ignores it).
void dot_g16_f32_scalar(const G16Row& w, int64_t n, const float* x, int64_t ldx, int n_tok,
                        float* y, int64_t ldy, const RowPrefetch& pf);
void dot_g16_f32_avx2(const G16Row& w, int64_t n, const float* x, int64_t ldx, int n_tok, float* y,
                      int64_t ldy, const RowPrefetch& pf);
void dot_g16_f32_avx512(const G16Row& w, int64_t n, const float* x, int64_t ldx, int n_tok,
                        float* y, int64_t ldy, const RowPrefetch& pf);

}  // namespace ls
