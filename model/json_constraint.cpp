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

bool JsonConstraint::allows(int32_t t) const {
  if (t < 0 || static_cast<size_t>(t) >= vocab_->kind.size()) return false;
  switch (vocab_->kind[static_cast<size_t>(t)]) {
    case JsonVocab::EndOfGeneration:
      return grammar_.complete();
    case JsonVocab::Text:
      return !grammar_.complete() && grammar_.accepts(vocab_->bytes[static_cast<size_t>(t)]);
    default:
      return false;
  }
}

void JsonConstraint::accept(int32_t t) {
  if (t < 0 || static_cast<size_t>(t) >= vocab_->kind.size()) return;
  if (vocab_->kind[static_cast<size_t>(t)] == JsonVocab::Text)
    (void)grammar_.feed(vocab_->bytes[static_cast<size_t>(t)]);
}

}  // namespace ls
