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
// defines: RopeCudaParams, rope_f32_cuda, rope_table_cuda
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
  // (n_tok, n_rot / 2) cos and sin of each (token, pair), from rope_table_cuda,
  // or nullptr. The decode kernels (rope_kv, attention's fused RoPE) read
  // it instead of computing theta, pow and sincos in double in every layer
  // (6 us a layer inside the attention kernel, measured on the H200);
  // rope_f32_cuda always computes.
  const float2* cs = nullptr;
};

Status rope_f32_cuda(const RopeCudaParams& p, cudaStream_t stream);

// The step's table: out (n_tok, n_rot / 2) = the cos and sin of each token's
// pairs at pos[t], as the kernels compute them (the same bits). One launch a
// step serves every layer.
Status rope_table_cuda(const RopeCudaParams& p, float2* out, cudaStream_t stream);

}  // namespace ls
