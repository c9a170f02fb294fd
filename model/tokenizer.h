// Llama tokenizers driven by a GGUF file's tokenizer.* metadata, exact against
// llama.cpp's test vectors:
//  - Llama3Bpe (tokenizer.ggml.model "gpt2", pre "llama-bpe"): the Llama 3
//    split regex, then byte-level BPE by merge rank; a word that is itself a
//    token skips the merges.
//  - Llama2Spm (model "llama"): SentencePiece BPE by token score over the
//    whole text, spaces as U+2581 with one prepended, and <0xXX> byte
//    fallback for characters that form no token.
// Before either, special tokens are cut out of the text: user-defined tokens
// always, control tokens only when parse_special is set (as llama.cpp and
// Hugging Face do).
// Also here: the streaming Detokenizer, the built-in vocabulary that `synth`
// writes when given no --vocab file, and copy_vocab for --vocab.
// defines: TokenizerFamily, Tokenizer, Detokenizer, write_builtin_vocab, copy_vocab
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "runtime/status.h"

namespace ls {

enum class TokenizerFamily { Llama3Bpe, Llama2Spm };

// tokenizer.ggml.token_type values, numbered as in GGUF.
enum class TokenType : uint8_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

class Tokenizer {
 public:
  // Errors name the file and the tokenizer.* key that is missing, malformed
  // or unsupported.
  static Expected<std::unique_ptr<Tokenizer>> from_gguf(const GgufFile& f);

  std::vector<int32_t> encode(std::string_view text, bool add_bos, bool parse_special) const;
  // The token's bytes as text: byte-level characters decoded (BPE), U+2581 as
  // a space and <0xXX> as its byte (SPM); control tokens give their text.
  std::string piece(int32_t id) const;

  int32_t n_vocab() const { return static_cast<int32_t>(text_.size()); }
  int32_t bos() const { return bos_; }
  int32_t eos() const { return eos_; }
  int32_t eot() const { return eot_; }  // -1 if none
  bool is_eog(int32_t id) const;        // eos, eot, <|eom_id|>, ...
  bool add_bos_default() const { return add_bos_; }
  // Whether SPM text gets a leading space (tokenizer.ggml.add_space_prefix).
  bool add_space_prefix() const { return add_space_prefix_; }
  int32_t find(std::string_view token_text) const;  // -1 if absent
  TokenType type(int32_t id) const;
  // Control and unknown tokens: not text, skipped by the Detokenizer.
  bool is_control(int32_t id) const;
  TokenizerFamily family() const { return family_; }

 private:
  Tokenizer() = default;
  struct Fragment {  // a run of raw text, or a special token cut out of it
    int32_t token;   // -1 for text
    size_t off, len;
  };
  std::vector<Fragment> split_special(std::string_view text, bool parse_special) const;
  void encode_bpe(std::string_view text, std::vector<int32_t>& out) const;
  void encode_bpe_word(std::string_view word, std::vector<int32_t>& out) const;
  void encode_spm(std::string_view text, std::vector<int32_t>& out) const;
  int32_t spm_byte_token(uint8_t b) const;

  TokenizerFamily family_ = TokenizerFamily::Llama3Bpe;
  std::vector<std::string> text_;  // (n_vocab)
  std::vector<TokenType> type_;    // (n_vocab)
  std::vector<float> score_;       // (n_vocab) SPM only
  // Token text -> id: open addressing over text_ (a std::unordered_map was
  // several times slower to build for 128k tokens).
  struct TextSlot {
    int32_t id;    // -1: empty
    uint32_t tag;  // the text's hash, to skip most string compares
  };
  struct TextIndex {
    std::vector<TextSlot> slot;  // size a power of two
    uint64_t mask = 0;
  };
  TextIndex index_;
  int32_t find2(std::string_view a, std::string_view b) const;  // the id of text a + b
  // BPE merges keyed by their text "left right" (the rank is the index), so
  // loading 280k of them is one hash insert each; token ids are resolved only
  // for the pairs an encode meets.
  struct MergeSlot {
    int32_t rank;  // -1: empty
    uint32_t tag;
  };
  std::vector<MergeSlot> merge_slot_;  // size a power of two
  uint64_t merge_mask_ = 0;
  std::string merge_text_;                                // every merge's text, back to back
  std::vector<uint32_t> merge_off_;                       // (n_merges + 1) offsets into merge_text_
  int32_t merge_rank(int32_t left, int32_t right) const;  // -1: no merge
  int32_t byte_token_[256];                               // BPE: the token of each byte's character
  std::vector<int32_t> specials_;  // control/user-defined/unknown ids, longest text first
  std::vector<int32_t> eog_;
  int32_t bos_ = -1, eos_ = -1, eot_ = -1, unk_ = -1;
  bool add_bos_ = true;
  bool add_space_prefix_ = true;
};

// Turns ids back into text as they arrive. Bytes of a UTF-8 character split
// across tokens are held back until the character is complete (flush() gives
// whatever is left). Control tokens produce nothing unless render_special.
// SPM: when the first id pushed is BOS, the leading space of the first text
// piece (the one encode() prepended) is dropped, so that text encoded with
// BOS decodes to itself; a stream that does not start at BOS (a continuation)
// keeps its spaces.
class Detokenizer {
 public:
  explicit Detokenizer(const Tokenizer& tok, bool render_special = false);
  std::string push(int32_t id);
  std::string flush();

 private:
  const Tokenizer& tok_;
  bool render_special_;
  bool first_ = true;         // nothing pushed yet
  bool strip_space_ = false;  // drop the leading space of the next text piece
  std::string pending_;       // an incomplete UTF-8 sequence
};

// Decode a whole sequence (a Detokenizer run to the end).
std::string detokenize(const Tokenizer& tok, const std::vector<int32_t>& ids);

// Smallest n_vocab the built-in vocabulary accepts.
inline constexpr uint32_t kBuiltinVocabMin = 512;

// Write the tokenizer.* metadata of the built-in vocabulary: a byte-level
// Llama-3-style BPE (gpt2 / llama-bpe) with 256 byte tokens, merges learnt
// from a built-in English text, the Llama 3 special tokens and
// <|reserved_special_token_N|> up to n_vocab. Deterministic.
Status write_builtin_vocab(GgufWriter& w, uint32_t n_vocab);

// Copy every tokenizer.* key of a vocab file into w, after checking that the
// vocabulary loads. Returns its size.
Expected<uint32_t> copy_vocab(const GgufFile& src, GgufWriter& w);

}  // namespace ls
