// KV-cache store kernel: see kv_store.cuh.
#include "kernels/kv_store.cuh"
#include "runtime/cuda_util.cuh"

namespace ls {
namespace {

__device__ __forceinline__ void put(__half* d, float x) { *d = __float2half_rn(x); }
__device__ __forceinline__ void put(float* d, float x) { *d = x; }

template <typename T>
__global__ void kv_store_kernel(KvStoreParams p) {
  const int64_t t = blockIdx.x;
  const int64_t at = (static_cast<int64_t>(p.seq[t]) * p.n_ctx + p.pos[t]) * p.n_embd_kv;
  T* k = static_cast<T*>(p.k_cache) + at;
  T* v = static_cast<T*>(p.v_cache) + at;
  for (int32_t i = threadIdx.x; i < p.n_embd_kv; i += blockDim.x) {
    put(k + i, p.k[t * p.n_embd_kv + i]);
    put(v + i, p.v[t * p.n_embd_kv + i]);
  }
}

}  // namespace

Status kv_store_cuda(const KvStoreParams& p, cudaStream_t stream) {
  if (p.n_tok == 0) return ok();
  if (p.f32)
    kv_store_kernel<float><<<static_cast<unsigned>(p.n_tok), 256, 0, stream>>>(p);
  else
    kv_store_kernel<__half><<<static_cast<unsigned>(p.n_tok), 256, 0, stream>>>(p);
  LS_CUDA_TRY(cudaGetLastError());
  return ok();
}

}  // namespace ls
