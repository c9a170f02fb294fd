// Synthetic Llama models: GGUF files of any Llama shape with random weights,
// so that tests and benchmarks need no downloaded model. Weights are scaled
// like an initialised network (residual projections shrunk with depth), so
// activations stay finite through 80 layers. Deterministic for a seed,
// whatever the thread count.
// The tensor plan, the file type and the rope divisors are `convert`'s too.
// defines: kLlama3Rope*Key, SynthShape, SynthOptions, synth_preset(), synth_quant_from_name(),
//          synth_tensor_plan(), llama_file_type(), llama31_rope_freqs(), synth_write()
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/ggml_type.h"
#include "runtime/status.h"

namespace ls {

// Llama 3 rope scaling parameters (HF's rope_scaling names), written beside
// rope_freqs.weight, which alone carries the scaling for every reader.
inline constexpr const char* kLlama3RopeFactorKey = "layerstream.rope.llama3.factor";
inline constexpr const char* kLlama3RopeLowKey = "layerstream.rope.llama3.low_freq_factor";
inline constexpr const char* kLlama3RopeHighKey = "layerstream.rope.llama3.high_freq_factor";
inline constexpr const char* kLlama3RopeOrigCtxKey =
    "layerstream.rope.llama3.original_context_length";

struct SynthShape {
  std::string name = "custom";
  uint32_t n_layer = 2, n_embd = 256, n_head = 4, n_head_kv = 2, n_ff = 768, n_vocab = 512;
  uint32_t n_ctx = 4096;
  float rope_base = 500000.0f;
  bool llama31_rope = false;  // write rope_freqs.weight (Llama 3.1 scaling)
  float rope_factor = 8.0f, rope_low = 1.0f, rope_high = 4.0f;
  uint32_t rope_orig_ctx = 8192;
  // No output.weight: the head is token_embd (Llama 3.2 1B). With random
  // weights the last token's embedding then dominates the last hidden state,
  // so greedy decoding repeats it by a margin no arithmetic flips.
  bool tied = false;
};

// "tiny", "1b", "8b", "70b" (Llama 3.x shapes), or nullopt.
std::optional<SynthShape> synth_preset(const std::string& name);

// A quantization recipe: a plain type, or llama.cpp's Q4_K_M / Q5_K_M mixtures.
struct SynthQuant {
  GgmlType base = GgmlType::F32;
  int mixture = 0;  // 0 = pure, 4 = q4_k_m, 5 = q5_k_m
  std::string name;  // as given
};
std::optional<SynthQuant> synth_quant_from_name(const std::string& name);

struct SynthTensor {
  std::string name;
  GgmlType type;
  std::vector<uint64_t> shape;
  float stddev;  // of the random values (norm weights: around 1)
  bool is_norm;
};

// The tensors of a model, with the type each gets under the recipe
// (llama.cpp's rules for the mixtures, and its fallbacks for rows that are
// not a multiple of the block size).
std::vector<SynthTensor> synth_tensor_plan(const SynthShape& s, const SynthQuant& q);

// general.file_type for the recipe (llama.cpp's LLAMA_FTYPE numbers).
uint32_t llama_file_type(const SynthQuant& q);

// Llama 3.1 rope scaling (s.rope_factor, rope_low, rope_high, rope_orig_ctx,
// rope_base) as the per-dimension divisors of the rotation frequency that
// rope_freqs.weight holds: n_rot / 2 floats.
std::vector<float> llama31_rope_freqs(const SynthShape& s, uint32_t n_rot);

struct SynthOptions {
  SynthShape shape;
  SynthQuant quant;
  uint64_t seed = 1;
  std::string vocab_path;  // empty: the built-in byte-level vocabulary
  int threads = 0;         // 0: all cores
  bool quiet = false;
  // The layers' matrices left unwritten: holes of a sparse file, which read
  // as zeros. The file is the whole model's, layout and size, but takes on
  // disk only its embeddings, norms and head: for checking a reader (ours,
  // llama.cpp's) on a model larger than the disk, e.g. the 70b at F32
  // (282 GB). With every layer's output zero, each layer passes the
  // residual through unchanged.
  bool zero_layers = false;
};

// Write the model to `path` (via path.tmp, renamed at the end). With a vocab
// file, n_vocab becomes the vocab's size.
Status synth_write(const SynthOptions& opt, const std::string& path);

}  // namespace ls
