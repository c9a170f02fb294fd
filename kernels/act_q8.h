// 8-bit activations for int8 dot products against quantized weights (the
// CPU tier's VNNI kernels and the CUDA decode GEMV's dp4a kernels).
//
// Why: at batch 1 a quantized matmul is meant to be bound by the weight
// read, but with f32 activations every weight must be turned into a float
// and multiplied on its own; with int8 activations four (dp4a) or sixty-four
// (VNNI) weight-activation products take one instruction. The price is the
// rounding of x, stated and tested against the f32 reference
// (kernels/ref/act_q8.h).
//
// The format, the same on the host and the device so that both backends
// quantize an activation row to the same bits:
//   x is split into blocks of 32 values; per block
//     d = max_i |x_i| / 127            (f32, an IEEE division)
//     q_i = round_half_even(x_i * id)  with id = d != 0 ? 1 / d : 0 (IEEE)
//   so q_i is in -127..127, x_i ≈ d * q_i.
// Weights' min terms (Q4_K, Q5_K: w = s*q - m) need sum_i x_i per block:
// kernels use d * sum_i q_i (exact in int) so that the result is a function
// of the quantized x only.
// defines: kActQ8Block, act_q8_scale(), act_q8_inv(), act_q8_round()
#pragma once

#include <stdint.h>

#if defined(__CUDACC__)
#define LS_ACT_HD __host__ __device__
#else
#define LS_ACT_HD
#include <cmath>
#endif

namespace ls {

inline constexpr int kActQ8Block = 32;

// The block's scale from its largest magnitude.
LS_ACT_HD inline float act_q8_scale(float amax) {
  return amax / 127.0f;
}
LS_ACT_HD inline float act_q8_inv(float d) {
  return d != 0.0f ? 1.0f / d : 0.0f;
}
// One value: x * id rounded to the nearest integer, ties to even.
LS_ACT_HD inline int8_t act_q8_round(float x, float id) {
#if defined(__CUDA_ARCH__)
  return static_cast<int8_t>(__float2int_rn(x * id));
#else
  return static_cast<int8_t>(std::nearbyint(x * id));  // default rounding mode: ties to even
#endif
}

}  // namespace ls
