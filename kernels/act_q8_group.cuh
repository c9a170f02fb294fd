// One activation block's 8-bit form (kernels/act_q8.h) made inside a warp,
// for the kernels that quantize their own output (quantize_act_q8, rmsnorm
// and swiglu with their q8 outputs), so the three give the same bits.
// Device code only.
// defines: act_q8_group()
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels/act_q8.h"

namespace ls {

// The 8-bit form of one activation block held by 32 / kLanes consecutive
// lanes (kLanes values each): amax and the sum of q by xor shuffles inside
// the aligned group, so the block's bits are quantize_act_q8's. Every lane
// of the warp calls it (the shuffles name the whole warp); `in` says whether
// this lane's values are part of the row.
template <int kLanes>
__device__ __forceinline__ void act_q8_group(const float* v, bool in, int8_t* q, float2* ds,
                                             bool leader) {
  constexpr int kGroup = 32 / kLanes;
  float amax = fabsf(v[0]);  // fmaxf of the values themselves, as the reference's loop
#pragma unroll
  for (int j = 1; j < kLanes; ++j) amax = fmaxf(amax, fabsf(v[j]));
#pragma unroll
  for (int o = kGroup / 2; o > 0; o >>= 1)
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  const float d = act_q8_scale(amax), id = act_q8_inv(d);
  int sum = 0;
  int8_t qi[kLanes];
#pragma unroll
  for (int j = 0; j < kLanes; ++j) {
    qi[j] = act_q8_round(v[j], id);
    sum += qi[j];
  }
#pragma unroll
  for (int o = kGroup / 2; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (!in) return;
  if constexpr (kLanes == 4) {
    char4 c;
    c.x = qi[0], c.y = qi[1], c.z = qi[2], c.w = qi[3];
    *reinterpret_cast<char4*>(q) = c;
  } else {
#pragma unroll
    for (int j = 0; j < kLanes; ++j) q[j] = qi[j];
  }
  if (leader) *ds = make_float2(d, static_cast<float>(sum));
}

}  // namespace ls
