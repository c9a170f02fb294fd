// One RoPE rotation of a pair (x[2i], x[2i+1]) at a position, shared by the
// rope kernel (kernels/rope.cu) and the fused rope + KV store of decode
// (kernels/rope_kv.cu), so both give the same bits. Device code only.
// defines: rope_rotate_pair()
#pragma once

#include <cuda_runtime.h>

#include "kernels/rope.cuh"

namespace ls {

// v points at x[2i]; theta in double as the reference (kernels/ref/ops.h).
__device__ __forceinline__ void rope_rotate_pair(float* v, int32_t pos, int32_t i,
                                                 const RopeCudaParams& p) {
  double theta = pos * static_cast<double>(p.freq_scale) *
                 pow(static_cast<double>(p.freq_base), -2.0 * i / p.n_rot);
  if (p.freq_factors) theta /= p.freq_factors[i];
  double s, c;
  sincos(theta, &s, &c);
  const float cf = static_cast<float>(c), sf = static_cast<float>(s);
  const float x0 = v[0], x1 = v[1];
  // __fmul_rn/__fadd_rn: no FMA contraction, so the result matches the CPU's rounding.
  v[0] = __fsub_rn(__fmul_rn(x0, cf), __fmul_rn(x1, sf));
  v[1] = __fadd_rn(__fmul_rn(x0, sf), __fmul_rn(x1, cf));
}

}  // namespace ls
