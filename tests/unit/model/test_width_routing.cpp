// The CPU tier's share by width (model/width_routing.h) and the planner's
// spread of the layers that stay (HybridRoute::keeps_layer).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "actors/messages.h"
#include "model/width_routing.h"

using namespace ls;

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

TEST_CASE("width routing: the split minimises the predicted step, and moves to PCIe as the "
          "CPU's cost grows with the width") {
  WidthRouting r = seventy();
  // Width 1 is the batch-1 plan's (the balancer's) whatever the times.
  CHECK(r.cpu_layers(0) == 25);
  // Prompts (over max_width, 64) put nothing on the CPU.
  CHECK(r.cpu_layers(WidthRouting::bucket(65)) == 0);
  CHECK(r.cpu_layers(WidthRouting::bucket(4096)) == 0);
  // Not measured at 32: the prior scaled by the width (6 ms x 32 a layer),
  // so almost everything goes through PCIe, but one layer stays to measure.
  const int b32 = WidthRouting::bucket(32);
  CHECK(r.cpu_layers(b32) >= 1);
  CHECK(r.cpu_layers(b32) <= 3);
  // Measured at 32: a CPU layer takes 30 ms against a 10 ms copy; the best
  // split balances (41 - k) * 10 ms of copies against the chain.
  for (int i = 0; i < 10; ++i) r.observe(sample(32, 30.0, 0.4, r.cpu_layers(b32)));
  const int32_t k = r.cpu_layers(b32);
  CAPTURE(k);
  for (int32_t j = 1; j <= 25; ++j) CHECK(r.predict_s(b32, k) <= r.predict_s(b32, j) + 1e-12);
  CHECK(k >= 8);
  CHECK(k <= 13);
  // A CPU cheap enough that even all 25 layers' chain stays under the
  // copies keeps every layer on the CPU.
  const int b8 = WidthRouting::bucket(8);
  for (int i = 0; i < 10; ++i) r.observe(sample(8, 5.0, 0.3, r.cpu_layers(b8)));
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

TEST_CASE("width routing: without measurements or a CPU set it keeps what it has") {
  WidthRouting none(32, 0, 4, 0, 0, 0);
  for (int b = 0; b < WidthRouting::kBuckets; ++b) CHECK(none.cpu_layers(b) == 0);
  WidthRouting blind(32, 6, 4, 0, 0, 0);  // no prior, nothing measured: nothing to weigh
  CHECK(blind.cpu_layers(WidthRouting::bucket(16)) == 6);
  CHECK(blind.cpu_layers(WidthRouting::bucket(200)) == 0);
}
