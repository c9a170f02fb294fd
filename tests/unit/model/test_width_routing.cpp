// The CPU tier's share by width (model/width_routing.h) and the planner's
// spread of the layers that stay (HybridRoute::keeps_layer).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "actors/messages.h"
#include "model/width_routing.h"

using namespace ls;

namespace {

// A plan's layers as the routing sees them: A resident, H the CPU set, B
// (or anything else) streamed.
std::vector<WidthRouting::Kind> kinds_of(const std::string& layout) {
  std::vector<WidthRouting::Kind> kinds;
  for (char c : layout)
    kinds.push_back(c == 'A'   ? WidthRouting::Kind::Resident
                    : c == 'H' ? WidthRouting::Kind::CpuSet
                               : WidthRouting::Kind::Streamed);
  return kinds;
}

// A step of session 30's 70b plan at width w: 10 CPU layers, 70 on the GPU,
// 30 copied at 9.2 ms, with the given per-layer CPU and GPU milliseconds.
WidthSample s30_step(int64_t w, double cpu_ms, double gpu_ms) {
  WidthSample s;
  s.width = w;
  s.n_cpu = 10;
  s.n_gpu = 70;
  s.n_copied = 30;
  s.cpu_s = 10 * cpu_ms * 1e-3;
  s.gpu_s = 70 * gpu_ms * 1e-3;
  s.copy_s = 30 * 9.2e-3;
  return s;
}

// Session 30's plan on a layout (3 slots, depth 57) after 20 steps at width
// 32 with the given CPU milliseconds a layer.
WidthRouting s30_routing_32(const std::vector<WidthRouting::Kind>& kinds, double cpu_ms) {
  WidthRouting r(80, 25, 14, 5.4e-3, 0.2e-3, 9.2e-3);
  r.set_layout(kinds, 3, 57);
  const WidthSample s = s30_step(32, cpu_ms, 0.67);
  for (int i = 0; i < 20; ++i) r.observe(s);
  return r;
}

}  // namespace

TEST_CASE("width routing: buckets are powers of two up to 128, then one for prompts") {
  CHECK(WidthRouting::bucket(1) == 0);
  CHECK(WidthRouting::bucket(2) == 1);
  CHECK(WidthRouting::bucket(3) == 2);
  CHECK(WidthRouting::bucket(4) == 2);
  CHECK(WidthRouting::bucket(8) == 3);
  CHECK(WidthRouting::bucket(9) == 4);
  CHECK(WidthRouting::bucket(32) == 5);
  CHECK(WidthRouting::bucket(33) == 6);
  CHECK(WidthRouting::bucket(64) == 6);
  CHECK(WidthRouting::bucket(65) == 7);
  CHECK(WidthRouting::bucket(128) == 7);
  CHECK(WidthRouting::bucket(129) == 8);
  CHECK(WidthRouting::bucket(100000) == 8);
}

TEST_CASE("width routing: keeps_layer keeps exactly k of n, spread between the others") {
  for (int32_t n : {1, 2, 7, 25}) {
    for (int32_t k = 0; k <= n + 1; ++k) {
      int32_t kept = 0, longest_gap = 0, gap = 0;
      for (int32_t i = 0; i < n; ++i) {
        if (HybridRoute::keeps_layer(i, n, k)) {
          ++kept;
          gap = 0;
        } else {
          longest_gap = std::max(longest_gap, ++gap);
        }
      }
      CAPTURE(n);
      CAPTURE(k);
      CHECK(kept == std::min(k, n));
      // Evenly spread: no run of dropped layers longer than ceil((n - k) / (k + 1)) + 1.
      if (k > 0 && k < n) CHECK(longest_gap <= (n - k + k) / k);
    }
  }
}

namespace {
// A 70b-like hybrid plan: 80 layers, 39 resident, 25 on the CPU, 16 streamed.
WidthRouting seventy(double cpu1_ms = 6.0) {
  return WidthRouting(80, 25, 16, cpu1_ms * 1e-3, 0.25e-3, 10e-3);
}
WidthSample sample(int64_t width, double cpu_ms, double gpu_ms, int32_t n_cpu = 25) {
  WidthSample s;
  s.width = width;
  s.n_cpu = n_cpu;
  s.n_gpu = 80 - n_cpu;
  s.n_copied = 41 - n_cpu;
  s.cpu_s = n_cpu * cpu_ms * 1e-3;
  s.gpu_s = (80 - n_cpu) * gpu_ms * 1e-3;
  s.copy_s = (41 - n_cpu) * 10e-3;
  return s;
}
}  // namespace

TEST_CASE(
    "width routing: the split minimises the predicted step, and moves to PCIe as the "
    "CPU's cost grows with the width") {
  WidthRouting r = seventy();
  // Width 1 is the batch-1 plan's (the balancer's) whatever the times.
  CHECK(r.cpu_layers(0) == 25);
  // Prompts (over max_width, 64) put nothing on the CPU.
  CHECK(r.cpu_layers(WidthRouting::bucket(65)) == 0);
  CHECK(r.cpu_layers(WidthRouting::bucket(4096)) == 0);
  // Not measured at 32: the prior scaled by the width (6 ms x 32 a layer),
  // so all but one layer go through PCIe; that one stays to be measured.
  const int b32 = WidthRouting::bucket(32);
  CHECK(r.cpu_layers(b32) == 1);
  // Measured at 32: a CPU layer takes 30 ms against a 10 ms copy; the best
  // split balances (41 - k) * 10 ms of copies against the chain.
  for (int i = 0; i < 10; ++i) r.observe(sample(32, 30.0, 0.4, 25));
  const int32_t k = r.cpu_layers(b32);
  CAPTURE(k);
  for (int32_t j = 1; j <= 25; ++j) CHECK(r.predict_s(b32, k) <= r.predict_s(b32, j) + 1e-12);
  CHECK(k >= 8);
  CHECK(k <= 13);
  // A CPU cheap enough that even all 25 layers' chain stays under the
  // copies keeps every layer on the CPU.
  const int b8 = WidthRouting::bucket(8);
  for (int i = 0; i < 10; ++i) r.observe(sample(8, 5.0, 0.3, 25));
  CHECK(r.cpu_layers(b8) == 25);
  // Buckets between measured ones take the narrower one scaled: 16 from 8's
  // 5 ms gives 10 ms a layer.
  const int b16 = WidthRouting::bucket(16);
  CHECK_FALSE(r.measured(b16));
  CHECK(r.cpu_layer_s(b16) == doctest::Approx(10e-3));
  CHECK(r.cpu_layers(b16) >= r.cpu_layers(b32));
  CHECK(r.cpu_layers(b16) <= r.cpu_layers(b8));
  // The summary names what was measured.
  const std::string sum = r.summary();
  CHECK(sum.find("width <= 32") != std::string::npos);
  CHECK(sum.find("copy 10.0 ms") != std::string::npos);
}

// The step simulated on the 70b plan at 24 GiB of 2026-12-02 (39 resident
// layers, then 26 CPU-tier ones spread between 15 streamed, 3 device slots,
// depth 16), with the per-layer times measured there at each width (call
// 3, raw-2026-12-02-s7/call3): the steps took 333 / 410 / 540 / 738 ms at
// widths 8 / 16 / 32 / 64 keeping 15 / 9 / 6 / 4 CPU layers (chosen by the
// max(chain, copy) model), ~40 ms a step more than the simulation gives.
TEST_CASE("width routing: the simulated step on the 70b plan picks the split that was fastest") {
  const std::string layout = std::string(39, 'A') + "HBHHBHBHHBHHBHHBHBHHBHHBHBHHBHHBHHBHBHHBH";
  const std::vector<WidthRouting::Kind> kinds = kinds_of(layout);
  WidthRouting r(80, 26, 15, 6e-3, 0.27e-3, 10e-3);
  r.set_layout(kinds, 3, 16);
  auto feed = [&](int64_t w, double cpu_ms, double gpu_ms, double copy_ms) {
    WidthSample s;
    s.width = w;
    s.n_cpu = 10;
    s.n_gpu = 70;
    s.n_copied = 31;
    s.cpu_s = 10 * cpu_ms * 1e-3;
    s.gpu_s = 70 * gpu_ms * 1e-3;
    s.copy_s = 31 * copy_ms * 1e-3;
    for (int i = 0; i < 20; ++i) r.observe(s);
  };
  feed(8, 15.1, 0.49, 9.4);
  const int b8 = WidthRouting::bucket(8);
  MESSAGE(
      "width 8: " << r.cpu_layers(b8) << " CPU layers, " << r.predict_s(b8, r.cpu_layers(b8)) * 1e3
                  << " ms; keeping 15 (measured 333 ms): " << r.predict_s(b8, 15) * 1e3 << " ms");
  CHECK(r.cpu_layers(b8) >= 12);
  CHECK(r.cpu_layers(b8) <= 18);
  CHECK(r.predict_s(b8, 15) == doctest::Approx(0.281).epsilon(0.05));
  // --stats prints the placed split and its prediction, to hold against the run.
  const WidthRouting::Placement p8 = r.placement(b8);
  char want[128];
  std::snprintf(want, sizeof want, "%d of 26 CPU layers", p8.k);
  CHECK(r.summary().find(want) != std::string::npos);
  std::snprintf(want, sizeof want, "a step predicted %.1f ms", p8.predicted_s * 1e3);
  CHECK(r.summary().find(want) != std::string::npos);
  feed(32, 43.7, 1.19, 9.4);
  const int b32 = WidthRouting::bucket(32);
  // Keeping 6 (as the simple model did) is simulated at ~490 ms, near the
  // 540 measured; sending all 26 through PCIe at ~415 ms.
  CHECK(r.predict_s(b32, 6) == doctest::Approx(0.492).epsilon(0.05));
  CHECK(r.predict_s(b32, 0) == doctest::Approx(0.415).epsilon(0.05));
  CHECK(r.cpu_layers(b32) == 0);
  // Without slots to hold copies, the simple model's answer would stand:
  // many slots make the chain and the copies overlap.
  r.set_layout(kinds, 64, 80);
  CHECK(r.cpu_layers(b32) >= 4);
}

// The same simulation on the plan of 2026-12-04 (41 resident layers, 25
// CPU-tier ones, 14 streamed) with the per-layer times session 30 measured
// at widths 1, 8 and 32 (raw-2026-12-04-s30/call7): the planner's depth
// bounds how early the copy engine starts the next step's copies. At 16 the
// 41 resident layers hold every credit at each step's start and the copies
// wait; past them (actors/engine.h, hybrid_depth: 57) every width's step is
// shorter (6.72 -> 6.85 tok/s at width 1, where the chain bounds the step;
// 33.4 -> 35.1 at 8; 101.1 -> 106.7 at 32), and depth beyond that gains
// nothing.
TEST_CASE("width routing: a depth past the resident run shortens the simulated step") {
  const std::string layout = std::string(41, 'A') + "HBHHBHBHHBHHBHHBHHBHBHHBHHBHHBHHBHBHHBH";
  const std::vector<WidthRouting::Kind> kinds = kinds_of(layout);
  struct Width {
    int64_t w;
    double cpu_ms, gpu_ms;
  };
  for (const Width& x : {Width{1, 5.4, 0.2}, Width{8, 11.4, 0.44}, Width{32, 22.8, 0.68}}) {
    WidthRouting r(80, 25, 14, 5.4e-3, 0.2e-3, 9.2e-3);
    const WidthSample s = s30_step(x.w, x.cpu_ms, x.gpu_ms);
    for (int i = 0; i < 20; ++i) r.observe(s);
    const int b = WidthRouting::bucket(x.w);
    auto best = [&](int32_t depth) {
      r.set_layout(kinds, 3, depth);
      return r.predict_s(b, r.cpu_layers(b));
    };
    const double at16 = best(16), at57 = best(57), at80 = best(80);
    MESSAGE("width " << x.w << ": " << x.w / at16 << " tok/s at depth 16, " << x.w / at57
                     << " at 57");
    CHECK(at57 < (x.w == 1 ? 0.99 : 0.96) * at16);
    CHECK(at80 == doctest::Approx(at57).epsilon(0.01));
  }
}

// The placement of the kept layers on session 30's plan (41 resident, 25
// CPU-set layers between 14 streamed, 3 slots, depth 57) with the times of
// widths 8, 16 and 32: the even spread of the set leaves runs of four
// streamed layers behind some CPU layers (three slots: the copy engine
// stops while the CPU computes), and ends a step on a CPU layer. The local
// search's step is shorter, keeps exactly k of the set, and no worse than
// the spread at any width; a run of it against the spread of the same
// count is what the planner then routes.
TEST_CASE("width routing: the placement's simulated step beats the even spread") {
  const std::string layout = std::string(41, 'A') + "HBHHBHBHHBHHBHHBHHBHBHHBHHBHHBHHBHBHHBH";
  const std::vector<WidthRouting::Kind> kinds = kinds_of(layout);
  struct Width {
    int64_t w;
    double cpu_ms, gpu_ms, min_gain;
  };
  for (const Width& x :
       {Width{8, 11.4, 0.44, 1.04}, Width{16, 16.0, 0.55, 1.04}, Width{32, 24.8, 0.67, 1.03}}) {
    WidthRouting r(80, 25, 14, 5.4e-3, 0.2e-3, 9.2e-3);
    r.set_layout(kinds, 3, 57);
    const WidthSample s = s30_step(x.w, x.cpu_ms, x.gpu_ms);
    for (int i = 0; i < 20; ++i) r.observe(s);
    const int b = WidthRouting::bucket(x.w);
    const int32_t k_spread = r.cpu_layers(b);
    const double spread = r.predict_s(b, k_spread);
    const WidthRouting::Placement p = r.placement(b);
    int32_t kept = 0;
    for (uint8_t f : p.keep) kept += f;
    MESSAGE("width " << x.w << ": spread " << k_spread << " layers, " << x.w / spread
                     << " tok/s; placed " << p.k << ", " << x.w / p.predicted_s << " tok/s");
    CHECK(p.keep.size() == 25);
    CHECK(kept == p.k);
    CHECK(p.predicted_s > 0);
    CHECK(spread / p.predicted_s >= x.min_gain);
    CHECK(std::abs(p.k - k_spread) <= 1);
  }
  // Without a layout there is nothing to simulate: the spread of cpu_layers.
  WidthRouting r(80, 25, 14, 5.4e-3, 0.2e-3, 9.2e-3);
  const WidthRouting::Placement p = r.placement(WidthRouting::bucket(8));
  CHECK(p.predicted_s == 0);
  CHECK(p.k == r.cpu_layers(WidthRouting::bucket(8)));
}

// The placement in use stays while the measurements drift by a little (a
// layer that changes sides moves its key/value rows), and gives way when a
// new one is kPlaceGain shorter or more.
TEST_CASE("width routing: a placement in use stays unless a new one is clearly shorter") {
  const std::string layout = std::string(41, 'A') + "HBHHBHBHHBHHBHHBHHBHBHHBHHBHHBHHBHBHHBH";
  const std::vector<WidthRouting::Kind> kinds = kinds_of(layout);
  auto routing = [&](double cpu_ms) { return s30_routing_32(kinds, cpu_ms); };
  const int b = WidthRouting::bucket(32);
  const WidthRouting::Placement first = routing(24.8).placement(b);
  REQUIRE(first.predicted_s > 0);
  // Measurements a little off: some other placement may simulate a hair
  // shorter, but the one in use stays.
  for (double cpu_ms : {24.0, 24.5, 25.2, 25.6}) {
    CAPTURE(cpu_ms);
    const WidthRouting r = routing(cpu_ms);
    const WidthRouting::Placement fresh = r.placement(b);
    const WidthRouting::Placement kept = r.placement(b, &first);
    CHECK(kept.keep == first.keep);
    CHECK(fresh.predicted_s >= kept.predicted_s * (1 - WidthRouting::kPlaceGain));
  }
  // The CPU twice as slow: fewer layers on the CPU, a new placement.
  const WidthRouting slow = routing(49.6);
  const WidthRouting::Placement moved = slow.placement(b, &first);
  CHECK(moved.k < first.k);
  CHECK(moved.keep != first.keep);
  // A bucket due a probe takes its probe whatever is in use.
  WidthRouting r(80, 25, 14, 5.4e-3, 0.2e-3, 9.2e-3, WidthRouting::Options{64, 0.3, 2});
  r.set_layout(kinds, 3, 57);
  const WidthSample s = s30_step(32, 200, 0.67);  // a CPU so slow that the best is none
  for (int i = 0; i < 3; ++i) r.observe(s);
  WidthSample none = s;
  none.n_cpu = 0;
  none.cpu_s = 0;
  none.n_gpu = 80;
  for (int i = 0; i < 2; ++i) r.observe(none);  // two steps without a CPU layer: a probe is due
  WidthRouting::Placement zero{0, std::vector<uint8_t>(25, 0), 1.0};
  CHECK(r.placement(b, &zero).k == 1);
}

// A verify step's width is one bucket from its first step, and a short
// speculative run has a few dozen of them: a cold first step (here 2.5x the
// warm cost) must not hold the split off its best beyond the next step.
TEST_CASE("width routing: a bucket's second measurement replaces a cold first one") {
  WidthRouting r(80, 25, 16, 6e-3, 0.3e-3, 10e-3);
  WidthRouting warm(80, 25, 16, 6e-3, 0.3e-3, 10e-3);
  const int b4 = WidthRouting::bucket(4);
  for (int i = 0; i < 20; ++i) warm.observe(sample(4, 9.0, 0.3, warm.cpu_layers(b4)));
  const int32_t best = warm.cpu_layers(b4);
  REQUIRE(best > 0);
  r.observe(sample(4, 22.5, 0.3, r.cpu_layers(b4)));
  CHECK(r.cpu_layer_s(b4) == doctest::Approx(22.5e-3));
  r.observe(sample(4, 9.0, 0.3, r.cpu_layers(b4)));
  CHECK(r.cpu_layer_s(b4) == doctest::Approx(9e-3));
  CHECK(r.cpu_layers(b4) == best);
  // From the third on, a running average: one outlier moves it by 0.3 of
  // its distance.
  r.observe(sample(4, 19.0, 0.3, r.cpu_layers(b4)));
  CHECK(r.cpu_layer_s(b4) == doctest::Approx(12e-3));
}

TEST_CASE("width routing: the load's ratio at 8 tokens shapes the widths not stepped yet") {
  const int b4 = WidthRouting::bucket(4), b8 = WidthRouting::bucket(8);
  const int b32 = WidthRouting::bucket(32), b64 = WidthRouting::bucket(64);
  WidthRouting lin = seventy();  // no ratio: linear in the width from 1
  WidthRouting::Options o;
  o.cpu_ratio_8 = 2.0;
  WidthRouting r(80, 25, 16, 6e-3, 0.25e-3, 10e-3, o);
  CHECK(lin.cpu_layer_s(b8) == doctest::Approx(48e-3));
  // Linear between 1 and 8 (width 4: 1 + 3/7 of the way), then in the width.
  CHECK(r.cpu_layer_s(b8) == doctest::Approx(12e-3));
  CHECK(r.cpu_layer_s(b4) == doctest::Approx(6e-3 * (1.0 + 3.0 / 7.0)));
  CHECK(r.cpu_layer_s(b32) == doctest::Approx(48e-3));
  CHECK(r.cpu_layer_s(b64) == doctest::Approx(96e-3));
  // So a first step at 8 tokens keeps about as many CPU layers as its
  // measured cost will (balancing 12 ms a layer against 10 ms copies), where
  // linear keeps a third of them.
  CHECK(lin.cpu_layers(b8) == 6);
  CHECK(r.cpu_layers(b8) >= 16);
  // A measured narrower bucket is scaled by the same shape: width 1 at 7 ms
  // gives width 8 at 14.
  r.observe(sample(1, 7.0, 0.25));
  CHECK(r.cpu_layer_s(b8) == doctest::Approx(14e-3));
  // ... and a measured bucket is its own measurement.
  r.observe(sample(8, 11.0, 0.3, r.cpu_layers(b8)));
  CHECK(r.cpu_layer_s(b8) == doctest::Approx(11e-3));
  CHECK(r.cpu_layer_s(b32) == doctest::Approx(44e-3));
  // A ratio out of reason (a noisy load) is taken within 1-8.
  o.cpu_ratio_8 = 0.4;
  WidthRouting low(80, 25, 16, 6e-3, 0.25e-3, 10e-3, o);
  CHECK(low.cpu_layer_s(b8) == doctest::Approx(6e-3));
  o.cpu_ratio_8 = 30;
  WidthRouting high(80, 25, 16, 6e-3, 0.25e-3, 10e-3, o);
  CHECK(high.cpu_layer_s(b8) == doctest::Approx(48e-3));
}

TEST_CASE("width routing: without measurements or a CPU set it keeps what it has") {
  WidthRouting none(32, 0, 4, 0, 0, 0);
  for (int b = 0; b < WidthRouting::kBuckets; ++b) CHECK(none.cpu_layers(b) == 0);
  WidthRouting blind(32, 6, 4, 0, 0, 0);  // no prior, nothing measured: nothing to weigh
  CHECK(blind.cpu_layers(WidthRouting::bucket(16)) == 6);
  CHECK(blind.cpu_layers(WidthRouting::bucket(200)) == 0);
}

TEST_CASE("width routing: a bucket sent all to PCIe by a cold measurement is probed and recovers") {
  WidthRouting::Options o;
  o.probe_every = 8;
  WidthRouting r(80, 25, 16, 6e-3, 0.3e-3, 10e-3, o);
  const int b8 = WidthRouting::bucket(8);
  // The first width-8 step was cold: 500 ms a CPU layer against a 10 ms
  // copy (the max(chain, copy) model then keeps none on the CPU). One layer
  // stays for a second measurement, which replaces the first: a warm one
  // brings the width back at once.
  WidthRouting once(80, 25, 16, 6e-3, 0.3e-3, 10e-3, o);
  once.observe(sample(8, 500.0, 0.3, 1));
  REQUIRE(once.measured(b8));
  CHECK(once.cpu_layers(b8) == 1);
  once.observe(sample(8, 5.0, 0.3, 1));
  CHECK(once.cpu_layers(b8) == 25);
  // Two cold ones (the machine was busy): none on the CPU, until the probe.
  r.observe(sample(8, 500.0, 0.3, 1));
  r.observe(sample(8, 500.0, 0.3, 1));
  REQUIRE(r.measured(b8));
  CHECK(r.cpu_layers(b8) == 0);
  // Steps with no CPU layer measure nothing on the CPU; the choice holds
  // until probe_every of them have run, then one step keeps one layer.
  for (int i = 0; i < 7; ++i) {
    r.observe(sample(8, 0.0, 0.3, 0));
    CHECK(r.cpu_layers(b8) == 0);
  }
  r.observe(sample(8, 0.0, 0.3, 0));
  CHECK(r.cpu_layers(b8) == 1);
  // The probe measures the warm cost, 5 ms: it replaces the stale 500 (a
  // blend would still say 351.5 and keep everything on PCIe).
  r.observe(sample(8, 5.0, 0.3, 1));
  CHECK(r.cpu_layer_s(b8) == doctest::Approx(5e-3));
  CHECK(r.cpu_layers(b8) == 25);
  // A probe that confirms the cost keeps the bucket at 0 until the next one.
  WidthRouting q(80, 25, 16, 6e-3, 0.3e-3, 10e-3, o);
  q.observe(sample(8, 500.0, 0.3, 1));
  q.observe(sample(8, 500.0, 0.3, 1));
  for (int i = 0; i < 8; ++i) q.observe(sample(8, 0.0, 0.3, 0));
  CHECK(q.cpu_layers(b8) == 1);
  q.observe(sample(8, 500.0, 0.3, 1));
  CHECK(q.cpu_layers(b8) == 0);
  // probe_every 0: never probed.
  o.probe_every = 0;
  WidthRouting never(80, 25, 16, 6e-3, 0.3e-3, 10e-3, o);
  never.observe(sample(8, 500.0, 0.3, 1));
  never.observe(sample(8, 500.0, 0.3, 1));
  for (int i = 0; i < 100; ++i) never.observe(sample(8, 0.0, 0.3, 0));
  CHECK(never.cpu_layers(b8) == 0);
}

// When the measurements move the count by one, the placement in use gains or
// loses a layer or two; it is not spread again (every layer that changes
// sides moves its key/value rows: session 45 saw 8-11 at once).
TEST_CASE("width routing: a count that moves by one changes few layers of the placement in use") {
  const std::string layout = std::string(41, 'A') + "HBHHBHBHHBHHBHHBHHBHBHHBHHBHHBHHBHBHHBH";
  const std::vector<WidthRouting::Kind> kinds = kinds_of(layout);
  auto routing = [&](double cpu_ms) { return s30_routing_32(kinds, cpu_ms); };
  const int b = WidthRouting::bucket(32);
  const WidthRouting::Placement first = routing(24.8).placement(b);
  REQUIRE(first.predicted_s > 0);
  auto moved = [&](const WidthRouting::Placement& p) {
    int n = 0;
    for (size_t i = 0; i < p.keep.size(); ++i) n += p.keep[i] != first.keep[i];
    return n;
  };
  int by_one = 0;
  for (double cpu_ms : {16.0, 20.0, 22.0, 23.0, 26.0, 28.0, 29.0, 30.0, 31.0, 32.0, 34.0}) {
    CAPTURE(cpu_ms);
    const WidthRouting r = routing(cpu_ms);
    const WidthRouting::Placement fresh = r.placement(b);
    const WidthRouting::Placement p = r.placement(b, &first);
    int32_t kept = 0;
    for (uint8_t f : p.keep) kept += f;
    CHECK(kept == p.k);
    MESSAGE("cpu " << cpu_ms << " ms: in use " << first.k << ", fresh " << fresh.k << " ("
                   << moved(fresh) << " moved), from the one in use " << p.k << " (" << moved(p)
                   << " moved)");
    // Never more layers moved than spreading afresh would move.
    CHECK(moved(p) <= moved(fresh));
    // A count one off: that layer, and a neighbour's adjustment at most.
    if (std::abs(p.k - first.k) == 1) {
      ++by_one;
      CHECK(moved(p) <= 3);
    }
  }
  CHECK(by_one >= 2);  // the case above is exercised
}
