// Log probabilities of a step's tokens, as OpenAI's `logprobs` reports them:
// the log-softmax of the model's row of logits (before any sampling setting:
// temperature, penalties and filters change what is drawn, not what the
// model said), for the token chosen and for the top_n most likely ones.
// NaN counts as -inf, as in the sampler. O(n_vocab) a call.
// defines: TokenLogprobs, kMaxTopLogprobs, token_logprobs()
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace ls {

inline constexpr int kMaxTopLogprobs = 20;  // OpenAI's top_logprobs limit

struct TokenLogprobs {
  int32_t token = -1;
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top;  // most likely first, ties to the lower id
};

// top_n: 0..kMaxTopLogprobs (clamped).
TokenLogprobs token_logprobs(const float* row, int32_t n_vocab, int32_t token, int top_n);

}  // namespace ls
