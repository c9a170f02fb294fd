// OpenAI's logprobs (model/logprobs.h) against a plain double-precision
// log-softmax: the chosen token's value, the top-n order (ties to the lower
// id), NaN and -inf rows, and top_n past the vocabulary.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "model/logprobs.h"

using namespace ls;

namespace {

std::vector<double> log_softmax(const std::vector<float>& row) {
  double mx = -INFINITY;
  for (float l : row)
    if (!std::isnan(l)) mx = std::max(mx, double(l));
  double z = 0;
  for (float l : row)
    if (!std::isnan(l)) z += std::exp(double(l) - mx);
  std::vector<double> out;
  for (float l : row) out.push_back(std::isnan(l) ? -INFINITY : double(l) - mx - std::log(z));
  return out;
}

}  // namespace

TEST_CASE("logprobs: the chosen token and the top n match a double log-softmax") {
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  for (int n : {1, 7, 4096}) {
    std::vector<float> row(static_cast<size_t>(n));
    for (float& l : row) l = dist(rng);
    if (n > 4) row[3] = row[1];  // a tie
    const std::vector<double> ref = log_softmax(row);
    std::vector<int32_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return row[size_t(a)] > row[size_t(b)]; });
    for (int top : {0, 1, 5, 20, 50}) {
      CAPTURE(n);
      CAPTURE(top);
      const int32_t chosen = n / 2;
      const TokenLogprobs lp = token_logprobs(row.data(), n, chosen, top);
      CHECK(lp.token == chosen);
      CHECK(lp.logprob == doctest::Approx(ref[size_t(chosen)]).epsilon(1e-5));
      const size_t want = size_t(std::min({top, n, kMaxTopLogprobs}));
      REQUIRE(lp.top.size() == want);
      for (size_t i = 0; i < want; ++i) {
        CHECK(lp.top[i].first == order[i]);  // stable: equal logits keep the lower id first
        CHECK(lp.top[i].second == doctest::Approx(ref[size_t(order[i])]).epsilon(1e-5));
      }
    }
  }
  // The probabilities of a whole (small) vocabulary sum to 1.
  const std::vector<float> small = {0.5f, -1.0f, 2.0f, 0.0f};
  const TokenLogprobs all = token_logprobs(small.data(), 4, 2, 4);
  double sum = 0;
  for (const auto& [id, v] : all.top) sum += std::exp(double(v));
  CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));
  CHECK(all.top[0].first == 2);
}

TEST_CASE("logprobs: NaN and -inf logits count as no chance") {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> row = {1.0f, std::numeric_limits<float>::quiet_NaN(), -inf, 1.0f};
  const TokenLogprobs lp = token_logprobs(row.data(), 4, 1, 4);
  CHECK(lp.logprob == -inf);
  REQUIRE(lp.top.size() == 4);
  CHECK(lp.top[0].first == 0);
  CHECK(lp.top[1].first == 3);
  CHECK(lp.top[0].second == doctest::Approx(std::log(0.5)));
  CHECK(lp.top[2].second == -inf);
  CHECK(lp.top[3].second == -inf);
  // A row with nothing above -inf: every value -inf, no NaN.
  const std::vector<float> none = {-inf, -inf};
  const TokenLogprobs z = token_logprobs(none.data(), 2, 0, 2);
  CHECK(z.logprob == -inf);
  CHECK(z.top[0].second == -inf);
}
