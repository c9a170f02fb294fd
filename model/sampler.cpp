// The token sampler: see sampler.h for the chain and its guarantees.
// defines: Sampler
#include "model/sampler.h"

#include <algorithm>
#include <cassert>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <functional>
#include <limits>

namespace ls {

namespace {

// The candidate order, as one integer: higher logit first, lower id first
// among equals. A total order, so nth_element/sort give the same sequence with
// any library, and integer compares are cheaper than (float, id) pairs.
// Floats map to uint32 preserving order: negatives have every bit flipped,
// non-negatives the sign bit set. (-0 is made +0 before, so they tie.)
uint64_t candidate_key(float logit, int32_t id) {
  uint32_t bits;
  std::memcpy(&bits, &logit, sizeof bits);
  const uint32_t ord = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
  return (uint64_t(ord) << 32) | uint64_t(0xFFFFFFFFu - uint32_t(id));
}
int32_t candidate_id(uint64_t key) {
  return int32_t(0xFFFFFFFFu - uint32_t(key));
}

bool penalty_on(const SamplerParams& p) {
  return (p.repeat_penalty != 1.0f || p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f) &&
         p.repeat_last_n != 0;
}

uint64_t pick_seed(uint64_t requested) {
  if (requested != kSamplerRandomSeed) return requested;
  std::random_device rd;  // 32 bits a call
  uint64_t s;
  do {  // never report the "random" sentinel as the seed used: it would not replay
    s = (uint64_t(rd()) << 32) | uint64_t(rd());
  } while (s == kSamplerRandomSeed);
  return s;
}

}  // namespace

Sampler::Sampler(const SamplerParams& p, int32_t n_vocab)
    : params_(p), n_vocab_(n_vocab), seed_(pick_seed(p.seed)), rng_(seed_) {
  assert(n_vocab > 0);
  work_.resize(size_t(n_vocab_));
  cand_.resize(size_t(n_vocab_));
  prob_.resize(size_t(n_vocab_));
  if (penalty_on(params_)) {
    if (params_.repeat_last_n > 0) ring_.resize(size_t(params_.repeat_last_n));
    count_.assign(size_t(n_vocab_), 0);
    pos_.assign(size_t(n_vocab_), -1);
    distinct_.reserve(size_t(n_vocab_));  // at most every token once: push_back never grows it
  }
}

void Sampler::reset() {
  rng_.seed(seed_);
  if (constraint_) constraint_->reset();
  for (int32_t t : distinct_) {
    count_[size_t(t)] = 0;
    pos_[size_t(t)] = -1;
  }
  distinct_.clear();
  ring_head_ = 0;
  ring_size_ = 0;
}

void Sampler::history_add(int32_t t) {
  if (count_[size_t(t)]++ == 0) {
    pos_[size_t(t)] = int32_t(distinct_.size());
    distinct_.push_back(t);
  }
}

void Sampler::history_remove(int32_t t) {
  if (--count_[size_t(t)] == 0) {
    const int32_t i = pos_[size_t(t)];
    const int32_t last = distinct_.back();
    distinct_[size_t(i)] = last;
    pos_[size_t(last)] = i;
    distinct_.pop_back();
    pos_[size_t(t)] = -1;
  }
}

void Sampler::accept(int32_t token) {
  assert(token >= 0 && token < n_vocab_);
  if (token < 0 || token >= n_vocab_) return;
  if (constraint_) constraint_->accept(token);
  if (!penalty_on(params_)) return;
  if (!ring_.empty()) {  // finite window: the oldest token leaves when it is full
    if (ring_size_ == ring_.size()) {
      history_remove(ring_[ring_head_]);
    } else {
      ++ring_size_;
    }
    ring_[ring_head_] = token;
    ring_head_ = (ring_head_ + 1) % ring_.size();
  }
  history_add(token);
}

// llama.cpp's rule, once per distinct token in the window: a positive logit
// is divided by the repeat penalty, the others multiplied; then the count
// times the frequency penalty and the presence penalty are subtracted.
void Sampler::apply_penalty() {
  const float p = params_.repeat_penalty;
  const float freq = params_.frequency_penalty, pres = params_.presence_penalty;
  for (int32_t t : distinct_) {
    float& l = work_[size_t(t)];
    l = l <= 0.0f ? l * p : l / p;
    l -= float(count_[size_t(t)]) * freq + pres;
  }
}

// In the order given (a token listed twice gets both); ids outside the
// vocabulary are skipped (the callers check them: the server's 400 names
// the id).
void Sampler::apply_bias() {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (const auto& [t, b] : params_.logit_bias) {
    if (t < 0 || t >= n_vocab_) continue;
    float& l = work_[size_t(t)];
    l = b <= kSamplerBan ? kNegInf : std::min(l + b, FLT_MAX);  // finite, as the copy made it
  }
}

// The largest value first, then the first index holding it (ties keep the
// lowest id; work_ has no NaN). Two passes with no dependence from one
// element to the next: the one-pass loop, whose every compare waited for
// the load of work_[best], took ~0.2 ms of a 128k vocabulary, 5 % of a
// token of a resident 8b on the H200.
namespace {
inline float clamp_top(float x) {
  return x > FLT_MAX ? FLT_MAX : x;
}
}  // namespace

// Values are taken as distribution() cleans them: NaN loses to everything
// (a compare with NaN is false), +inf counts as the largest float, -0 ties
// +0. Two passes with no dependence from one element to the next (the
// largest value, then the first index holding it): the one-pass loop, whose
// every compare waited for the load of work_[best], took ~0.2 ms of a 128k
// vocabulary, 5 % of a token of a resident 8b on the H200.
int32_t greedy_argmax(const float* w, size_t n) {
  constexpr size_t kLanes = 16;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  float m[kLanes];
  for (size_t j = 0; j < kLanes; ++j) m[j] = kNegInf;
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j) {
      const float x = clamp_top(w[i + j]);
      m[j] = x > m[j] ? x : m[j];
    }
  float top = kNegInf;
  for (size_t j = 0; j < kLanes; ++j) top = m[j] > top ? m[j] : top;
  for (; i < n; ++i) top = clamp_top(w[i]) > top ? clamp_top(w[i]) : top;
  if (top == kNegInf) return 0;
  // The first block of 16 that holds top (a branch a block, not an element), then its index.
  size_t b = 0;
  for (; b + kLanes <= n; b += kLanes) {
    int hit = 0;
    for (size_t j = 0; j < kLanes; ++j) hit |= clamp_top(w[b + j]) == top;
    if (hit) break;
  }
  for (size_t k = b; k < n; ++k)
    if (clamp_top(w[k]) == top) return int32_t(k);
  return 0;
}

bool greedy_plain(const SamplerParams& p) {
  return p.temp <= 0.0f && !penalty_on(p) && p.logit_bias.empty();
}

int64_t logit_bias_outside(const SamplerParams& p, int32_t n_vocab) {
  for (const auto& [t, b] : p.logit_bias)
    if (t < 0 || t >= n_vocab) return t;
  return -1;
}

int32_t Sampler::argmax() const {
  return greedy_argmax(work_.data(), size_t(n_vocab_));
}

double Sampler::uniform01() {
  return double(rng_() >> 11) * 0x1.0p-53;  // 53 random bits: every double in [0, 1) on the grid
}

Sampler::Dist Sampler::distribution(const float* logits, bool masked) {
  const size_t n = size_t(n_vocab_);
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  // Greedy with no penalty: the argmax of the row as it is (the same id as
  // of the cleaned copy below), without making the copy: ~0.1-0.2 ms of a
  // 128k vocabulary a token otherwise.
  if (greedy_plain(params_) && !masked) return {greedy_argmax(logits, n), 0, 0.0};
  // Copy, with NaN as -inf, +inf as the largest float and -0 as +0, so the
  // order is total and differences of logits stay finite.
  for (size_t i = 0; i < n; ++i) {
    float l = logits[i];
    if (std::isnan(l)) l = kNegInf;
    if (l > FLT_MAX) l = FLT_MAX;
    if (l == 0.0f) l = 0.0f;
    work_[i] = l;
  }
  apply_bias();
  if (penalty_on(params_)) apply_penalty();
  if (masked)
    for (size_t i = 0; i < n; ++i)
      if (!constraint_->allows(int32_t(i))) work_[i] = kNegInf;
  const int32_t best = argmax();
  // Greedy, and the degenerate row where every token is masked out.
  if (params_.temp <= 0.0f || work_[size_t(best)] == kNegInf) return {best, 0, 0.0};
  const float top = work_[size_t(best)];  // every filter keeps it
  auto logit = [&](uint64_t key) { return work_[size_t(candidate_id(key))]; };
  auto begin = cand_.begin();
  const std::greater<uint64_t> before;  // larger key first

  for (size_t i = 0; i < n; ++i) cand_[i] = candidate_key(work_[i], int32_t(i));
  size_t n_cand = n;
  size_t n_sorted = 0;  // cand_[0, n_sorted) is in order and ahead of the rest

  // top-k: O(n) selection, then sort only the k kept.
  if (params_.top_k > 0 && size_t(params_.top_k) < n) {
    const size_t k = size_t(params_.top_k);
    std::nth_element(begin, begin + std::ptrdiff_t(k), cand_.end(), before);
    std::sort(begin, begin + std::ptrdiff_t(k), before);
    n_cand = n_sorted = k;
  }

  // top-p: the smallest prefix (by probability, before temperature) whose
  // mass reaches p; at least one token.
  if (params_.top_p < 1.0f) {
    const double p = double(params_.top_p);
    double z = 0.0;
    for (size_t i = 0; i < n_cand; ++i) z += std::exp(double(logit(cand_[i])) - double(top));
    // Unsorted (top-k off): select growing prefixes until one holds mass p,
    // then sort only that one. The top-m set is unique under the total order,
    // so this equals sorting everything.
    for (size_t m = 256; n_sorted < n_cand; m *= 4) {
      if (m >= n_cand) {
        std::sort(begin, begin + std::ptrdiff_t(n_cand), before);
        n_sorted = n_cand;
        break;
      }
      std::nth_element(begin, begin + std::ptrdiff_t(m), begin + std::ptrdiff_t(n_cand), before);
      double mass = 0.0;
      for (size_t i = 0; i < m; ++i) mass += std::exp(double(logit(cand_[i])) - double(top));
      if (mass >= p * z) {
        std::sort(begin, begin + std::ptrdiff_t(m), before);
        n_sorted = m;
        break;
      }
    }
    double cum = 0.0;
    size_t kept = n_sorted;  // mass p reached within the sorted prefix, up to rounding
    for (size_t i = 0; i < n_sorted; ++i) {
      cum += std::exp(double(logit(cand_[i])) - double(top)) / z;
      if (cum >= p) {
        kept = i + 1;
        break;
      }
    }
    n_cand = kept;
  }

  // min-p: keep logits >= max + log(min_p), i.e. probability >= min_p times
  // the largest one (before temperature); the largest is always kept.
  if (params_.min_p > 0.0f) {
    const float threshold = std::min(top, top + std::log(params_.min_p));
    size_t kept = 0;
    for (size_t i = 0; i < n_cand; ++i) {  // stable compaction: the order stays
      if (logit(cand_[i]) >= threshold) cand_[kept++] = cand_[i];
    }
    n_cand = kept;
  }

  // temperature, softmax and the draw. (l - max) / t rather than l / t - max / t:
  // no inf - inf as t -> 0.
  const double inv_t = 1.0 / double(params_.temp);
  double sum = 0.0;
  for (size_t i = 0; i < n_cand; ++i) {
    prob_[i] = std::exp((double(logit(cand_[i])) - double(top)) * inv_t);
    sum += prob_[i];
  }
  return {best, n_cand, sum};
}

// The draw from the live set, skipping `skip` (-1: none) whose weight the
// caller took out of sum.
int32_t Sampler::draw(const Dist& d, double sum, int32_t skip) {
  const double u = uniform01() * sum;
  double cum = 0.0;
  size_t last_nonzero = SIZE_MAX;
  for (size_t i = 0; i < d.n; ++i) {
    if (prob_[i] == 0.0 || candidate_id(cand_[i]) == skip) continue;  // never drawn
    cum += prob_[i];
    last_nonzero = i;
    if (u < cum) return candidate_id(cand_[i]);
  }
  return last_nonzero == SIZE_MAX ? d.best : candidate_id(cand_[last_nonzero]);  // u rounded up
}

int32_t Sampler::sample(const float* logits) {
  Dist d = distribution(logits);
  const int32_t t = d.n == 0 ? d.best : draw(d, d.sum, -1);
  if (!constraint_ || constraint_->allows(t)) return t;
  d = distribution(logits, true);
  return d.n == 0 ? d.best : draw(d, d.sum, -1);
}

int32_t Sampler::verify(const float* logits, int32_t draft, double bias) {
  assert(!constraint_ && "speculative decoding runs unconstrained");
  const Dist d = distribution(logits);
  if (d.n == 0) return d.best;  // greedy: the draft stands only if it is the argmax
  double p_draft = 0.0;
  for (size_t i = 0; i < d.n; ++i)
    if (candidate_id(cand_[i]) == draft) p_draft = prob_[i];
  // Accept with probability p(draft) (the draft's own q is 1: min(1, p/q) = p).
  if (uniform01() * d.sum < bias * p_draft) return draft;
  // Rejected: the residual max(0, p - q) normalised, i.e. p without the draft.
  const double rest = d.sum - p_draft;
  return rest > 0.0 ? draw(d, rest, draft) : draft;
}

}  // namespace ls
