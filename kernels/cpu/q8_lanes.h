// The arithmetic of the CPU tier's int8-activation matmuls, the "lane form":
// what every variant (portable, AVX2, AVX-512 VNNI) computes at every width,
// row by row (kernels/cpu/dot_q8.h) or tiled over rows and tokens
// (kernels/cpu/gemm_q8.h), operation for operation. So an output's bits
// depend on neither the ISA, the batch width, the tiling nor the thread
// count: a token computed alone and the same token inside a 512-token prompt
// give the same float (issue 17's batched-equals-alone check relies on it).
//
// A row of n values is cut into chunks of 256 (the last one partial for a
// Q4_0 / Q8_0 row that is not a multiple of 256), a chunk into 8 blocks of 32.
// Block j of every chunk belongs to lane j of an 8-float accumulator a (one
// ymm in the SIMD kernels), which starts at +0. Per chunk, per lane j (block
// b of the row), in this order:
//     I_j = sum_{i in block b} u_i * q_x(i)      exact int32: any order, any SIMD
//     a_j = fma(s_j * d_x(b), float(I_j), a_j)   two f32 roundings (*, fma)
//     a_j = fma(-m_j, ds(b), a_j)                one more (types with m)
// Q6_K has a scale per 16 values, so two groups per lane, lo (values 0-15 of
// the block) then hi:
//     a_j = fma(s_lo * d_x(b), float(I_lo), a_j);   a_j = fma(s_hi * d_x(b), float(I_hi), a_j)
//     a_j = fma(-m_lo, ds16(2b), a_j);              a_j = fma(-m_hi, ds16(2b + 1), a_j)
// and at the end (q8_lanes_sum, the SIMD horizontal sum's own tree)
//     y = ((a_0 + a_4) + (a_2 + a_6)) + ((a_1 + a_5) + (a_3 + a_7)).
// fma is the fused multiply-add, one rounding (std::fma, vfmadd / vfnmadd):
// the portable variant reproduces it on any CPU, and SIMD vectors of any
// width hold whole lanes. Nothing else is fused (the files that compute the
// form build with contraction off). A lane past the end of a partial chunk
// is left as it is.
// Why fused: at 8 tokens the AVX-512 tiles are bound by the vector ports,
// where a block's float step was 6 operations beside 8 vpdpbusd; fused it is
// 4 (llvm-mca's Ice Lake server model: 13-14 % fewer cycles a chunk for the
// direct tile's Q4_K and Q6_K at 8 tokens; Zen 4, one thread from L2: 4-6 %).
//
// u, s and m per type (the weight is s * u - m up to the reference's own
// rounding; d_x, ds, ds16 are kernels/cpu/act_q8_cpu.h's):
//   Q4_0  u = nibble 0..15         s = d          m = 8 * s (exact)
//   Q8_0  u = q -128..127          s = d          no m
//   Q4_K  u = nibble 0..15         s = d * sc     m = dmin * mn  (f32 products)
//   Q5_K  u = 5 bits 0..31         as Q4_K
//   Q6_K  u = 6 bits 0..63         s = d * sc     m = 32 * s (exact), per 16
// Unsigned u is what maddubs and vpdpbusd multiply; Q8_0 stays signed (its
// AVX2 product is |u| times x with u's sign, exact all the same).
//
// Why this form: the float work is per block, not per value, and per block
// it is one lane of a vector op, so a tile of rows x tokens pays three float
// ops per 256 products (kernels/cpu/gemm_q8_avx2.cpp), and the integer sums
// can be formed in whatever order a kernel likes.
// defines: kQ8Lanes, q8_lanes_sum(), q8_lane_add(), q8_lane_sub()
#pragma once

#include <cmath>
#include <cstdint>

namespace ls {

inline constexpr int kQ8Lanes = 8;

// A lane's term, a = fma(sd, float(I), a), with sd = s * d_x already rounded.
inline float q8_lane_add(float a, float sd, int32_t i) {
  return std::fma(sd, static_cast<float>(i), a);
}
// A lane's min or offset term, a = fma(-m, ds, a).
inline float q8_lane_sub(float a, float m, float ds) {
  return std::fma(-m, ds, a);
}

// The fixed final sum of the 8 lanes. Plain float adds: with contraction off
// or on, there is nothing to fuse.
inline float q8_lanes_sum(const float* a) {
  return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}

}  // namespace ls
