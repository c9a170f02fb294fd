// Argmax kernel: see argmax.cuh.
#include "kernels/argmax.cuh"

#include <cfloat>
#include "runtime/cuda_util.cuh"

namespace ls {
namespace {

constexpr int kThreads = 256;

// (v, i) beats (bv, bi) when larger, or equal with a lower index.
__device__ __forceinline__ bool better(float v, int32_t i, float bv, int32_t bi) {
  return v > bv || (v == bv && i < bi) || (bi < 0 && !(v != v));
}

__global__ void argmax_f32_kernel(ArgmaxParams p) {
  __shared__ float sv[kThreads];
  __shared__ int32_t si[kThreads];
  const float* x = p.x + blockIdx.x * p.n;
  float bv = 0.0f;
  int32_t bi = -1;  // none yet
  for (int64_t i = threadIdx.x; i < p.n; i += kThreads) {
    const float v = x[i] > FLT_MAX ? FLT_MAX : x[i];  // +inf ties the largest float
    if (better(v, static_cast<int32_t>(i), bv, bi)) {
      bv = v;
      bi = static_cast<int32_t>(i);
    }
  }
  sv[threadIdx.x] = bv;
  si[threadIdx.x] = bi;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      const float v = sv[threadIdx.x + s];
      const int32_t i = si[threadIdx.x + s];
      if (i >= 0 && better(v, i, sv[threadIdx.x], si[threadIdx.x])) {
        sv[threadIdx.x] = v;
        si[threadIdx.x] = i;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) p.out[blockIdx.x] = si[0] < 0 ? 0 : si[0];  // all NaN: id 0, as the CPU
}

}  // namespace

Status argmax_f32_cuda(const ArgmaxParams& p, cudaStream_t stream) {
  if (p.n_rows == 0) return ok();
  argmax_f32_kernel<<<static_cast<unsigned>(p.n_rows), kThreads, 0, stream>>>(p);
  LS_CUDA_TRY(cudaGetLastError());
  return ok();
}

}  // namespace ls
