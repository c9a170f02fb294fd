// The Llama hyper-parameters and weight tensors of a GGUF model, read from
// its metadata and checked against the tensor table: a file that is not a
// Llama model, lacks a tensor or has a wrong shape is an error naming it.
// defines: RopeScalingKind, LlamaConfig, LayerWeights, LlamaWeights, load_llama()
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "runtime/status.h"

namespace ls {

enum class RopeScalingKind { None, Linear, Llama3 };

struct LlamaConfig {
  uint32_t n_layer = 0;
  uint32_t n_embd = 0;      // model width
  uint32_t n_ff = 0;        // feed-forward width
  uint32_t n_head = 0;
  uint32_t n_head_kv = 0;   // < n_head with grouped-query attention
  uint32_t head_dim = 0;    // n_embd / n_head
  uint32_t n_rot = 0;       // rotated dimensions per head (rope.dimension_count)
  uint32_t n_vocab = 0;
  uint32_t n_ctx_train = 0;
  float rms_eps = 1e-5f;
  float rope_freq_base = 10000.0f;
  RopeScalingKind rope_scaling = RopeScalingKind::None;
  float rope_freq_scale = 1.0f;  // linear scaling: positions are multiplied by this
  bool has_rope_freqs = false;   // Llama 3.1: per-dimension divisors in rope_freqs.weight
  bool tied_output = false;      // no output.weight: token_embd serves as the head
  std::string name;              // general.name, if any

  uint32_t n_embd_kv() const { return n_head_kv * head_dim; }
};

struct LayerWeights {
  const GgufTensor* attn_norm;  // (n_embd)
  const GgufTensor* wq;         // (n_embd, n_embd)
  const GgufTensor* wk;         // (n_embd, n_embd_kv)
  const GgufTensor* wv;         // (n_embd, n_embd_kv)
  const GgufTensor* wo;         // (n_embd, n_embd)
  const GgufTensor* ffn_norm;   // (n_embd)
  const GgufTensor* w_gate;     // (n_embd, n_ff)
  const GgufTensor* w_up;       // (n_embd, n_ff)
  const GgufTensor* w_down;     // (n_ff, n_embd)
};

struct LlamaWeights {
  const GgufTensor* token_embd;   // (n_embd, n_vocab)
  const GgufTensor* output_norm;  // (n_embd)
  const GgufTensor* output;       // (n_embd, n_vocab); == token_embd when tied
  const GgufTensor* rope_freqs;   // (n_rot/2) or nullptr
  std::vector<LayerWeights> layers;
};

struct LlamaModelInfo {
  LlamaConfig config;
  LlamaWeights weights;
};

// Read and validate the config and weight table of a Llama GGUF.
Expected<LlamaModelInfo> load_llama(const GgufFile& f);

}  // namespace ls
