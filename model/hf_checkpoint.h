// A Hugging Face Llama checkpoint folder, read for `convert`: config.json's
// hyper-parameters, and the safetensors shards (model.safetensors, or the
// files model.safetensors.index.json names) with every tensor found by name.
// Also the two facts `convert` and `export` share about HF's Llama layout:
// the tensor names, and the Q/K row order (below).
// defines: HfLlamaConfig, read_hf_json(), read_hf_llama_config(), HfCheckpoint,
//          open_hf_checkpoint(), hf_llama_name(), hf_row_of()
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "runtime/status.h"

namespace ls {

struct HfLlamaConfig {
  uint32_t n_layer = 0, n_embd = 0, n_ff = 0, n_head = 0, n_head_kv = 0, head_dim = 0;
  uint32_t n_vocab = 0;
  uint32_t n_ctx = 2048;  // max_position_embeddings (HF's default)
  float rms_eps = 1e-6f;  // rms_norm_eps (HF's default)
  float rope_theta = 10000.0f;
  // rope_scaling (or transformers 5's rope_parameters): none, linear, llama3.
  std::string rope_type = "none";
  float rope_factor = 1.0f, rope_low = 1.0f, rope_high = 4.0f;  // llama3: low/high_freq_factor
  uint32_t rope_orig_ctx = 8192;          // llama3: original_max_position_embeddings
  bool tied = false;                      // tie_word_embeddings: lm_head is embed_tokens
  std::optional<int64_t> bos_id, eos_id;  // eos: the first when a list
};

// A JSON file of the checkpoint (config.json, tokenizer.json, ...); errors
// name the path.
Expected<nlohmann::json> read_hf_json(const std::string& path);

// Parse and check config.json: a Llama (architectures LlamaForCausalLM,
// model_type llama) without biases, with SiLU, whose shapes layerstream runs.
// Errors name the file and the field.
Expected<HfLlamaConfig> read_hf_llama_config(const std::string& path);

struct HfCheckpoint {
  struct Ref {
    const SafetensorsFile* file;
    const StTensor* tensor;
  };
  std::string dir;
  std::vector<std::shared_ptr<SafetensorsFile>> shards;
  std::map<std::string, Ref> tensors;  // every tensor of every shard, by name

  const Ref* find(const std::string& name) const {
    auto it = tensors.find(name);
    return it == tensors.end() ? nullptr : &it->second;
  }
};

// Open the shards of DIR: those model.safetensors.index.json names (each must
// exist and hold the tensors the index puts in it), else model.safetensors,
// else every model*.safetensors. A tensor in two shards is an error.
Expected<HfCheckpoint> open_hf_checkpoint(const std::string& dir);

// The Hugging Face Llama name of a GGUF tensor ("" when it has none):
// token_embd.weight -> model.embed_tokens.weight, blk.3.attn_q.weight ->
// model.layers.3.self_attn.q_proj.weight, output.weight -> lm_head.weight, ...
std::string hf_llama_name(const std::string& gguf_name);

// Q and K rows. GGUF (llama.cpp's converter) orders the rows of each head so
// that the two elements one rotation mixes are adjacent (rows 2i, 2i+1:
// ggml's "normal" rope); HF's rotate_half mixes rows i and i + d/2. Per head
// of d rows the converter reshapes (2, d/2) -> (d/2, 2):
//   gguf row 2i + j  =  hf row j*d/2 + i,   j in {0, 1}, i in [0, d/2).
// The HF row of GGUF row g of a tensor whose heads have d rows:
inline uint64_t hf_row_of(uint64_t g, uint64_t d) {
  const uint64_t h = g / d, r = g % d;
  return h * d + (r % 2) * (d / 2) + r / 2;
}

}  // namespace ls
