// The IOVA allocator of the VFIO DMA memory: page-aligned ranges inside the
// IOMMU's windows, never IOVA 0, a range reused only after it is released,
// neighbours coalesced, and a clear error when the space runs out.
#include <doctest/doctest.h>

#include "io/vfio/iova_allocator.h"

using namespace ls;

TEST_CASE("iova allocator: page aligned, never 0, no reuse before release") {
  IovaAllocator a({{0, 1ull << 30}});
  auto x = a.alloc(1);
  auto y = a.alloc(4097);
  REQUIRE(x);
  REQUIRE(y);
  CHECK(*x != 0);
  CHECK(*x % 4096 == 0);
  CHECK(*y % 4096 == 0);
  CHECK(*y >= *x + 4096);  // x took a whole page
  auto z = a.alloc(4096);
  REQUIRE(z);
  CHECK(*z >= *y + 8192);  // y took two pages
  CHECK(a.bytes_in_use() == 4 * 4096);
  a.release(*y, 4097);
  auto w = a.alloc(8192);  // fits exactly where y was: reused after release
  REQUIRE(w);
  CHECK(*w == *y);
}

TEST_CASE("iova allocator: released neighbours coalesce for a larger request") {
  IovaAllocator a({{1 << 20, 1ull << 30}});
  auto p = a.alloc(4096), q = a.alloc(4096), r = a.alloc(4096), s = a.alloc(4096);
  REQUIRE((p && q && r && s));
  a.release(*q, 4096);
  a.release(*p, 4096);
  a.release(*r, 4096);  // p q r: one free range of 3 pages
  auto big = a.alloc(3 * 4096);
  REQUIRE(big);
  CHECK(*big == *p);
}

TEST_CASE("iova allocator: stays inside the windows and says when it runs out") {
  // Two small windows, the MSI hole between them never handed out.
  IovaAllocator a({{0x1000, 0x3000}, {0x10000, 0x12000}});
  auto a1 = a.alloc(0x2000);
  REQUIRE(a1);
  CHECK(*a1 == 0x1000);
  auto a2 = a.alloc(0x1000);  // the first window is full: the second
  REQUIRE(a2);
  CHECK(*a2 == 0x10000);
  auto a3 = a.alloc(0x2000);  // 0x1000 left: too small
  REQUIRE_FALSE(a3);
  CHECK(a3.error().message.find("IOVA space exhausted") != std::string::npos);
  auto a4 = a.alloc(0x1000);  // but one page still fits
  REQUIRE(a4);
  CHECK(*a4 == 0x11000);
  CHECK_FALSE(a.alloc(0));
}
