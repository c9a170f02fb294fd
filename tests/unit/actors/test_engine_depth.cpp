// The planned-ahead depth a hybrid plan gets by default (actors/engine.h,
// hybrid_depth): the planner must see past the longest run of resident
// layers, counted round the step's end, or the copy engine waits through
// that run every step. And the device slots by default (default_device_slots).
#include <doctest/doctest.h>

#include <string>

#include "actors/engine.h"

using namespace ls;

namespace {

TierPlan plan_of(const std::string& tiers) {
  TierPlan p;
  for (char c : tiers)
    p.layer_tier.push_back(c == 'A'   ? Tier::Resident
                           : c == 'H' ? Tier::Cpu
                           : c == 'C' ? Tier::Storage
                                      : Tier::Ram);
  return p;
}

}  // namespace

TEST_CASE("engine: a hybrid plan's depth reaches past its longest run of resident layers") {
  // The 70b at 24 GiB (bench/results/2026-12-04-h200-s30.md, call 7): 41
  // resident layers, then 25 CPU-tier ones spread between 14 streamed.
  const std::string seventy = std::string(41, 'A') + "HBHHBHBHHBHHBHHBHHBHBHHBHHBHHBHHBHBHHBH";
  REQUIRE(seventy.size() == 80);
  CHECK(hybrid_depth(plan_of(seventy)) == kDepthHybrid + 41);
  // No resident layer: the depth that served before.
  CHECK(hybrid_depth(plan_of("HBHBHBHB")) == kDepthHybrid);
  // A run at the end goes on into the next step's start: 2 + 3.
  CHECK(hybrid_depth(plan_of("AAAHBHAABHAA")) == kDepthHybrid + 5);
  // All resident (no streamed layer): one step's worth, not two.
  CHECK(hybrid_depth(plan_of("AAAA")) == kDepthHybrid + 4);
  CHECK(hybrid_depth(plan_of("AHCA")) == kDepthHybrid + 2);
}

TEST_CASE("engine: device slots by default: 3, and 4 from 32 sequences at once") {
  CHECK(default_device_slots(1) == 3);
  CHECK(default_device_slots(8) == 3);
  CHECK(default_device_slots(31) == 3);
  CHECK(default_device_slots(32) == 4);
  CHECK(default_device_slots(64) == 4);
}
