#include "model/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ls {

TokenLogprobs token_logprobs(const float* row, int32_t n_vocab, int32_t token, int top_n) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  auto at = [&](int32_t i) {
    const float l = row[i];
    return std::isnan(l) ? kNegInf : l;
  };
  top_n = std::clamp(top_n, 0, std::min(kMaxTopLogprobs, n_vocab));
  float mx = kNegInf;
  for (int32_t i = 0; i < n_vocab; ++i) mx = std::max(mx, at(i));
  // log sum exp, in double: a 128k-token vocabulary sums many small terms.
  double z = 0;
  if (mx > kNegInf)
    for (int32_t i = 0; i < n_vocab; ++i) z += std::exp(double(at(i)) - double(mx));
  const double lz = double(mx) + std::log(z);
  auto lp = [&](int32_t i) {
    const float l = at(i);
    return l == kNegInf || !(mx > kNegInf) ? kNegInf : float(double(l) - lz);
  };
  TokenLogprobs r;
  r.token = token;
  r.logprob = token >= 0 && token < n_vocab ? lp(token) : kNegInf;
  if (top_n == 0) return r;
  // The top_n by logit (ties: the lower id), kept sorted as the row is read.
  auto better = [&](int32_t a, int32_t b) { return at(a) > at(b) || (at(a) == at(b) && a < b); };
  std::vector<int32_t> best;
  best.reserve(size_t(top_n) + 1);
  for (int32_t i = 0; i < n_vocab; ++i) {
    if (int(best.size()) == top_n && !better(i, best.back())) continue;
    best.insert(std::upper_bound(best.begin(), best.end(), i, better), i);
    if (int(best.size()) > top_n) best.pop_back();
  }
  r.top.reserve(best.size());
  for (int32_t i : best) r.top.emplace_back(i, lp(i));
  return r;
}

}  // namespace ls
