// The "chunk form": a second arithmetic for the CPU tier's int8-activation
// matmuls, for the K-quants (Q4_K, Q5_K, Q6_K) only, made for the AMX tile
// unit. The lane form (kernels/cpu/q8_lanes.h) has a float step per block of
// 32 values, because its activation scale is per block: on AMX that step
// (7 vector operations per block and 16 row-token pairs) costs as much as
// the tile multiplies and the two barely overlap, so a CPU layer of the 70B
// at 32 tokens reads at 0.15-0.20 of the host bandwidth
// (bench/results/2026-12-03-h200-s21.md). Here the activation scale is per
// chunk of 256 values (a K-quant super-block, as llama.cpp's Q8_K), the
// weights' sub-block scales enter the integer sums, and the float step is
// per chunk: 8x fewer float operations, and the tile unit can sum a whole
// chunk (K = 64 per multiply instead of 32) into one int32 tile.
//
// Activations, per token and chunk c of 256 values (kernels/act_q8.h's
// formulas over 256 values instead of 32):
//     dx_c = amax_c / 127,  q_i = round_half_even(x_i * (1 / dx_c))
//     bsum_j = sum of q over 32-block j of the chunk (exact, int16)
// Weights, per super-block (= chunk): d, dmin (f16, exact in f32), the 6-bit
// sub-block scales sc_j and mins mn_j (Q4_K, Q5_K, blocks of 32) or the
// signed 8-bit scales sc_g (Q6_K, groups of 16), the quants u_i.
// Exact integer terms of chunk c (any order, any SIMD):
//     Q4_K, Q5_K:  A = sum_i sc(i) * u_i * q_i      B = sum_j mn_j * bsum_j
//     Q6_K:        A = sum_i sc(i) * (u_i - 32) * q_i,   no B
// (|A| < 2^28 for every type: 256 * 63 * 31 * 127, 256 * 128 * 32 * 127.)
// The float step, per chunk in order, a starting at +0, no fused multiply-add:
//     a = a + float(A) * (d * dx_c)           three roundings (*, *, +)
//     a = a - float(B) * (dmin * dx_c)        Q4_K, Q5_K: three more
// and the output is a. float(A) rounds to nearest (A may pass 2^24), as
// every ISA's int-to-float conversion does.
//
// Which form runs is one process-wide choice (cpu_q8_chunks_active), so that
// every width and path of a run computes the same bits: a token's output is
// the same alone or in a batch, within each form. The chunk form's paths
// are the row-by-row dot (kernels/cpu/dot_q8c.h) and the AMX GEMM
// (gemm_q8c_*, kernels/cpu/gemm_q8_amx.h); tests/unit/kernels/
// test_cpu_q8_chunks.cpp checks their bits against the portable dot and
// the portable dot against the exact value.
// defines: kQ8cChunk, q8c_type(), cpu_q8_chunks_active(), cpu_q8_chunks_override()
#pragma once

#include <cstdint>
#include <optional>

#include "io/ggml_type.h"

namespace ls {

inline constexpr int kQ8cChunk = 256;

// Whether the chunk form covers type t (the other types keep the lane form
// in every mode).
inline bool q8c_type(GgmlType t) {
  return t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q6_K;
}

// The process's choice: the override if set, else LS_CPU_Q8_FORM=chunks from
// the environment, else the lane form (the default: the chunk form's
// one-token dot is not yet as fast as the lane form's, see
// dot_q8c_scalar.cpp).
bool cpu_q8_chunks_active();
// Force the form (nullopt: back to the environment / default). Tests and
// benches use it; the engine reads cpu_q8_chunks_active once per call.
void cpu_q8_chunks_override(std::optional<bool> on);

}  // namespace ls
