#include "kernels/step_advance.cuh"

#include "runtime/cuda_util.cuh"

namespace ls {
namespace {

__global__ void step_advance_kernel(int32_t* tok, int32_t* pos, const int32_t* best, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  tok[i] = best[i];
  pos[i] += 1;
}

}  // namespace

Status step_advance_cuda(int32_t* tok, int32_t* pos, const int32_t* best, int64_t n,
                         cudaStream_t stream) {
  if (n <= 0) return ok();
  const unsigned blocks = static_cast<unsigned>((n + 127) / 128);
  step_advance_kernel<<<blocks, 128, 0, stream>>>(tok, pos, best, n);
  LS_CUDA_TRY(cudaGetLastError());
  return ok();
}

}  // namespace ls
