// The int8-activation dot products of the CPU tier: one quantized weight row,
// read straight from its packed GGUF blocks (no unpacked copy in memory),
// against up to 8 tokens of 8-bit activations (kernels/cpu/act_q8_cpu.h):
//     y[t * ldy] = sum_b d_x(t,b) * sum_{i in b} w_i * q_x(t,i)
// the function matmul_act_q8_ref (kernels/ref/act_q8.h) computes, with w_i
// the weight as the reference dequantizes it.
//
// The arithmetic: every variant, at every width, and the tiled GEMM
// (kernels/cpu/gemm_q8.h) compute the "lane form" of kernels/cpu/q8_lanes.h
// operation for operation, so an output's bits depend on neither the ISA,
// the number of tokens computed with it, the tiling nor the threads: per
// chunk of 256 values, block j's exact integer sum I_j of u * q_x lands in
// lane j of an 8-float accumulator as  a_j += (s_j * d_x) * float(I_j), then
// a_j -= m_j * ds_j, and the 8 lanes are summed by a fixed tree. The weights
// enter the integer sums unsigned where that is what vpdpbusd / maddubs take
// (u = nibble, 5 or 6 bits: Q4_0's offset 8 and Q6_K's 32 come back as m =
// offset * s), Q8_0 signed (AVX2 multiplies |w| by x with w's sign).
//
// Variants (kernels/cpu/isa.h):
//   portable     : plain C++ over the reference unpacker's quants.
//   avx2         : 32 values per ymm, maddubs + madd (no overflow: at most
//                  2 * 63 * 127 per 16-bit pair; Q8_0 as |w| * sign(x, w)),
//                  the 8 blocks' lanes summed by a vphaddd tree.
//   avx512 vnni  : 64 values per zmm, vpdpbusd, the lanes summed by
//                  permutes; a CPU with AVX-512F but no VNNI (BW, VL) runs
//                  the avx2 variant (dot_q8_fn says which).
//
// Error against matmul_act_q8_ref: the integer parts are exact; the float
// multiplies and the additions round, a bounded number of times per term
// (chains of at most n/128 + 3 additions), so for each output
//     |y - y_ref| <= (n/16 + 16) * 2^-22 * T,
//     T = sum_b |d_x(b)| * sum_{i in b} |q_x(i)| * (R * |s_g| + |m_g|)
// with R a bound on the integer multiplier of s_g (16 for Q4_0 and Q4_K, 32
// for Q5_K, 64 for Q6_K, 256 for Q8_0).
// tests/unit/kernels/test_cpu_matmul_q8.cpp checks it and prints the largest
// ratio seen; test_cpu_gemm_q8.cpp checks the bits across variants and widths.
// defines: DotQ8Fn, dot_q8_scalar(), dot_q8_avx2(), dot_q8_avx2_plain(), dot_q8_avx2_vnni(),
//          dot_q8_avx_vnni(), dot_q8_by_tokens(), dot_q8_avx512vnni(), dot_q8_fn(),
//          dot_q8_bound_r(), dot_q8_interleaved(), dot_q8_pairs(), dot_q8_lanes_chunk(),
//          dot_q8_lanes_tail()
#pragma once

#include <cstdint>
#include <type_traits>

#include "io/ggml_type.h"
#include "kernels/cpu/act_q8_cpu.h"
#include "kernels/cpu/dot.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/unpack.h"

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
// dot_q8_avx2 is one of these two: the AVX-VNNI build where
// dot_q8_avx_vnni() (the CPU has AVX-VNNI, and LS_AVX_VNNI is not 0), else
// the plain one. Same bits.
void dot_q8_avx2_plain(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                       float* y, int64_t ldy, const RowPrefetch& pf);
void dot_q8_avx2_vnni(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                      float* y, int64_t ldy, const RowPrefetch& pf);
bool dot_q8_avx_vnni();

// f(std::integral_constant<int, n_tok>{}) for n_tok in 1..kDotMaxTokens: the
// SIMD dots' dispatch to their kernel for a token count fixed at compile time.
template <class F>
inline void dot_q8_by_tokens(int n_tok, F&& f) {
  static_assert(kDotMaxTokens == 8, "one case a token count");
  switch (n_tok) {
    case 1:
      return f(std::integral_constant<int, 1>{});
    case 2:
      return f(std::integral_constant<int, 2>{});
    case 3:
      return f(std::integral_constant<int, 3>{});
    case 4:
      return f(std::integral_constant<int, 4>{});
    case 5:
      return f(std::integral_constant<int, 5>{});
    case 6:
      return f(std::integral_constant<int, 6>{});
    case 7:
      return f(std::integral_constant<int, 7>{});
    default:
      return f(std::integral_constant<int, 8>{});
  }
}
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

// Whether the SIMD variants take their interleaved form from 2 tokens on
// (the chunk's weights transposed once into ActQ8View::qil's layout, so a
// token's block sums need no horizontal tree; the same bits): on unless
// LS_DOT_IL=0 is in the environment (A/B timing of whole runs). Read once.
bool dot_q8_interleaved();
// Whether the AVX-512 variant's interleaved form runs two tokens' float
// steps in one zmm (token pairs; the same bits): on unless LS_DOT_PAIRS=0
// (A/B timing). Read once.
bool dot_q8_pairs();

// The lane form's terms of one chunk of 256 values (c: its index in the row;
// nv: the values it has, 256 except at the end of a Q4_0 / Q8_0 row that is
// not a multiple of 256) for token tok, from the chunk unpacked by the
// reference unpacker (kernels/cpu/unpack.h, offset 0 = value 256c), added to
// acc[0 .. nv/32). The portable variants are made of it; the SIMD ones call it
// for a partial last chunk.
void dot_q8_lanes_chunk(GgmlType t, const G16Row& u, int nv, const ActQ8View& x, int64_t tok,
                        int64_t c, float* acc);
// A partial last chunk of a Q4_0 / Q8_0 row (the SIMD variants' tail): the
// chunk at the end of row (n values) unpacked and added to acc, which then
// gives the output (q8_lanes_sum). Nothing to add when n % 256 == 0.
float dot_q8_lanes_tail(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t tok,
                        float* acc);

}  // namespace ls
