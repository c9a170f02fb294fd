// Fused RoPE + KV store of decode: see rope_kv.cuh.
#include "kernels/pdl.cuh"
#include "kernels/rope_kv.cuh"
#include "kernels/rope_pair.cuh"
#include "runtime/cuda_util.cuh"

namespace ls {
namespace {

__device__ __forceinline__ void put(__half* d, float x) {
  *d = __float2half_rn(x);
}
__device__ __forceinline__ void put(float* d, float x) {
  *d = x;
}

template <typename T>
__global__ void rope_kv_kernel(RopeKvParams p) {
  pdl_trigger();
  pdl_wait();
  const int32_t HD = p.rope.head_dim, half = HD / 2, n_pair = p.rope.n_rot / 2;
  const int32_t KV = p.kv.n_embd_kv, n_head_kv = KV / HD;
  const int64_t n_tok = p.rope.n_tok;
  const int64_t n_a = n_tok * (p.n_head + n_head_kv) * half;  // pairs of q and k
  const int64_t id = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (id < n_a) {
    const int32_t i = static_cast<int32_t>(id % half);
    const int64_t th = id / half;
    const int32_t h = static_cast<int32_t>(th % (p.n_head + n_head_kv));
    const int64_t t = th / (p.n_head + n_head_kv);
    const int32_t pos = p.kv.pos[t];
    if (h < p.n_head) {
      if (i < n_pair)
        rope_rotate(
            p.q + t * (static_cast<int64_t>(p.n_head) * HD) + static_cast<int64_t>(h) * HD + 2 * i,
            rope_cs_of(p.rope, t, pos, i));
      return;
    }
    const int64_t e = static_cast<int64_t>(h - p.n_head) * HD + 2 * i;  // within the row
    float* k = const_cast<float*>(p.kv.k) + t * KV + e;
    if (i < n_pair) rope_rotate(k, rope_cs_of(p.rope, t, pos, i));
    T* dst = static_cast<T*>(p.kv.k_cache) +
             kv_page_row(p.kv.pages, p.kv.n_ctx, p.kv.seq[t], pos) * KV + e;
    put(dst, k[0]);
    put(dst + 1, k[1]);
    return;
  }
  const int64_t j = id - n_a;
  if (j >= n_tok * KV) return;
  const int64_t t = j / KV, e = j % KV;
  T* dst = static_cast<T*>(p.kv.v_cache) +
           kv_page_row(p.kv.pages, p.kv.n_ctx, p.kv.seq[t], p.kv.pos[t]) * KV + e;
  put(dst, p.kv.v[t * KV + e]);
}

}  // namespace

Status rope_kv_store_cuda(const RopeKvParams& p, cudaStream_t stream) {
  const int32_t HD = p.rope.head_dim;
  if (HD <= 0 || HD % 2 != 0 || p.kv.n_embd_kv % HD != 0 || p.rope.n_rot > HD)
    return make_error("rope_kv: head_dim %d, n_rot %d and n_embd_kv %d do not fit", HD,
                      p.rope.n_rot, p.kv.n_embd_kv);
  const int64_t n_a = p.rope.n_tok * (p.n_head + p.kv.n_embd_kv / HD) * (HD / 2);
  const int64_t total = n_a + p.rope.n_tok * p.kv.n_embd_kv;
  if (total == 0) return ok();
  const dim3 grid(static_cast<unsigned>((total + 255) / 256));
  if (p.kv.f32)
    LS_CUDA_TRY(launch_pdl(rope_kv_kernel<float>, grid, dim3(256), 0, stream, p));
  else
    LS_CUDA_TRY(launch_pdl(rope_kv_kernel<__half>, grid, dim3(256), 0, stream, p));
  return ok();
}

}  // namespace ls
