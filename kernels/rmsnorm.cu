// RMSNorm (+ fused residual add) kernel: see rmsnorm.cuh for the layout and mapping.
#include "kernels/reduce.cuh"
#include "kernels/rmsnorm.cuh"
#include "runtime/cuda_util.cuh"

namespace ls {
namespace {

__global__ void rmsnorm_f32_kernel(RmsNormParams p) {
  __shared__ float sh[32];
  const int64_t m = blockIdx.x;
  const int64_t r = p.rows ? p.rows[m] : m;
  float* h = p.h + r * p.n;
  float ss = 0.0f;
  if (p.add) {
    const float* a = p.add + r * p.n;
    for (int64_t i = threadIdx.x; i < p.n; i += blockDim.x) {
      const float v = h[i] + a[i];
      h[i] = v;
      ss += v * v;
    }
  } else {
    for (int64_t i = threadIdx.x; i < p.n; i += blockDim.x) ss += h[i] * h[i];
  }
  ss = block_sum(ss, sh);
  // 1/sqrt in double as the reference does: one per row, cheap.
  const float scale = static_cast<float>(1.0 / sqrt(static_cast<double>(ss) / p.n + p.eps));
  float* y = p.y + m * p.n;
  for (int64_t i = threadIdx.x; i < p.n; i += blockDim.x) y[i] = h[i] * scale * p.w[i];
}

}  // namespace

Status rmsnorm_f32_cuda(const RmsNormParams& p, cudaStream_t stream) {
  if (p.n_out == 0) return ok();
  rmsnorm_f32_kernel<<<static_cast<unsigned>(p.n_out), 256, 0, stream>>>(p);
  LS_CUDA_TRY(cudaGetLastError());
  return ok();
}

}  // namespace ls
