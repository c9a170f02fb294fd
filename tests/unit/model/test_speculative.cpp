// model/speculative.h and Sampler::verify: the drafts' proposals, the walk
// over a verify step's rows, the choice of K, and the statistics of
// speculative sampling (the tokens must follow the target's distribution: a
// chi-square test over many draws, which must also catch a wrong acceptor).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "model/sampler.h"
#include "model/speculative.h"

using namespace ls;

TEST_CASE("speculative: lookup proposes what followed the latest earlier occurrence") {
  LookupDraft d;
  const std::vector<int32_t> ctx = {1, 2, 3, 9, 1, 2, 3, 7, 8, 5, 1, 2, 3};
  // "1 2 3" last seen at 4..6, followed by 7 8 5 1 2 3.
  CHECK(d.propose(ctx, 3) == std::vector<int32_t>{7, 8, 5});
  CHECK(d.propose(ctx, 10) == std::vector<int32_t>{7, 8, 5, 1, 2, 3});
  CHECK(d.propose(std::vector<int32_t>{4, 5, 6}, 3).empty());  // nothing repeats
  // Shorter n-grams when the longer ones never occurred before.
  CHECK(d.propose(std::vector<int32_t>{6, 1, 4, 4, 1}, 2) == std::vector<int32_t>{4, 4});
}

TEST_CASE(
    "speculative: replay proposes the output with exactly a share alpha right, fixed per "
    "position") {
  std::vector<int32_t> out(4000);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int32_t>(i % 50);
  ReplayDraft d(out, 0.7, 2, 50);
  std::vector<int32_t> ctx = {40, 41};  // the prompt
  size_t right = 0;
  std::vector<int32_t> first;
  for (size_t g = 0; g < out.size(); g += 8) {
    ctx.resize(2 + g, 0);
    const std::vector<int32_t> p = d.propose(ctx, 8);
    REQUIRE(p.size() == std::min<size_t>(8, out.size() - g));
    for (size_t i = 0; i < p.size(); ++i) right += p[i] == out[g + i];
    if (g == 0) first = p;
  }
  CHECK(right == 2800);  // 0.7 of 4000, not about it
  CHECK(d.n_wrong() == 1200);
  ctx.resize(2);
  CHECK(d.propose(ctx, 8) == first);  // the same positions are wrong every time
  // A short file: round(0.3 * 64) = 19 wrong, whatever the seed (a coin per
  // position gave 40 right with seed 1, 0.625 for 0.7); the wrong ones
  // spread over the file, not bunched at one end.
  for (uint64_t seed : {1u, 2u, 3u}) {
    const std::vector<int32_t> out64(out.begin(), out.begin() + 64);
    ReplayDraft r(out64, 0.7, 0, 50, seed);
    const std::vector<int32_t> p = r.propose(std::vector<int32_t>{}, 64);
    REQUIRE(p.size() == 64);
    int right64 = 0, wrong_first_half = 0;
    for (size_t i = 0; i < 64; ++i) {
      right64 += p[i] == out64[i];
      wrong_first_half += i < 32 && p[i] != out64[i];
    }
    CHECK(right64 == 45);
    // 19 at one end would put 0 or 19 in the first half; a random subset
    // puts 9.5 on average (hypergeometric, sd 2.2).
    CHECK(wrong_first_half >= 3);
    CHECK(wrong_first_half <= 16);
  }
  // Alpha 1 and 0: nothing wrong, everything wrong.
  CHECK(ReplayDraft(out, 1.0, 2, 50).n_wrong() == 0);
  CHECK(ReplayDraft(out, 0.0, 2, 50).n_wrong() == out.size());
}

namespace {
// Rows where the target's greedy choice is `best[i]` for row i.
std::vector<float> rows_with(const std::vector<int32_t>& best, int n_vocab) {
  std::vector<float> r(best.size() * n_vocab, 0.0f);
  for (size_t i = 0; i < best.size(); ++i) r[i * n_vocab + best[i]] = 5.0f;
  return r;
}
}  // namespace

TEST_CASE("speculative: greedy verify keeps drafts while they are the argmax, then the target's") {
  const int V = 10;
  SamplerParams sp;
  sp.temp = 0;
  Sampler s(sp, V);
  const std::vector<float> rows = rows_with({3, 4, 5, 6}, V);
  SpecVerified all = spec_verify(s, rows.data(), V, std::vector<int32_t>{3, 4, 5});
  CHECK(all.accepted == 3);
  CHECK(all.tokens == std::vector<int32_t>{3, 4, 5, 6});  // the bonus token from the last row
  SpecVerified some = spec_verify(s, rows.data(), V, std::vector<int32_t>{3, 9, 5});
  CHECK(some.accepted == 1);
  CHECK(some.tokens == std::vector<int32_t>{3, 4});  // the correction ends the step
  SpecVerified none = spec_verify(s, rows.data(), V, std::vector<int32_t>{});
  CHECK(none.tokens == std::vector<int32_t>{3});  // no drafts: a plain step
}

TEST_CASE(
    "speculative: K grows with acceptance when a wide verify step costs what a narrow one does") {
  SpecK flat(0, 8);
  for (int i = 0; i < 20; ++i) flat.record(4, 4, 0.0001, 0.1);  // every draft accepted
  for (int w = 1; w <= 9; ++w) flat.record(w - 1, w - 1, 0.0001, 0.1);
  CHECK(flat.next() == 8);
  // On a compute-bound machine a step's cost grows with its width: with few
  // drafts accepted, not drafting wins.
  SpecK steep(0, 8);
  for (int w = 1; w <= 9; ++w)
    for (int i = 0; i < 4; ++i) steep.record(w - 1, 0, 0.0001, 0.1 * w);
  CHECK(steep.acceptance() < 0.1);
  CHECK(steep.next() == 0);
}

namespace {
// A verify step's cost by width (plain steps) as the 70b at 24 GiB measured
// it (session 29, call 2), linear between the measured widths.
double s29_cost(int w) {
  static const std::vector<std::pair<int, double>> table = {{1, 1.0},  {2, 1.16}, {4, 1.73},
                                                            {8, 1.85}, {17, 2.2}, {33, 2.3}};
  for (size_t i = 1; i < table.size(); ++i)
    if (w <= table[i].first) {
      const auto [w0, c0] = table[i - 1];
      const auto [w1, c1] = table[i];
      return c0 + (c1 - c0) * double(w - w0) / double(w1 - w0);
    }
  return table.back().second;
}
// Drafts of a chain of k accepted, each with probability a, from the
// pseudo-random sequence x.
int accepted_of(uint64_t& x, int k, double a) {
  int acc = 0;
  while (acc < k) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    if (double(x >> 11) * 0x1.0p-53 >= a) break;
    ++acc;
  }
  return acc;
}
}  // namespace

TEST_CASE("speculative: K settles near the best K from the costs it measures, from any start") {
  // A verify step's cost by width as the 70b at 24 GiB measured it
  // (s29_cost), and a chain accepted with probability 0.65 a position (a
  // fixed pseudo-random sequence).
  const auto cost = s29_cost;
  const double a = 0.65;
  // The first step at a width costs half as much again (a cold one: the
  // engine's first wide step allocates and faults in its scratch). Runs
  // from k_min 0 and 1, and with a draft that costs 0.08 of a plain step a
  // token (a draft model: the best K is then smaller).
  for (const auto& c : {std::pair{0, 0.0}, std::pair{1, 0.0}, std::pair{0, 0.08}}) {
    const int k_min = c.first;
    const double draft = c.second;
    auto rate = [&](int k) {
      return (a * (1 - std::pow(a, k)) / (1 - a) + 1) / (k * draft + cost(k + 1));
    };
    int k_best = 0;
    for (int k = 1; k <= 16; ++k)
      if (rate(k) > rate(k_best)) k_best = k;
    SpecK chooser(k_min, 16);
    std::vector<bool> seen(18, false);
    uint64_t x = 12345;
    double tokens = 0, seconds = 0;
    std::vector<int> ks;
    for (int step = 0; step < 400; ++step) {
      const int k = chooser.next();
      const int acc = accepted_of(x, k, a);
      chooser.record(k, acc, k * draft * 0.1, cost(k + 1) * 0.1 * (seen[k] ? 1.0 : 1.5));
      seen[k] = true;
      // The last 200 steps' choices at their expected tokens, not the
      // tokens this pseudo-random sequence happened to accept: the choice is
      // under test, and a run of K = 7 throughout realized 6 % under its
      // expectation here (the sequence is consumed by the choices made).
      if (step >= 200)
        tokens += a * (1 - std::pow(a, k)) / (1 - a) + 1,
            seconds += (k * draft + cost(k + 1)) * 0.1, ks.push_back(k);
    }
    const double got = tokens / seconds / 10.0;
    MESSAGE("k_min " << k_min << ", draft " << draft << ": best K " << k_best << " ("
                     << rate(k_best)
                     << " tokens a plain step's time), the chooser's last 200 steps " << got
                     << ", last K " << ks.back());
    CHECK(got >= 0.95 * rate(k_best));
  }
}

TEST_CASE("speculative: with the routing's predictions a short run starts near the best K") {
  const auto cost = s29_cost;
  // The 70b's verify costs (s29_cost), and a prediction per width bucket as
  // the engine's width routing makes one (Pipeline::predicted_step_s: the
  // bucket's widest width stands for it), 10 % high everywhere. A run of 40
  // steps (about 128 tokens at K = 7) with the prediction against one
  // without: the prediction spares it the widths it would try to measure.
  auto bucket_top = [](int w) {
    int b = 1;
    while (b < w) b *= 2;
    return b;
  };
  const double a = 0.7;
  auto rate = [&](int k) { return (a * (1 - std::pow(a, k)) / (1 - a) + 1) / cost(k + 1); };
  int k_best = 0;
  for (int k = 1; k <= 16; ++k)
    if (rate(k) > rate(k_best)) k_best = k;
  auto run = [&](bool prior) {
    SpecK chooser(0, 16);
    if (prior) chooser.set_prior([&](int w) { return 0.11 * cost(bucket_top(w)); });
    std::vector<bool> seen(18, false);
    uint64_t x = 777;
    double tokens = 0, seconds = 0;
    for (int step = 0; step < 40; ++step) {
      const int k = chooser.next();
      const int acc = accepted_of(x, k, a);
      const double s = cost(k + 1) * 0.1 * (seen[k] ? 1.0 : 1.5);
      chooser.record(k, acc, 0.0, s);
      seen[k] = true;
      tokens += acc + 1, seconds += s;
    }
    return tokens / seconds / 10.0;
  };
  const double with = run(true), without = run(false);
  MESSAGE("best K " << k_best << " (" << rate(k_best) << " tokens a plain step's time); 40 steps "
                    << "with the prediction " << with << ", without " << without);
  CHECK(with >= 0.85 * rate(k_best));
  CHECK(with > without);
}

namespace {
// Draws of speculative sampling from one row (draft fixed), against the
// row's distribution under the same sampler settings: Pearson's statistic.
double chi_square(double bias, int32_t draft, int n_draws) {
  const int V = 8;
  const std::vector<float> logits = {1.0f, 0.2f, -0.5f, 2.0f, 0.0f, 1.5f, -1.0f, 0.7f};
  SamplerParams sp;
  sp.temp = 0.9f;
  sp.top_k = 0;
  sp.top_p = 1.0f;
  sp.min_p = 0.0f;
  sp.seed = 12345;
  Sampler s(sp, V);
  std::vector<double> p(V);
  double z = 0;
  for (int i = 0; i < V; ++i) z += p[i] = std::exp(double(logits[i]) / double(sp.temp));
  std::vector<int> count(V, 0);
  for (int k = 0; k < n_draws; ++k) ++count[s.verify(logits.data(), draft, bias)];
  double x2 = 0;
  for (int i = 0; i < V; ++i) {
    const double e = n_draws * p[i] / z;
    x2 += (count[i] - e) * (count[i] - e) / e;
  }
  return x2;
}
}  // namespace

TEST_CASE("speculative: sampling follows the target's distribution; a wrong acceptor is caught") {
  // 7 degrees of freedom: P(X2 > 24.32) = 0.001.
  const double crit = 24.32;
  for (int32_t draft : {3, 6, 1}) {
    const double ok = chi_square(1.0, draft, 40000);
    MESSAGE("draft " << draft << ": chi-square " << ok);
    CHECK(ok < crit);
  }
  // Accepting a draft twice as often as p(draft) skews the draws.
  const double bad = chi_square(2.0, 6, 40000);
  MESSAGE("biased acceptor: chi-square " << bad);
  CHECK(bad > crit);
}
