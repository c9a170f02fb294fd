// runtime/zeroed_array.h: zero values without a write, usable as an array,
// movable (the key/value cache holds four).
#include <doctest/doctest.h>

#include <cstdint>
#include <utility>

#include "runtime/zeroed_array.h"

using namespace ls;

TEST_CASE("zeroed array: starts zero, holds what is written, moves") {
  // 64 MiB: calloc takes it from a fresh mapping (no memset); every page reads 0.
  const size_t n = size_t{16} << 20;
  ZeroedArray<float> a(n);
  REQUIRE(a.size() == n);
  bool zero = true;
  for (size_t i = 0; i < n; i += 1024) zero = zero && a[i] == 0.0f;
  CHECK(zero);
  a[3] = 1.5f;
  a[n - 1] = -2.0f;
  ZeroedArray<float> b = std::move(a);
  CHECK(b.size() == n);
  CHECK(b[3] == 1.5f);
  CHECK(b.data()[n - 1] == -2.0f);
  CHECK(a.data() == nullptr);
  CHECK(a.size() == 0);
  ZeroedArray<uint16_t> small(3);
  CHECK(small[0] == 0);
  CHECK(small[2] == 0);
  ZeroedArray<uint16_t> none(0);  // a valid pointer, no elements
  CHECK(none.size() == 0);
  CHECK(none.data() != nullptr);
}
