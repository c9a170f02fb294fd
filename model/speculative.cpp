// defines: LookupDraft::propose, ReplayDraft, spec_verify, SpecK (model/speculative.h)
#include "model/speculative.h"

#include <algorithm>
#include <cmath>

namespace ls {

std::vector<int32_t> LookupDraft::propose(std::span<const int32_t> ctx, int k) {
  const size_t len = ctx.size();
  for (int n = std::min<int>(max_, static_cast<int>(len) - 1); n >= min_ && n >= 1; --n) {
    const std::span<const int32_t> tail = ctx.subspan(len - n);
    // The latest earlier occurrence with at least one token after it.
    for (size_t j = len - n; j-- > 0;) {
      if (!std::equal(tail.begin(), tail.end(), ctx.begin() + j)) continue;
      const size_t from = j + n, to = std::min(len, from + static_cast<size_t>(k));
      return {ctx.begin() + from, ctx.begin() + to};
    }
  }
  return {};
}

namespace {
// splitmix64 of (seed, i).
uint64_t mix(uint64_t seed, uint64_t i) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
}  // namespace

// The wrong positions: the round((1 - alpha) * N) with the smallest keys,
// each position's key a hash of (seed, position), so a uniformly random
// subset of exactly that size, fixed for the file whatever K is. A coin per
// position (the rule before session 29) made the share right alpha only on
// average: for a 64-token file at 0.7 it gave 0.625, and the run was
// measured at an acceptance it did not state.
ReplayDraft::ReplayDraft(std::vector<int32_t> tokens, double alpha, size_t n_prompt,
                         int32_t n_vocab, uint64_t seed)
    : tokens_(std::move(tokens)),
      wrong_(tokens_.size(), 0),
      n_prompt_(n_prompt),
      n_vocab_(n_vocab) {
  const size_t n = tokens_.size();
  const double share = std::clamp(1.0 - alpha, 0.0, 1.0);
  const auto n_wrong = static_cast<size_t>(std::llround(share * static_cast<double>(n)));
  std::vector<std::pair<uint64_t, size_t>> keys(n);
  for (size_t g = 0; g < n; ++g) keys[g] = {mix(seed, g), g};
  std::sort(keys.begin(), keys.end());
  for (size_t i = 0; i < n_wrong; ++i) wrong_[keys[i].second] = 1;
  n_wrong_ = n_wrong;
}

std::vector<int32_t> ReplayDraft::propose(std::span<const int32_t> ctx, int k) {
  std::vector<int32_t> out;
  if (ctx.size() < n_prompt_) return out;
  for (size_t g = ctx.size() - n_prompt_; g < tokens_.size() && out.size() < size_t(k); ++g) {
    const int32_t t = tokens_[g];
    out.push_back(wrong_[g] ? (t + 1) % n_vocab_ : t);
  }
  return out;
}

SpecVerified spec_verify(Sampler& s, const float* rows, size_t n_vocab,
                         std::span<const int32_t> drafts) {
  SpecVerified v;
  for (size_t i = 0; i < drafts.size(); ++i) {
    const int32_t t = s.verify(rows + i * n_vocab, drafts[i]);
    s.accept(t);
    v.tokens.push_back(t);
    if (t != drafts[i]) return v;
    ++v.accepted;
  }
  const int32_t t = s.sample(rows + drafts.size() * n_vocab);
  s.accept(t);
  v.tokens.push_back(t);
  return v;
}

// With a prior of one accepted and one rejected draft: an estimate that
// never reaches 0 (a run of rejections does not stop drafting for good; a
// costly draft stops by its cost), 0.5 before any step.
double SpecK::acceptance() const {
  return (accepted_ + 1) / (trials_ + 2);
}

void SpecK::record(int k, int accepted, double draft_s, double verify_s) {
  drafted_ += k;
  accepted_ += accepted;
  // A chain stops at its first rejection: the drafts after it were not tried.
  trials_ += accepted + (accepted < k ? 1 : 0);
  draft_s_ += draft_s;
  // A width's first step is not counted: it may be a cold one (the engine's
  // first step at a new width allocates and faults in its scratch), and a
  // width measured once cold was never tried again.
  Cost& c = verify_[k + 1];
  if (c.seen) {
    c.sum += verify_s;
    ++c.n;
  } else {
    c.first = verify_s;
  }
  c.seen = true;
}

// A verify step's cost at a width, from what the steps measured (each
// width's steps but its first, SpecK::record): the mean where that width
// was measured, linear between two measured widths, and outside them:
//   - narrower than any measured: proportional to the width. That is the
//     least a step can cost (all of it per token), so a narrower K looks at
//     least as good as it may be and gets tried once, then measured.
//   - wider than any measured: the widest's cost. Again the least it can
//     be (a step costs no less for being wider), so a wider K gets tried
//     once. A line through the two widest was not: where the cost rises
//     steeply at narrow widths and then flattens (the 70b at 24 GiB: 1.15,
//     1.82, 1.90, 2.19 plain steps at widths 2, 4, 8, 16, s29 call 3) it
//     kept K = 1 where K = 7 runs 1.17x faster.
// Nothing measured: a prior, 1 + (width - 1) / 8 (only ratios matter), that
// starts a run at a small K rather than at the largest.
// With the engine's predictions (set_prior), a width not measured takes its
// prediction instead, scaled as below. Why: the rules above make a run try
// the widths it has not measured, one step each at least, and a 128-token
// run at acceptance 0.7 on the 70b at 24 GiB spent enough of its steps
// exploring to run at 10.5 tok/s where K = 7 ran at 13.2 (session 37); the
// routing's simulation predicted that run's width-8 step at 209 ms where
// it took 219.
// The rule before session 29 took the nearest measured width's cost: a run
// that began at K = 16 (every width the same cost with nothing measured)
// saw every narrower width cost what 17 did and stayed at 16 for good (the
// 70b at 24 GiB, replay at acceptance 0.7: 7.10 tok/s against 7.80 at a
// fixed K = 7, s29 call 2).
double SpecK::verify_cost(int width) const {
  // Until a width has a counted step, the first steps stand in (cold or
  // not, they are in seconds, as the draft's cost is: the prior is not).
  bool counted = false;
  for (const auto& [w, c] : verify_) counted |= c.n > 0;
  // The nearest measured widths at or below and at or above.
  int lo = 0, hi = 0;
  double c_lo = 0, c_hi = 0;
  for (const auto& [w, c] : verify_) {
    if (counted ? c.n == 0 : !c.seen) continue;
    const double mean = counted ? c.sum / c.n : c.first;
    if (w <= width) lo = w, c_lo = mean;
    if (w >= width && hi == 0) hi = w, c_hi = mean;
  }
  if (lo == width) return c_lo;
  // With a prediction: scaled by what the nearest measured width took
  // against its own prediction (1 where the routing measured the same
  // steps; it corrects a prediction that is off by a factor everywhere).
  if (const double p = prior_ ? prior_(width) : 0.0; p > 0) {
    const bool below = lo != 0 && (hi == 0 || width - lo <= hi - width);
    const int near = below ? lo : hi;
    const double p_near = near ? prior_(near) : 0.0;
    return p_near > 0 ? p * ((below ? c_lo : c_hi) / p_near) : p;
  }
  if (lo == 0 && hi == 0) return 1.0 + (width - 1) / 8.0;
  if (lo == 0) return c_hi * width / hi;
  if (hi == 0) return c_lo;
  return c_lo + (c_hi - c_lo) * double(width - lo) / double(hi - lo);
}

int SpecK::next() {
  ++steps_;
  const double c_draft = drafted_ > 0 ? draft_s_ / drafted_ : 0.0;
  // E[accepted] of a chain of k = sum over i <= k of E[a^i], the moments of
  // the acceptance's posterior, Beta(accepted + 1, rejected + 1): the
  // moment of a power, not the power of the mean (which Jensen puts below
  // it), so that a run's first rejections, with little behind them, do not
  // cut K as if the rate were known.
  const double alpha = accepted_ + 1, beta = trials_ - accepted_ + 1;
  std::vector<double> moment(static_cast<size_t>(std::max(k_max_, 0)) + 1, 1.0);
  for (int i = 1; i <= k_max_; ++i)
    moment[static_cast<size_t>(i)] =
        moment[static_cast<size_t>(i - 1)] * (alpha + i - 1) / (alpha + beta + i - 1);
  int best_k = k_min_;
  double best = -1;
  for (int k = k_min_; k <= k_max_; ++k) {
    double expect = 0;
    for (int i = 1; i <= k; ++i) expect += moment[static_cast<size_t>(i)];
    const double rate = (expect + 1) / (k * c_draft + verify_cost(k + 1));
    if (rate > best * (1 + 1e-9)) {
      best = rate;
      best_k = k;
    }
  }
  // Not drafting learns nothing more: every 16th step drafts a little
  // anyway, so a first bad estimate (a slow first draft, early rejections)
  // is measured again.
  if (best_k == 0 && k_max_ > 0 && steps_ % 16 == 0) return std::min(k_max_, 2);
  return best_k;
}

}  // namespace ls
