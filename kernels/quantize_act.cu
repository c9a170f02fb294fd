// quantize_act_q8: f32 activations -> the 8-bit format of kernels/act_q8.h.
// One warp per block of 32 values, lane i on value i: the block's max |x| by
// a butterfly of fmaxf (order-free, so the same as the reference's loop),
// d and 1/d by the format's own helpers (IEEE division: this project builds
// without fast math), q by round-half-even, and the sum of the 32 q by
// xor shuffles (kernels/act_q8_group.cuh, shared with the kernels that
// quantize their own output). The blocks of all n_tok rows are one flat range, since
// n_in is a multiple of 32. Memory-trivial next to any GEMV that reads it.
// Programmatic dependent launch (kernels/pdl.cuh): waits before reading x.
// defines: quantize_act_q8_cuda
#include "kernels/quantize_act.cuh"

#include "kernels/act_q8_group.cuh"
#include "kernels/pdl.cuh"
#include "runtime/cuda_util.cuh"

namespace ls {
namespace {

constexpr int kThreads = 256;  // 8 blocks of 32 values per CUDA block

// Block b of x (token b / nx, block b % nx) to block o of the output: o = b
// (row-major), or (b % nx) · ld + b / nx (block-major, ld > 0).
__global__ void __launch_bounds__(kThreads)
    quantize_act_q8(const float* __restrict__ x, int64_t n_blocks, int8_t* __restrict__ q,
                    float2* __restrict__ ds, int64_t nx, int64_t ld) {
  pdl_trigger();
  pdl_wait();
  const int lane = threadIdx.x & 31;
  const int64_t b = static_cast<int64_t>(blockIdx.x) * (kThreads / 32) + (threadIdx.x >> 5);
  if (b >= n_blocks) return;  // the whole warp: b is warp-uniform
  const float v = x[b * kActQ8Block + lane];
  const int64_t o = ld > 0 ? (b % nx) * ld + b / nx : b;
  act_q8_group<1>(&v, true, q + o * kActQ8Block + lane, ds + o, lane == 0);
}

Status launch(const float* x, int64_t n_tok, int64_t n_in, ActQ8Device out, int64_t ld,
              cudaStream_t stream) {
  if (n_in % kActQ8Block != 0 || n_tok < 0 || (ld > 0 && ld < n_tok))
    return make_error("quantize_act_q8: n_in %lld not a multiple of %d (or ld %lld < n_tok %lld)",
                      (long long)n_in, kActQ8Block, (long long)ld, (long long)n_tok);
  const int64_t n_blocks = n_tok * n_in / kActQ8Block;
  if (n_blocks == 0) return ok();
  const int64_t grid = (n_blocks + kThreads / 32 - 1) / (kThreads / 32);
  if (grid > 0x7fffffff) return make_error("quantize_act_q8: %lld blocks", (long long)n_blocks);
  LS_CUDA_TRY(launch_pdl(quantize_act_q8, dim3(static_cast<unsigned>(grid)), dim3(kThreads), 0,
                         stream, x, n_blocks, out.q, out.ds, n_in / kActQ8Block, ld));
  return ok();
}

}  // namespace

Status quantize_act_q8_cuda(const float* x, int64_t n_tok, int64_t n_in, ActQ8Device out,
                            cudaStream_t stream) {
  return launch(x, n_tok, n_in, out, 0, stream);
}

Status quantize_act_q8_blocks_cuda(const float* x, int64_t n_tok, int64_t n_in, int64_t ld,
                                   ActQ8Device out, cudaStream_t stream) {
  if (ld <= 0) return make_error("quantize_act_q8_blocks: ld %lld", (long long)ld);
  return launch(x, n_tok, n_in, out, ld, stream);
}

}  // namespace ls
