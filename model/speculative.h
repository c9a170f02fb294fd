// Speculative decoding's logic, apart from any engine: drafts that propose
// the next tokens, the check of a verify step's rows against them, and the
// choice of how many to propose.
//
// A verify step feeds the target the last accepted token and the K drafts
// (one step of width K + 1: when the weights are streamed, it costs about
// what a step of width 1 does), which gives K + 1 rows of logits: row i is
// the target's distribution for the token after draft i (row 0: after the
// last accepted token). spec_verify walks them with Sampler::verify: draft
// i + 1 stands while the target would have produced it; at the first that
// does not, the token the target produces there ends the step; when all
// stand, row K gives one more token. So each step emits accepted + 1
// tokens, and the sequence is the target's own: token for token plain
// greedy decoding with greedy sampling, the target's distribution with
// sampling (Sampler::verify's rejection scheme).
//
// Drafts here are deterministic (a proposal is made with certainty), which
// keeps Sampler::verify's acceptance rule simple and exact:
//   lookup   prompt lookup: the tokens that followed the latest earlier
//            occurrence of the context's last n tokens (n = 3, 2, 1), no model;
//   replay   a benchmark tool: the target's own earlier greedy output with
//            exactly round((1 - alpha) * N) of its N positions replaced by a
//            wrong token (a seeded random subset, fixed whatever K is), so a
//            verify pipeline can be measured at a known acceptance rate.
// A draft model (greedy proposals from a small model) is in
// tools/decode_speculative.cpp: it needs an engine.
//
// SpecK picks K per step from what the steps measured: the acceptance rate
// (per drafted token, over the run) and the cost of drafting a token and of
// a verify step at each width, maximising the expected tokens per second
// (E[accepted] + 1) / (K · draft cost + verify cost(K + 1)), where E[accepted]
// = E[a + a^2 + ... + a^K] for a chain at acceptance a, the expectation over
// a's posterior given the run's drafts (Beta(accepted + 1, rejected + 1));
// with few drafts behind it that is more than the same sum at a's mean, so
// a run's first rejections do not cut K as if the rate were already known
// (session 43: with the routing's predictions, 40 steps at acceptance 0.7 on
// the 70b's costs 1.644 against 1.620 tokens a plain step's time, the best
// fixed K 1.698; tests/unit/model/test_speculative.cpp).
// defines: Draft, LookupDraft, ReplayDraft, SpecVerified, spec_verify(), SpecK
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "model/sampler.h"

namespace ls {

class Draft {
 public:
  virtual ~Draft() = default;
  virtual std::string name() const = 0;
  // Up to k tokens to follow ctx (every token so far: prompt and output).
  virtual std::vector<int32_t> propose(std::span<const int32_t> ctx, int k) = 0;
  // Whether proposing takes long enough that the verify step's routing
  // should not wait for it (a model's passes): the decoder then announces
  // the step's width bound, K + 1, before it drafts (Pipeline::announce_width).
  // A draft that often proposes fewer than k would have its step routed for a
  // wider one, so a quick one says no.
  virtual bool slow() const { return false; }
};

class LookupDraft : public Draft {
 public:
  explicit LookupDraft(int ngram_max = 3, int ngram_min = 1) : max_(ngram_max), min_(ngram_min) {}
  std::string name() const override { return "lookup"; }
  std::vector<int32_t> propose(std::span<const int32_t> ctx, int k) override;

 private:
  int max_, min_;
};

class ReplayDraft : public Draft {
 public:
  // tokens: the target's greedy output after a prompt of n_prompt tokens;
  // alpha: the share of its positions proposed right (exactly, to the
  // nearest position).
  ReplayDraft(std::vector<int32_t> tokens, double alpha, size_t n_prompt, int32_t n_vocab,
              uint64_t seed = 1);
  std::string name() const override { return "replay"; }
  std::vector<int32_t> propose(std::span<const int32_t> ctx, int k) override;
  // Positions of the file proposed wrong, and of all of them.
  size_t n_wrong() const { return n_wrong_; }
  size_t size() const { return tokens_.size(); }

 private:
  std::vector<int32_t> tokens_;
  std::vector<uint8_t> wrong_;  // per position of tokens_
  size_t n_wrong_ = 0;
  size_t n_prompt_;
  int32_t n_vocab_;
};

// What one verify step gave.
struct SpecVerified {
  std::vector<int32_t> tokens;  // emitted: the accepted drafts, then the target's token
  int accepted = 0;             // drafts that stood
};
// rows: drafts.size() + 1 rows of n_vocab logits (see the top). Each emitted
// token is also accepted into the sampler (its repeat-penalty history).
SpecVerified spec_verify(Sampler& s, const float* rows, size_t n_vocab,
                         std::span<const int32_t> drafts);

class SpecK {
 public:
  SpecK(int k_min, int k_max) : k_min_(k_min), k_max_(k_max) {}
  // K for the next verify step.
  int next();
  // A step proposed k (and drafting took draft_s) and k + 1 tokens were
  // verified in verify_s, accepting `accepted`.
  void record(int k, int accepted, double draft_s, double verify_s);
  double acceptance() const;  // per drafted token, with a prior of 1 in 2
  // Predicted seconds of a verify step at a width (0: no prediction), for
  // the widths no step has measured yet: the engine's width routing
  // simulates a step at every width from its own measurements
  // (Pipeline::predicted_step_s), so a run need not try a width to know
  // roughly what it costs. Without it, or where it says 0, the rule of
  // verify_cost below.
  void set_prior(std::function<double(int width)> prior) { prior_ = std::move(prior); }

 private:
  double verify_cost(int width) const;
  std::function<double(int)> prior_;
  int k_min_, k_max_;
  double drafted_ = 0, accepted_ = 0, trials_ = 0, draft_s_ = 0;
  int64_t steps_ = 0;
  struct Cost {
    double sum = 0;     // seconds of the counted steps
    int n = 0;          // steps counted (all but the first)
    double first = 0;   // seconds of the first step
    bool seen = false;  // a step at this width was made
  };
  std::map<int, Cost> verify_;  // by width
};

}  // namespace ls
