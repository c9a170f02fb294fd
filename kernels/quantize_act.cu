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

__global__ void __launch_bounds__(kThreads)
    quantize_act_q8(const float* __restrict__ x, int64_t n_blocks, int8_t* __restrict__ q,
                    float2* __restrict__ ds) {
  pdl_trigger();
  pdl_wait();
  const int lane = threadIdx.x & 31;
  const int64_t b = static_cast<int64_t>(blockIdx.x) * (kThreads / 32) + (threadIdx.x >> 5);
  if (b >= n_blocks) return;  // the whole warp: b is warp-uniform
  const float v = x[b * kActQ8Block + lane];
  act_q8_group<1>(&v, true, q + b * kActQ8Block + lane, ds + b, lane == 0);
}

}  // namespace

Status quantize_act_q8_cuda(const float* x, int64_t n_tok, int64_t n_in, ActQ8Device out,
                            cudaStream_t stream) {
  if (n_in % kActQ8Block != 0 || n_tok < 0)
    return make_error("quantize_act_q8: n_in %lld not a multiple of %d", (long long)n_in,
                      kActQ8Block);
  const int64_t n_blocks = n_tok * n_in / kActQ8Block;
  if (n_blocks == 0) return ok();
  const int64_t grid = (n_blocks + kThreads / 32 - 1) / (kThreads / 32);
  if (grid > 0x7fffffff) return make_error("quantize_act_q8: %lld blocks", (long long)n_blocks);
  LS_CUDA_TRY(launch_pdl(quantize_act_q8, dim3(static_cast<unsigned>(grid)), dim3(kThreads), 0,
                         stream, x, n_blocks, out.q, out.ds));
  return ok();
}

}  // namespace ls
