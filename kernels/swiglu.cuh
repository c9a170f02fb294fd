// SwiGLU on the GPU: out[i] = silu(gate[i]) * up[i] = gate / (1 + exp(-gate)) * up,
// elementwise over n values (the feed-forward's (n_tok, n_ff) halves). out may alias gate.
// Grid: grid-stride loop, 256 threads per block, at most 4 blocks per SM's worth.
// expf (not __expf) keeps the result within an ulp or two of the CPU reference.
// Versions: v1; v2 (this): optionally also quantizes out to the 8-bit format
// of the decode GEMV (q8 set): a warp's pass is 32 consecutive values, one
// activation block, so down's input needs no quantize_act_q8 launch (same
// bits). Programmatic dependent launch (kernels/pdl.cuh).
// defines: SwigluParams, swiglu_f32_cuda
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/l2_prefetch.cuh"
#include "kernels/quantize_act.cuh"
#include "runtime/status.h"

namespace ls {

struct SwigluParams {
  const float* gate = nullptr;
  const float* up = nullptr;
  float* out = nullptr;
  int64_t n = 0;
  // Also out quantized into q8: the rows' width must be a multiple of 32 (n_ff is).
  ActQ8Device q8{nullptr, nullptr};
  // The next GEMV's weights, asked of the L2 before the wait (kernels/l2_prefetch.cuh).
  L2Prefetch pf{};
};

Status swiglu_f32_cuda(const SwigluParams& p, cudaStream_t stream);

}  // namespace ls
