// silu(g) · u as the GPU computes it everywhere (the SwiGLU kernel and the
// gate/up GEMV's SwiGLU epilogue), so both give the same bits. expf (not
// __expf) keeps it within an ulp or two of the CPU reference. Device code only.
// defines: silu_mul()
#pragma once

#include <cuda_runtime.h>

namespace ls {

__device__ __forceinline__ float silu_mul(float g, float u) {
  return __fmul_rn(__fdiv_rn(g, 1.0f + expf(-g)), u);
}

}  // namespace ls
