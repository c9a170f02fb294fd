// One RoPE rotation of a pair (x[2i], x[2i+1]) at a position, shared by the
// rope kernel (kernels/rope.cu) and the fused rope + KV store of decode
// (kernels/rope_kv.cu), so both give the same bits. Device code only.
// defines: rope_cos_sin(), rope_rotate(), rope_cs_of(), rope_rotate_pair()
#pragma once

#include <cuda_runtime.h>

#include "kernels/rope.cuh"

namespace ls {

// cos and sin of pair i's angle at pos, rounded to float; theta in double
// as the reference (kernels/ref/ops.h).
__device__ __forceinline__ float2 rope_cos_sin(int32_t pos, int32_t i, const RopeCudaParams& p) {
  double theta = pos * static_cast<double>(p.freq_scale) *
                 pow(static_cast<double>(p.freq_base), -2.0 * i / p.n_rot);
  if (p.freq_factors) theta /= p.freq_factors[i];
  double s, c;
  sincos(theta, &s, &c);
  return make_float2(static_cast<float>(c), static_cast<float>(s));
}

// v points at x[2i]; cs = rope_cos_sin of its pair.
__device__ __forceinline__ void rope_rotate(float* v, float2 cs) {
  const float x0 = v[0], x1 = v[1];
  // __fmul_rn/__fadd_rn: no FMA contraction, so the result matches the CPU's rounding.
  v[0] = __fsub_rn(__fmul_rn(x0, cs.x), __fmul_rn(x1, cs.y));
  v[1] = __fadd_rn(__fmul_rn(x0, cs.y), __fmul_rn(x1, cs.x));
}

// The pair's cos and sin: from p.cs (the step's table: entry t, token of
// the batch) when given, else computed; the same bits either way.
__device__ __forceinline__ float2 rope_cs_of(const RopeCudaParams& p, int64_t t, int32_t pos,
                                             int32_t i) {
  return p.cs ? p.cs[t * (p.n_rot / 2) + i] : rope_cos_sin(pos, i, p);
}

__device__ __forceinline__ void rope_rotate_pair(float* v, int32_t pos, int32_t i,
                                                 const RopeCudaParams& p) {
  rope_rotate(v, rope_cos_sin(pos, i, p));
}

}  // namespace ls
