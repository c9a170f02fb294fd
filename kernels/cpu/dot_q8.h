// The int8-activation dot products of the CPU tier: one quantized weight row,
// read straight from its packed GGUF blocks (no unpacked copy in memory),
// against up to 8 tokens of 8-bit activations (kernels/cpu/act_q8_cpu.h):
//     y[t * ldy] = sum_b d_x(t,b) * sum_{i in b} w_i * q_x(t,i)
// the function matmul_act_q8_ref (kernels/ref/act_q8.h) computes, with w_i
// the weight as the reference dequantizes it.
//
// How: per group of 16 or 32 values the integer dot sum q_w * q_x is exact
// (int32), and the float work is per group, not per weight:
//     y = sum_g (s_g * d_x) * isum_g  -  sum_g m_g * ds_g
// where s_g is the group's weight scale (d * sc for the K-quants, the
// reference's own f32 product) and m_g * ds_g carries the weights' min (Q4_K,
// Q5_K) or the offset of the unsigned form the SIMD variants multiply:
// vpdpbusd / maddubs take one unsigned and one signed operand, so the weights
// go in as unsigned (Q4_0: nibble, offset 8; Q6_K: 6 bits, offset 32 per 16;
// Q8_0 on AVX-512: q + 128, offset 128; on AVX2 Q8_0 stays signed, sign moved
// onto x) and the offset comes back as offset * s_g * ds_g.
//
// Variants (kernels/cpu/isa.h):
//   portable     : plain C++, one 32-block (or 16-group) at a time.
//   avx2         : 32 values per ymm, maddubs + madd (no overflow: at most
//                  2 * 63 * 127 per 16-bit pair; Q8_0 as |w| * sign(x, w)).
//   avx512 vnni  : 64 values per zmm, vpdpbusd; a CPU with AVX-512F but no
//                  VNNI (BW, VL) runs the avx2 variant (dot_q8_fn says which).
//
// Error against matmul_act_q8_ref: the integer parts are exact; the float
// multiplies and the additions round, a bounded number of times per term
// (chains of at most n/16 additions), so for each output
//     |y - y_ref| <= (n/16 + 16) * 2^-22 * T,
//     T = sum_b |d_x(b)| * sum_{i in b} |q_x(i)| * (R * |s_g| + |m_g|)
// with R the largest integer multiplier of s_g in any variant (16 for Q4_0 and
// Q4_K, 32 for Q5_K, 64 for Q6_K, 256 for Q8_0). tests/unit/kernels/
// test_cpu_matmul_q8.cpp checks it and prints the largest ratio seen.
// defines: DotQ8Fn, dot_q8_scalar(), dot_q8_avx2(), dot_q8_avx512vnni(), dot_q8_fn(),
//          dot_q8_bound_r(), dot_q8_legacy_tail()
#pragma once

#include <cstdint>

#include "io/ggml_type.h"
#include "kernels/cpu/act_q8_cpu.h"
#include "kernels/cpu/dot.h"
#include "kernels/cpu/isa.h"

namespace ls {

// row: one weight row of x.n values of type t; tokens t0 .. t0 + n_tok - 1 of
// x (n_tok in 1..kDotMaxTokens); y[k * ldy] gets token t0 + k's output.
// pf: the next row, fetched into cache over this one (portable ignores it).
using DotQ8Fn = void (*)(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                         float* y, int64_t ldy, const RowPrefetch& pf);

void dot_q8_scalar(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                   float* y, int64_t ldy, const RowPrefetch& pf);
void dot_q8_avx2(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                 float* y, int64_t ldy, const RowPrefetch& pf);
void dot_q8_avx512vnni(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                       float* y, int64_t ldy, const RowPrefetch& pf);

// Whether this CPU runs the 512-bit VNNI variant (AVX-512 F, BW, VL, VNNI).
bool cpu_has_avx512_vnni();
// The kernel for isa: Avx512 runs avx512vnni where the CPU has it, else avx2.
DotQ8Fn dot_q8_fn(CpuIsa isa);
// Name of the kernel dot_q8_fn(isa) picks, for tables.
const char* dot_q8_name(CpuIsa isa);

// R of the bound above, per type.
int dot_q8_bound_r(GgmlType t);

// Q4_0 / Q8_0 blocks [b0, b1) of a row, portable: the SIMD variants work in
// chunks of 8 blocks and hand the rest of a row (n not a multiple of 256)
// here. Returns token t's partial sum.
float dot_q8_legacy_tail(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t tok,
                         int64_t b0, int64_t b1);

}  // namespace ls
