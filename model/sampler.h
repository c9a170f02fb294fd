// The token sampler: one row of logits in, one token id out, with the
// semantics of llama.cpp's default sampler chain:
//
//   logit bias -> penalties -> top-k -> top-p -> min-p -> temperature -> softmax -> draw
//
// The penalties (llama.cpp's "penalties" sampler) look at the last
// repeat_last_n tokens of the context: a token that occurs c > 0 times there
// has its logit divided by repeat_penalty (multiplied, if it is not
// positive), then lowered by c * frequency_penalty + presence_penalty
// (OpenAI's two penalties, in that window). A logit bias is added to its
// token's logit first; a bias of -100 or less bans the token (OpenAI's
// meaning of -100), as -inf.
//
// temp <= 0 is greedy: the argmax after the bias and the penalties, ties to
// the lowest id (the filters in between always keep the argmax, so they are
// skipped).
//
// Determinism: the draw uses std::mt19937_64, whose output sequence the C++
// standard fixes, and turns its raw 64-bit output into a uniform double itself
// (std::*_distribution is implementation-defined). Candidates are ordered by
// (logit descending, id ascending), a total order, so ties sort the same way
// with any standard library. Same seed, same logits => same tokens everywhere.
//
// Cost per call: O(n_vocab) for the copy, the penalty and top-k
// (nth_element on integer keys). With top-k off, top-p selects a growing
// prefix (256, 1024, ... tokens) until it holds mass p, and sorts only that,
// so a full sort of the vocabulary happens only for a nearly flat row. No
// allocation after construction: every scratch buffer is a member sized to
// n_vocab.
// defines: SamplerParams, kSamplerRandomSeed, kSamplerBan, greedy_plain(), logit_bias_outside(),
//          greedy_argmax(), Sampler
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "model/token_constraint.h"

namespace ls {

// llama.cpp's LLAMA_DEFAULT_SEED: "pick a random seed" (then report it).
inline constexpr uint64_t kSamplerRandomSeed = 0xFFFFFFFF;
// A logit bias at or below this bans its token (OpenAI: "-100 should result
// in a ban").
inline constexpr float kSamplerBan = -100.0f;

struct SamplerParams {
  float temp = 0.8f;            // <= 0 means greedy (llama.cpp: --temp 0 is greedy)
  int32_t top_k = 40;           // <= 0: off
  float top_p = 0.95f;          // >= 1: off
  float min_p = 0.05f;          // <= 0: off
  float repeat_penalty = 1.0f;  // 1: off
  int32_t repeat_last_n = 64;   // recent tokens the penalties look at (0: off, -1: whole context)
  float frequency_penalty = 0.0f;  // minus this for each occurrence in the window (0: off)
  float presence_penalty = 0.0f;   // minus this once for a token in the window (0: off)
  // (token id, bias) added to the logit; a bias <= kSamplerBan bans the token.
  std::vector<std::pair<int32_t, float>> logit_bias;
  uint64_t seed = kSamplerRandomSeed;  // kSamplerRandomSeed: one from std::random_device
};

// Greedy with no penalty and no bias: the token is the argmax of the row as
// it comes, so it can be taken where the logits are (Backend::finish_argmax).
bool greedy_plain(const SamplerParams& p);

// The first logit_bias token id outside the vocabulary [0, n_vocab), or -1
// (the sampler skips such ids; the tools refuse them).
int64_t logit_bias_outside(const SamplerParams& p, int32_t n_vocab);

// The greedy token of a row: the largest value (NaN loses to everything,
// +inf counts as the largest float), ties to the lowest id; a row with
// nothing above -inf gives 0. What Sampler::sample returns for the row when
// greedy_plain(its params).
int32_t greedy_argmax(const float* row, size_t n);

class Sampler {
 public:
  explicit Sampler(const SamplerParams& p, int32_t n_vocab);

  // Choose the next token from one row of logits (n_vocab floats; not modified).
  // With a constraint: the token drawn if the constraint allows it, else the
  // draw again over the row with every token it does not allow masked out.
  int32_t sample(const float* logits);
  // Constrained decoding (model/token_constraint.h): the tokens accepted from
  // now on advance it, and sample() keeps to what it allows. Set it after
  // accepting the prompt's tokens. verify() does not take one (speculative
  // decoding runs unconstrained).
  void set_constraint(std::unique_ptr<TokenConstraint> c) { constraint_ = std::move(c); }
  const TokenConstraint* constraint() const { return constraint_.get(); }
  // Speculative sampling (Leviathan et al. 2023, Chen et al. 2023) for a
  // draft proposed with certainty (a deterministic draft: its q is a point
  // mass): returns `draft` with probability p(draft), p this sampler's
  // distribution for the row (the whole chain: penalty, filters,
  // temperature), else a token drawn from p without the draft, renormalised
  // (the residual max(0, p - q)). So the token returned follows p exactly,
  // as sample() does. Greedy (temp <= 0): the argmax, which equals the draft
  // exactly when plain greedy decoding would have chosen it. bias: tests
  // only (accept with probability bias * p(draft): a wrong acceptor that the
  // statistical test must catch).
  int32_t verify(const float* logits, int32_t draft, double bias = 1.0);
  // Record a token that is now part of the context (prompt tokens and sampled
  // ones), for the repeat penalty. O(1).
  void accept(int32_t token);
  // Forget the history and re-seed with seed(): a reset sampler repeats the
  // draws of a fresh one.
  void reset();
  // The seed actually used (the random one when params.seed was kSamplerRandomSeed).
  uint64_t seed() const { return seed_; }
  const SamplerParams& params() const { return params_; }

 private:
  // The chain up to the draw: greedy (n = 0: the answer is best), or the
  // live candidates cand_[0, n) with their unnormalised prob_, summing to sum.
  struct Dist {
    int32_t best;
    size_t n;
    double sum;
  };
  Dist distribution(const float* logits, bool masked = false);
  int32_t draw(const Dist& d, double sum, int32_t skip);
  void apply_penalty();    // on work_
  void apply_bias();       // on work_
  int32_t argmax() const;  // of work_, lowest id on ties
  double uniform01();      // [0, 1) from 53 raw bits
  void history_add(int32_t token);
  void history_remove(int32_t token);

  SamplerParams params_;
  int32_t n_vocab_;
  uint64_t seed_;
  std::mt19937_64 rng_;

  // Scratch, sized once.
  std::vector<float> work_;  // (n_vocab) logits after the penalty
  // (n_vocab) the candidate set, first n_cand live, as sort keys: the logit's
  // bits made order-preserving in the high half, 0xFFFFFFFF - id in the low
  // half, so a larger key is a larger logit, or the lower id among equals.
  std::vector<uint64_t> cand_;
  std::vector<double> prob_;  // (n_vocab) unnormalised probabilities of the live set

  // The penalties' history: the window as a ring buffer, and per token its
  // count in the window, plus the distinct tokens present (swap-remove list,
  // pos_ is each token's index in it) so the penalty touches each once.
  std::vector<int32_t> ring_;  // (repeat_last_n) when the window is finite
  size_t ring_head_ = 0, ring_size_ = 0;
  std::vector<int32_t> count_;     // (n_vocab)
  std::vector<int32_t> distinct_;  // capacity n_vocab
  std::vector<int32_t> pos_;       // (n_vocab) index into distinct_, -1 if absent

  std::unique_ptr<TokenConstraint> constraint_;  // null: none
};

}  // namespace ls
