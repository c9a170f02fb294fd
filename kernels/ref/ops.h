// CPU reference ops of the Llama forward, in float32 activations. These are
// the oracle the CUDA kernels are tested against, and the CPU backend's ops.
// Each processes one token's vector; the backend loops over the batch.
// defines: RopeParams, rmsnorm_f32, rope_f32, silu_mul_f32, softmax_f32, dot_f32
#pragma once

#include <cstdint>

namespace ls {

// y = x / sqrt(mean(x^2) + eps) * w, over n elements. y may alias x.
void rmsnorm_f32(const float* x, const float* w, float* y, int64_t n, float eps);

// Rotary position embedding, GGUF Llama convention ("normal" mode): within
// each head, adjacent pairs (x[2i], x[2i+1]) rotate by
// theta_i = pos * freq_scale * base^(-2i/n_rot) / freq_factors[i];
// dimensions from n_rot to head_dim pass through.
struct RopeParams {
  int32_t n_rot = 0;
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;
  const float* freq_factors = nullptr;  // n_rot/2 divisors (Llama 3.1), or nullptr
};
void rope_f32(float* x, int32_t n_head, int32_t head_dim, int32_t pos, const RopeParams& p);

// out[i] = silu(gate[i]) * up[i]; out may alias gate.
void silu_mul_f32(const float* gate, const float* up, float* out, int64_t n);

// In-place softmax over n elements.
void softmax_f32(float* x, int64_t n);

// Dot product with a fixed summation order (8 interleaved partial sums), so
// results do not depend on how the caller splits work across threads.
float dot_f32(const float* a, const float* b, int64_t n);

}  // namespace ls
