// Rotary position embedding on the GPU, GGUF Llama convention ("normal"
// mode, as kernels/ref/ops.h rope_f32): within each head, adjacent pairs
// (x[2i], x[2i+1]) rotate by
//   theta_i = pos * freq_scale * base^(-2i/n_rot) / freq_factors[i]
// (freq_factors: Llama 3.1 scaling, the model's rope_freqs tensor, or none);
// dimensions n_rot..head_dim pass through. Positions come from a device
// array, one per token, so a batch mixes sequences and positions freely.
// Layout: x (n_tok, row_stride) f32, head h at x + h * head_dim; in place.
// Grid: one thread per (token, head, pair), 256 per block. theta, cos and
// sin are computed in double, as the reference does, so positions in the
// hundred thousands keep their phase (float theta would be off by ~1e-2 rad).
// Versions: v1 (this).
// defines: RopeCudaParams, rope_f32_cuda
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/status.h"

namespace ls {

struct RopeCudaParams {
  float* x = nullptr;                   // (n_tok, row_stride)
  const int32_t* pos = nullptr;         // (n_tok) device
  const float* freq_factors = nullptr;  // (n_rot/2) device, or nullptr
  int64_t n_tok = 0;
  int32_t n_head = 0, head_dim = 0;
  int64_t row_stride = 0;  // floats between tokens (n_head * head_dim when packed)
  int32_t n_rot = 0;
  float freq_base = 10000.0f, freq_scale = 1.0f;
};

Status rope_f32_cuda(const RopeCudaParams& p, cudaStream_t stream);

}  // namespace ls
