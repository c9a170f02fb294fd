#include "model/session.h"

namespace ls {

Session::Session(const Model& m, Backend& be, uint32_t n_ctx, int32_t seq)
    : m_(m), be_(be), n_ctx_(n_ctx), seq_(seq), logits_(m.config().n_vocab) {}

Expected<const float*> Session::feed(std::span<const int32_t> tokens) {
  if (tokens.empty()) return make_error("nothing to feed");
  if (n_past_ + tokens.size() > n_ctx_)
    return make_error("%zu more tokens do not fit in the context: %u of %u positions are used",
                      tokens.size(), n_past_, n_ctx_);
  batch_.clear();
  for (size_t i = 0; i < tokens.size(); ++i)
    batch_.add(tokens[i], static_cast<int32_t>(n_past_ + i), seq_, i + 1 == tokens.size());
  LS_TRY(forward_resident(m_, be_, batch_, logits_.data()));
  n_past_ += static_cast<uint32_t>(tokens.size());
  return static_cast<const float*>(logits_.data());
}

}  // namespace ls
