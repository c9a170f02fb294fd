// JSON mode (OpenAI's response_format "json_object", decode --json): the
// output is one JSON object (model/json_grammar.h), then an end-of-generation
// token, and nothing else: a token is allowed while the bytes it writes keep
// the output a prefix of a valid object; once the object is complete, only
// an end-of-generation token is; before, never one. Control tokens never
// come, nor tokens that write nothing.
//
// With a compiled JSON schema (OpenAI's response_format "json_schema",
// decode --json-schema; model/json_schema.h) the output is instead one
// document the schema accepts (model/json_schema_nfa.h), of any type
// the schema allows; text stops once nothing but whitespace could follow.
// defines: JsonVocab, json_vocab(), JsonConstraint
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/json_grammar.h"
#include "model/json_schema.h"
#include "model/json_schema_nfa.h"
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
  // Without a schema: JSON mode (any object).
  explicit JsonConstraint(std::shared_ptr<const JsonVocab> vocab,
                          std::shared_ptr<const JsonSchema> schema = nullptr);
  bool allows(int32_t token) const override;
  void accept(int32_t token) override;
  void reset() override;
  bool complete() const { return schema_ ? typed_->complete() : grammar_.complete(); }

 private:
  std::shared_ptr<const JsonVocab> vocab_;
  std::shared_ptr<const JsonSchema> schema_;  // null: JSON mode
  JsonGrammar grammar_{true};
  std::optional<JsonSchemaNfa> typed_;  // with schema_
};

}  // namespace ls
