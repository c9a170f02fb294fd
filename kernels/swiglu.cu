// SwiGLU kernel: see swiglu.cuh.
#include "kernels/swiglu.cuh"
#include "runtime/cuda_util.cuh"

namespace ls {
namespace {

__global__ void swiglu_f32_kernel(SwigluParams p) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.n;
       i += stride) {
    const float g = p.gate[i];
    p.out[i] = __fmul_rn(__fdiv_rn(g, 1.0f + expf(-g)), p.up[i]);
  }
}

}  // namespace

Status swiglu_f32_cuda(const SwigluParams& p, cudaStream_t stream) {
  if (p.n == 0) return ok();
  const int64_t want = (p.n + 255) / 256;
  const unsigned blocks = static_cast<unsigned>(want < 4096 ? want : 4096);
  swiglu_f32_kernel<<<blocks, 256, 0, stream>>>(p);
  LS_CUDA_TRY(cudaGetLastError());
  return ok();
}

}  // namespace ls
