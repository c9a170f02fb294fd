// KvBlockTable (model/kv_blocks.h): the paged cache's bookkeeping. Blocks
// are taken as slots grow and given back as they shrink; a reserve the pool
// cannot serve takes nothing; no block is ever in two places.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "model/kv_blocks.h"

using namespace ls;

namespace {

// Every block is either free or held by exactly one (slot, index), and each
// slot's row is its held blocks then -1s.
bool consistent(const KvBlockTable& t) {
  std::set<int32_t> seen;
  uint32_t held = 0;
  for (uint32_t s = 0; s < t.n_slots(); ++s)
    for (uint32_t b = 0; b < t.max_blocks(); ++b) {
      const int32_t id = t.table()[s * t.max_blocks() + b];
      if ((id >= 0) != (b < t.held(s))) return false;
      if (id < 0) continue;
      if (id >= static_cast<int32_t>(t.n_blocks()) || !seen.insert(id).second) return false;
      ++held;
    }
  return held == t.n_used() && t.n_used() + t.n_free() == t.n_blocks();
}

}  // namespace

TEST_CASE("kv blocks: the default pool, sizes and rounding") {
  CHECK(kKvBlockLen == 16);
  CHECK(kv_blocks_for(0) == 0);
  CHECK(kv_blocks_for(1) == 1);
  CHECK(kv_blocks_for(16) == 1);
  CHECK(kv_blocks_for(17) == 2);
  CHECK(kv_default_blocks(32, 4096) == 32 * 256);
  CHECK(kv_default_blocks(3, 50) == 12);
  KvBlockTable t(3, 50, 0);
  CHECK(t.n_blocks() == 12);
  CHECK(t.max_blocks() == 4);
  CHECK(t.n_free() == 12);
  CHECK(t.table().size() == 12);
  // A lone sequence takes blocks 0, 1, 2, ... (the unpaged layout).
  REQUIRE(t.reserve(0, 40));
  CHECK(t.table()[0] == 0);
  CHECK(t.table()[1] == 1);
  CHECK(t.table()[2] == 2);
  CHECK(t.table()[3] == -1);
  CHECK(t.capacity(0) == 48);
  // A slot never holds more than n_ctx positions' worth.
  CHECK_FALSE(t.reserve(1, 65));
  CHECK(t.held(1) == 0);
  CHECK(t.reserve(1, 50));
  CHECK(consistent(t));
}

TEST_CASE("kv blocks: reserve and trim over many random steps, never a block in two places") {
  for (uint64_t seed : {0ull, 7ull}) {
    CAPTURE(seed);
    KvBlockTable t(5, 200, 23, seed);
    std::mt19937 rng(static_cast<uint32_t>(seed + 1));
    std::vector<uint32_t> len(5, 0);
    int refused = 0;
    for (int step = 0; step < 4000; ++step) {
      const uint32_t s = rng() % 5;
      if (rng() % 3) {
        const uint32_t want = std::min<uint32_t>(200, len[s] + 1 + rng() % 40);
        const uint32_t free_before = t.n_free(), lack = t.lacking(s, want);
        if (t.reserve(s, want)) {
          CHECK(t.n_free() == free_before - lack);
          len[s] = want;
        } else {
          ++refused;
          CHECK(lack > free_before);
          CHECK(t.n_free() == free_before);  // nothing taken
        }
      } else {
        len[s] = len[s] ? rng() % len[s] : 0;
        t.trim(s, len[s]);
      }
      REQUIRE(t.held(s) == kv_blocks_for(len[s]));
      REQUIRE(consistent(t));
    }
    CHECK(refused > 0);  // the pool ran dry at times
    for (uint32_t s = 0; s < 5; ++s) t.trim(s, 0);
    CHECK(t.n_free() == 23);
  }
}

TEST_CASE("kv blocks: a seed shuffles the blocks a sequence gets") {
  KvBlockTable a(1, 1024, 64, 0), b(1, 1024, 64, 99);
  REQUIRE(a.reserve(0, 1024));
  REQUIRE(b.reserve(0, 1024));
  std::vector<int32_t> ra(a.table().begin(), a.table().end()),
      rb(b.table().begin(), b.table().end());
  CHECK(std::is_sorted(ra.begin(), ra.end()));
  CHECK_FALSE(std::is_sorted(rb.begin(), rb.end()));
  std::sort(rb.begin(), rb.end());
  CHECK(ra == rb);  // the same blocks, another order
}
