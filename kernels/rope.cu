// RoPE kernel: see rope.cuh for the convention, layout and mapping.
#include "kernels/rope.cuh"
#include "kernels/rope_pair.cuh"
#include "runtime/cuda_util.cuh"

namespace ls {
namespace {

__global__ void rope_f32_kernel(RopeCudaParams p) {
  const int32_t n_pair = p.n_rot / 2;
  const int64_t id = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t total = p.n_tok * p.n_head * n_pair;
  if (id >= total) return;
  const int32_t i = static_cast<int32_t>(id % n_pair);
  const int64_t th = id / n_pair;
  const int32_t h = static_cast<int32_t>(th % p.n_head);
  const int64_t t = th / p.n_head;
  rope_rotate_pair(p.x + t * p.row_stride + static_cast<int64_t>(h) * p.head_dim + 2 * i, p.pos[t],
                   i, p);
}

__global__ void rope_table_kernel(RopeCudaParams p, float2* out) {
  const int32_t n_pair = p.n_rot / 2;
  const int64_t id = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (id >= p.n_tok * n_pair) return;
  const int32_t i = static_cast<int32_t>(id % n_pair);
  out[id] = rope_cos_sin(p.pos[id / n_pair], i, p);
}

}  // namespace

Status rope_table_cuda(const RopeCudaParams& p, float2* out, cudaStream_t stream) {
  const int64_t total = p.n_tok * (p.n_rot / 2);
  if (total == 0) return ok();
  rope_table_kernel<<<static_cast<unsigned>((total + 255) / 256), 256, 0, stream>>>(p, out);
  LS_CUDA_TRY(cudaGetLastError());
  return ok();
}

Status rope_f32_cuda(const RopeCudaParams& p, cudaStream_t stream) {
  const int64_t total = p.n_tok * p.n_head * (p.n_rot / 2);
  if (total == 0) return ok();
  const unsigned blocks = static_cast<unsigned>((total + 255) / 256);
  rope_f32_kernel<<<blocks, 256, 0, stream>>>(p);
  LS_CUDA_TRY(cudaGetLastError());
  return ok();
}

}  // namespace ls
