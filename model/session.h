// One sequence's conversation with a backend: feed tokens (a prompt is one
// batch, a generated token a batch of one), get the logits of the last one.
// The KV cache keeps everything fed so far, so chat turns continue it.
// defines: Session
#pragma once

#include <span>
#include <vector>

#include "model/backend.h"
#include "model/model.h"

namespace ls {

class Session {
 public:
  Session(const Model& m, Backend& be, uint32_t n_ctx, int32_t seq = 0);
  // Feed tokens at positions n_past..; returns the last token's logits
  // (n_vocab floats, valid until the next call). An error if they do not fit.
  Expected<const float*> feed(std::span<const int32_t> tokens);
  uint32_t n_past() const { return n_past_; }
  uint32_t n_ctx() const { return n_ctx_; }

 private:
  const Model& m_;
  Backend& be_;
  uint32_t n_ctx_;
  int32_t seq_;
  uint32_t n_past_ = 0;
  Batch batch_;
  std::vector<float> logits_;
};

}  // namespace ls
