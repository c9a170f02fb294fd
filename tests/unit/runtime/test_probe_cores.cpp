// runtime/probe_cores: grouping CPUs by measured sharing, and the probe on
// this machine's CPUs.
#include <doctest/doctest.h>

#include <algorithm>

#include "runtime/probe_cores.h"
#include "runtime/thread_pool.h"

using namespace ls;

TEST_CASE("group_cores: a VM's 16 CPUs that are 8 cores' two threads each (i and i + 8)") {
  int asked = 0;
  auto ratio = [&](int i, int j) {
    ++asked;
    return j == i + 8 ? 0.52 : 0.98;
  };
  std::vector<CoreSharing::Pair> pairs;
  const auto g = group_cores(16, ratio, 0.75, &pairs);
  REQUIRE(g.size() == 8);
  for (int i = 0; i < 8; ++i) CHECK(g[static_cast<size_t>(i)] == std::vector<int>{i, i + 8});
  CHECK(static_cast<int>(pairs.size()) == asked);
  // Each pair asked once at most, and never one with a CPU already grouped.
  for (const CoreSharing::Pair& p : pairs) {
    CHECK(p.a < p.b);
    CHECK(std::count_if(pairs.begin(), pairs.end(),
                        [&](const CoreSharing::Pair& q) { return q.a == p.a && q.b == p.b; }) == 1);
  }
  CHECK(asked < 16 * 15 / 2);
}

TEST_CASE("group_cores: no sharing gives a group a CPU; three threads a core group together") {
  const auto none = group_cores(4, [](int, int) { return 0.99; }, 0.75);
  REQUIRE(none.size() == 4);
  for (int i = 0; i < 4; ++i) CHECK(none[static_cast<size_t>(i)] == std::vector<int>{i});
  // CPUs 0, 2, 4 on one core, 1, 3, 5 on another.
  const auto three = group_cores(6, [](int i, int j) { return (i - j) % 2 == 0 ? 0.34 : 1.0; }, 0.75);
  REQUIRE(three.size() == 2);
  CHECK(three[0] == std::vector<int>{0, 2, 4});
  CHECK(three[1] == std::vector<int>{1, 3, 5});
}

TEST_CASE("probe_core_sharing: every CPU of the process in one group, rates measured") {
  auto r = probe_core_sharing(10);
  if (!r) {
    MESSAGE("probe_core_sharing not run here: " << r.error().message);
    return;
  }
  CHECK(r->cpus == process_cpus());
  REQUIRE(r->solo.size() == r->cpus.size());
  for (double s : r->solo) CHECK(s > 0);
  std::vector<int> all;
  for (const auto& g : r->cores) all.insert(all.end(), g.begin(), g.end());
  std::sort(all.begin(), all.end());
  CHECK(all == r->cpus);
  for (const CoreSharing::Pair& p : r->pairs) {
    CHECK(p.ratio > 0);
    CHECK(p.ratio < 1.6);  // one CPU cannot gain much from another running
  }
  MESSAGE(r->cpus.size() << " CPUs, " << r->cores.size() << " cores");
}
