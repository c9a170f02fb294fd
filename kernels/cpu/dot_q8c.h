// The chunk form's row-by-row dot (kernels/cpu/q8_chunks.h): one K-quant
// weight row (Q4_K, Q5_K, Q6_K) read from its packed GGUF super-blocks
// against up to kDotMaxTokens tokens of chunk-quantized activations (the
// qc, dc, bsc of kernels/cpu/act_q8_cpu.h), computing the chunk form
// operation for operation, so every variant gives the portable one's bits.
// Same signature as the lane form's dot (DotQ8Fn, kernels/cpu/dot_q8.h), so
// matmul_cpu_q8_parts runs either.
//
// Variants: portable (plain C++, the reference of the bits), avx2 and
// avx512 (VNNI + BW), chosen by dot_q8c_fn like dot_q8_fn.
// Its error against the exact product of the dequantized weights and the
// chunk-dequantized activations (dx_c * q_i): per chunk four or six
// roundings, then a chain of 2 * n / 256 additions, so for each output
//     |y - y_exact| <= (2 * n / 256 + 6) * 2^-24 * T,
//     T = sum_c |dx_c| * (|d| * sum_i |sc(i) u'_i q_i| + |dmin| * sum_j |mn_j bsum_j|)
// (u' = u, or u - 32 for Q6_K); test_cpu_q8_chunks.cpp checks it.
// defines: dot_q8c_scalar(), dot_q8c_avx2(), dot_q8c_avx512(), dot_q8c_fn(), dot_q8c_name(),
//          Q8cChunkTerms, q8c_chunk_terms()
#pragma once

#include <cstdint>

#include "io/ggml_type.h"
#include "kernels/cpu/act_q8_cpu.h"
#include "kernels/cpu/dot.h"
#include "kernels/cpu/dot_q8.h"
#include "kernels/cpu/isa.h"

namespace ls {

// x.qc etc. must be set (ActQ8Buffer::set_chunks), x.n % 256 == 0, t one of
// Q4_K, Q5_K, Q6_K; otherwise as DotQ8Fn.
void dot_q8c_scalar(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                    float* y, int64_t ldy, const RowPrefetch& pf);
void dot_q8c_avx2(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                  float* y, int64_t ldy, const RowPrefetch& pf);
void dot_q8c_avx512(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                    float* y, int64_t ldy, const RowPrefetch& pf);
// The variant for isa (Avx512 runs avx512 where the CPU has AVX-512 VNNI and
// BW, else avx2).
DotQ8Fn dot_q8c_fn(CpuIsa isa);
const char* dot_q8c_name(CpuIsa isa);

// One super-block's terms in plain integers, for the portable variants and
// the tests: the quants u (Q6_K: u - 32), the scale of each value's group,
// the mins (0 for Q6_K) and d, dmin as f32.
struct Q8cChunkTerms {
  int8_t u[256];    // Q4_K 0..15, Q5_K 0..31, Q6_K -32..31
  int16_t sc[256];  // the scale of value i's sub-block (Q6_K: signed)
  int16_t mn[8];    // the min of block j (Q4_K, Q5_K), else 0
  float d = 0, dmin = 0;
};
void q8c_chunk_terms(GgmlType t, const uint8_t* block, Q8cChunkTerms& out);

}  // namespace ls
