// l2_prefetch_add (kernels/l2_prefetch.cuh): the ranges it hands the
// prefetch instruction keep to its rules (16-byte aligned starts, sizes
// multiples of 16) and to the budget, inside the range asked for.
#include <doctest/doctest.h>

#include <cstdint>

#include "kernels/l2_prefetch.cuh"

namespace {

uintptr_t at(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

}  // namespace

TEST_CASE("l2_prefetch_add: aligned, inside the range, within the budget") {
  alignas(16) static char buf[4096];
  for (int off = 0; off < 20; ++off)
    for (uint64_t bytes : {0ull, 1ull, 15ull, 16ull, 17ull, 31ull, 100ull, 4000ull})
      for (uint64_t budget : {0ull, 15ull, 16ull, 48ull, 1000ull, 1ull << 40}) {
        ls::L2Prefetch pf;
        const uint64_t left = ls::l2_prefetch_add(pf, buf + off, bytes, budget);
        INFO("off ", off, " bytes ", bytes, " budget ", budget);
        REQUIRE(pf.n <= 1);
        if (pf.n == 0) {
          CHECK(left == budget);
          continue;
        }
        CHECK(at(pf.p[0]) % 16 == 0);
        CHECK(pf.bytes[0] % 16 == 0);
        CHECK(pf.bytes[0] > 0);
        CHECK(at(pf.p[0]) >= at(buf + off));
        CHECK(at(pf.p[0]) + pf.bytes[0] <= at(buf + off) + bytes);
        CHECK(pf.bytes[0] <= budget);
        CHECK(left == budget - pf.bytes[0]);
        // Nothing aligned is left out but the tail under 16 bytes or past the budget.
        const uint64_t room = at(buf + off) + bytes - at(pf.p[0]);
        CHECK((pf.bytes[0] == (budget & ~15ull) || room - pf.bytes[0] < 16));
      }
}

TEST_CASE("l2_prefetch_add: ranges in order until the budget or kMax") {
  alignas(16) static char buf[1 << 16];
  ls::L2Prefetch pf;
  uint64_t b = 10007;
  b = ls::l2_prefetch_add(pf, buf, 4096, b);
  b = ls::l2_prefetch_add(pf, buf + 8192, 4096, b);
  CHECK(pf.n == 2);
  CHECK(b == 10007 - 8192);
  b = ls::l2_prefetch_add(pf, buf + 16384, 40000, b);
  CHECK(pf.n == 3);
  CHECK(pf.bytes[2] == 1808);  // what was left, trimmed to 16
  CHECK(b == 7);
  CHECK(ls::l2_prefetch_add(pf, buf + 32768, 4096, 1 << 20) == 1 << 20);  // kMax reached
  CHECK(pf.n == ls::L2Prefetch::kMax);
  ls::L2Prefetch none;
  CHECK(ls::l2_prefetch_add(none, nullptr, 4096, 100) == 100);
  CHECK(none.n == 0);
}
