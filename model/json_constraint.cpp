#include "model/json_constraint.h"

#include <cstddef>

namespace ls {

std::shared_ptr<const JsonVocab> json_vocab(const Tokenizer& tok) {
  auto v = std::make_shared<JsonVocab>();
  const int32_t n = tok.n_vocab();
  v->bytes.resize(static_cast<size_t>(n));
  v->kind.resize(static_cast<size_t>(n), JsonVocab::Never);
  for (int32_t t = 0; t < n; ++t) {
    if (tok.is_eog(t)) {
      v->kind[static_cast<size_t>(t)] = JsonVocab::EndOfGeneration;
    } else if (!tok.is_control(t)) {
      v->bytes[static_cast<size_t>(t)] = tok.piece(t);
      if (!v->bytes[static_cast<size_t>(t)].empty())
        v->kind[static_cast<size_t>(t)] = JsonVocab::Text;
    }
  }
  return v;
}

JsonConstraint::JsonConstraint(std::shared_ptr<const JsonVocab> vocab,
                               std::shared_ptr<const JsonSchema> schema)
    : vocab_(std::move(vocab)), schema_(std::move(schema)) {
  reset();
}

void JsonConstraint::reset() {
  grammar_ = JsonGrammar(true);
  if (schema_) typed_.emplace(*schema_);
}

bool JsonConstraint::allows(int32_t t) const {
  if (t < 0 || static_cast<size_t>(t) >= vocab_->kind.size()) return false;
  switch (vocab_->kind[static_cast<size_t>(t)]) {
    case JsonVocab::EndOfGeneration:
      return complete();
    case JsonVocab::Text:
      // A top-level number is complete yet may go on: text stops only when
      // nothing but whitespace could follow.
      if (schema_)
        return !typed_->closed() && typed_->accepts(vocab_->bytes[static_cast<size_t>(t)]);
      return !grammar_.complete() && grammar_.accepts(vocab_->bytes[static_cast<size_t>(t)]);
    default:
      return false;
  }
}

void JsonConstraint::accept(int32_t t) {
  if (t < 0 || static_cast<size_t>(t) >= vocab_->kind.size()) return;
  if (vocab_->kind[static_cast<size_t>(t)] != JsonVocab::Text) return;
  if (schema_)
    (void)typed_->feed(vocab_->bytes[static_cast<size_t>(t)]);
  else
    (void)grammar_.feed(vocab_->bytes[static_cast<size_t>(t)]);
}

}  // namespace ls
