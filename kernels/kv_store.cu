// KV-cache store kernel: see kv_store.cuh.
#include "kernels/kv_store.cuh"
#include "runtime/cuda_util.cuh"

namespace ls {
namespace {

__global__ void kv_store_f16_kernel(KvStoreParams p) {
  const int64_t t = blockIdx.x;
  const int64_t at = (static_cast<int64_t>(p.seq[t]) * p.n_ctx + p.pos[t]) * p.n_embd_kv;
  for (int32_t i = threadIdx.x; i < p.n_embd_kv; i += blockDim.x) {
    p.k_cache[at + i] = __float2half_rn(p.k[t * p.n_embd_kv + i]);
    p.v_cache[at + i] = __float2half_rn(p.v[t * p.n_embd_kv + i]);
  }
}

}  // namespace

Status kv_store_f16_cuda(const KvStoreParams& p, cudaStream_t stream) {
  if (p.n_tok == 0) return ok();
  kv_store_f16_kernel<<<static_cast<unsigned>(p.n_tok), 256, 0, stream>>>(p);
  LS_CUDA_TRY(cudaGetLastError());
  return ok();
}

}  // namespace ls
