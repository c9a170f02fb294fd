// A Hugging Face tokenizer.json as GGUF tokenizer metadata, stored the way
// Llama 3 files store theirs (and write_builtin_vocab writes ours):
// tokenizer.ggml.model "gpt2", pre "llama-bpe", the byte-level token texts,
// their types, the merges by rank, BOS/EOS and add_bos_token.
// defines: hf_tokenizer_to_gguf()
#pragma once

#include <string>

#include "io/gguf_writer.h"
#include "model/hf_checkpoint.h"
#include "runtime/status.h"

namespace ls {

// Read DIR/tokenizer.json (and DIR/tokenizer_config.json when present) and
// set the tokenizer.* keys of a vocabulary of c.n_vocab tokens on w.
//  - model: a byte-level BPE ("BPE" without byte fallback) whose
//    pre-tokenizer is Llama 3's: a Split on Llama 3's regex, then ByteLevel
//    without a regex of its own, and no normalizer; anything else is an error
//    (layerstream's BPE tokenizer implements that one).
//  - token types as llama.cpp's converter sets them: added tokens marked
//    special are control tokens, other added tokens user-defined, ids that
//    no token has (config.json's vocab_size can be larger) "[PAD<id>]",
//    unused.
//  - BOS/EOS: tokenizer_config.json's bos_token/eos_token, else config.json's
//    ids. add_bos_token: tokenizer_config.json's, else whether the
//    post-processor's template starts with BOS, else true (llama.cpp's
//    default for llama-bpe).
//  - tokenizer_config.json's chat_template, when it is a string.
// The result is loaded by Tokenizer before anything is set, so a vocabulary
// the engine could not run is an error here, naming tokenizer.json.
Status hf_tokenizer_to_gguf(const std::string& dir, const HfLlamaConfig& c, GgufWriter& w);

}  // namespace ls
