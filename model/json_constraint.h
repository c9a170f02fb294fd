// JSON mode (OpenAI's response_format "json_object", decode --json): the
// output is one JSON object (model/json_grammar.h), then an end-of-generation
// token, and nothing else: a token is allowed while the bytes it writes keep
// the output a prefix of a valid object; once the object is complete, only
// an end-of-generation token is; before, never one. Control tokens never
// come, nor tokens that write nothing.
// defines: JsonVocab, json_vocab(), JsonConstraint
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/json_grammar.h"
#include "model/token_constraint.h"
#include "model/tokenizer.h"

namespace ls {

// The bytes each token writes, and what it is: made once per vocabulary
// (n_vocab strings) and shared by every constrained sequence.
struct JsonVocab {
  enum Kind : uint8_t { Text, EndOfGeneration, Never };
  std::vector<std::string> bytes;
  std::vector<Kind> kind;
};
std::shared_ptr<const JsonVocab> json_vocab(const Tokenizer& tok);

class JsonConstraint final : public TokenConstraint {
 public:
  explicit JsonConstraint(std::shared_ptr<const JsonVocab> vocab) : vocab_(std::move(vocab)) {}
  bool allows(int32_t token) const override;
  void accept(int32_t token) override;
  void reset() override { grammar_ = JsonGrammar(true); }
  bool complete() const { return grammar_.complete(); }

 private:
  std::shared_ptr<const JsonVocab> vocab_;
  JsonGrammar grammar_{true};
};

}  // namespace ls
