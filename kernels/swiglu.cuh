// SwiGLU on the GPU: out[i] = silu(gate[i]) * up[i] = gate / (1 + exp(-gate)) * up,
// elementwise over n values (the feed-forward's (n_tok, n_ff) halves). out may alias gate.
// Grid: grid-stride loop, 256 threads per block, at most 4 blocks per SM's worth.
// expf (not __expf) keeps the result within an ulp or two of the CPU reference.
// Versions: v1 (this).
// defines: SwigluParams, swiglu_f32_cuda
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/status.h"

namespace ls {

struct SwigluParams {
  const float* gate = nullptr;
  const float* up = nullptr;
  float* out = nullptr;
  int64_t n = 0;
};

Status swiglu_f32_cuda(const SwigluParams& p, cudaStream_t stream);

}  // namespace ls
