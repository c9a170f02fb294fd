// `convert`: a Hugging Face Llama checkpoint folder (config.json,
// tokenizer.json, safetensors shards of F32/F16/BF16 tensors) to a GGUF file
// in any type synth writes, as llama.cpp's convert_hf_to_gguf.py followed by
// llama-quantize does for Llama:
//  - the tensors renamed (hf_llama_name), Q and K rows permuted from HF's
//    half-split rope to GGUF's adjacent pairs (hf_row_of), per head of Q and
//    per key/value head of K (GQA);
//  - tie_word_embeddings: no output.weight (the engine reads token_embd);
//  - rope_scaling llama3: rope_freqs.weight and the layerstream.rope.llama3.*
//    keys, as synth writes them; linear: llama.rope.scaling.*;
//  - the tokenizer as gpt2 / llama-bpe (hf_tokenizer_to_gguf);
//  - each tensor's type from synth's plan for the recipe (synth_tensor_plan:
//    llama.cpp's mixtures and its fallbacks for rows that fit no block).
// Everything is checked before the output is created (config, shards, every
// tensor's presence, dtype and shape, the vocabulary); the file is written
// under a temporary name and renamed at the end, so an error leaves nothing.
// defines: HfConvertOptions, hf_convert()
#pragma once

#include <string>

#include "runtime/status.h"

namespace ls {

struct HfConvertOptions {
  std::string dir;             // the checkpoint folder
  std::string out;             // the GGUF to write
  std::string quant = "auto";  // a synth --quant name, or auto: the checkpoint's float type
  int threads = 0;             // 0: all cores
  bool quiet = false;
};

Status hf_convert(const HfConvertOptions& opt);

}  // namespace ls
