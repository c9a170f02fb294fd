// SwiGLU kernel (+ 8-bit quantization of its output): see swiglu.cuh.
#include "kernels/act_q8_group.cuh"
#include "kernels/pdl.cuh"
#include "kernels/swiglu.cuh"
#include "runtime/cuda_util.cuh"

namespace ls {
namespace {

__device__ __forceinline__ float silu_mul(float g, float u) {
  return __fmul_rn(__fdiv_rn(g, 1.0f + expf(-g)), u);
}

__global__ void swiglu_f32_kernel(SwigluParams p) {
  pdl_trigger();
  l2_prefetch_issue(p.pf);
  pdl_wait();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t i0 = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (!p.q8.q) {
    for (int64_t i = i0; i < p.n; i += stride) p.out[i] = silu_mul(p.gate[i], p.up[i]);
    return;
  }
  // n % 32 == 0, blocks of 256 threads: a warp's pass is one activation block.
  const bool lead = (threadIdx.x & 31) == 0;
  for (int64_t i = i0; i < p.n; i += stride) {
    const float v = silu_mul(p.gate[i], p.up[i]);
    p.out[i] = v;
    act_q8_group<1>(&v, true, p.q8.q + i, p.q8.ds + i / kActQ8Block, lead);
  }
}

}  // namespace

Status swiglu_f32_cuda(const SwigluParams& p, cudaStream_t stream) {
  if (p.n == 0) return ok();
  if (p.q8.q && (p.n % kActQ8Block != 0 || !p.q8.ds))
    return make_error("swiglu: the 8-bit output needs n (%lld) a multiple of %d and ds",
                      static_cast<long long>(p.n), kActQ8Block);
  const int64_t want = (p.n + 255) / 256;
  const unsigned blocks = static_cast<unsigned>(want < 4096 ? want : 4096);
  LS_CUDA_TRY(launch_pdl(swiglu_f32_kernel, dim3(blocks), dim3(256), 0, stream, p));
  return ok();
}

}  // namespace ls
