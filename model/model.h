// A loaded model: the mapped GGUF, its Llama config and weight table, its
// tokenizer and its layer map, with one forward pass over the mapped weights
// (every layer resident: the CPU backend's path, and the oracle for the
// streaming runtime, which hands the same layers over from other tiers).
// defines: Model, open_model(), forward_resident()
#pragma once

#include <memory>
#include <string>

#include "io/gguf.h"
#include "model/backend.h"
#include "model/layer_map.h"
#include "model/llama_config.h"
#include "model/tokenizer.h"

namespace ls {

struct Model {
  std::shared_ptr<GgufFile> file;
  LlamaModelInfo info;
  std::unique_ptr<Tokenizer> tokenizer;
  LayerMap map;

  const LlamaConfig& config() const { return info.config; }
  GlobalView globals() const { return global_view(info.weights, file->base()); }
  LayerView layer(uint32_t l) const { return layer_view(info.weights.layers[l], file->base(), 0); }
};

// Open, validate and map a model; errors name the file and what is wrong.
Expected<std::unique_ptr<Model>> open_model(const std::string& path);

// One step through every layer with weights read from the mapped file (or
// from the backend's own resident copy, Backend::resident_layer).
// logits: n_logits x n_vocab floats.
Status forward_resident(const Model& m, Backend& be, const Batch& b, float* logits);

}  // namespace ls
