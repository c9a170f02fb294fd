// Warp and block reductions shared by the op kernels (device code only).
// Block reductions assume blockDim.x is a multiple of 32 and at most 1024;
// every thread of the block must call them (they use __syncthreads).
// defines: warp_sum, block_sum
#pragma once

#include <cuda_runtime.h>

namespace ls {

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;  // every lane holds the sum
}

// Sum over the block; every thread gets the result. `sh`: 32 floats of shared memory.
__device__ __forceinline__ float block_sum(float v, float* sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warp = blockDim.x >> 5;
  v = warp_sum(v);
  __syncthreads();  // sh may still be read by a previous call
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  v = lane < n_warp ? sh[lane] : 0.0f;
  return warp_sum(v);
}

}  // namespace ls
