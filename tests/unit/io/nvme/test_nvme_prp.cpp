// PRP entries and lists for every shape of transfer, checked by walking them
// as a controller would, and the MDTS split.
#include <doctest/doctest.h>

#include <cstdlib>
#include <vector>

#include "io/nvme/prp.h"

using namespace ls;

namespace {

constexpr uint64_t kPage = 4096;

// List pages at made-up IOVAs, their entries in heap memory.
struct Lists {
  std::vector<std::vector<uint64_t>> mem;
  std::vector<NvmePrpListPage> pages;
  explicit Lists(size_t n) : mem(n, std::vector<uint64_t>(512, 0xDEAD)) {
    for (size_t i = 0; i < n; ++i) pages.push_back({mem[i].data(), 0x9000'0000ull + i * kPage});
  }
  const uint64_t* at(uint64_t iova) const {
    for (size_t i = 0; i < pages.size(); ++i) {
      if (iova >= pages[i].iova && iova < pages[i].iova + kPage) {
        return mem[i].data() + (iova - pages[i].iova) / 8;
      }
    }
    return nullptr;
  }
};

// The page addresses a controller would transfer, in order.
std::vector<uint64_t> walk(const NvmePrp& prp, uint64_t bytes, const Lists& lists) {
  std::vector<uint64_t> out = {prp.prp1 & ~(kPage - 1)};
  uint64_t left = bytes - std::min<uint64_t>(bytes, kPage - prp.prp1 % kPage);
  if (left == 0) return out;
  if (left <= kPage) {
    out.push_back(prp.prp2);
    return out;
  }
  uint64_t entry = prp.prp2;
  while (left > 0) {
    const uint64_t* e = lists.at(entry);
    REQUIRE(e != nullptr);
    if (entry % kPage == kPage - 8 && left > kPage) {
      entry = *e;
      continue;
    }
    out.push_back(*e);
    left -= std::min(left, kPage);
    entry += 8;
  }
  return out;
}

void check_transfer(uint64_t iova, uint64_t bytes, size_t want_lists) {
  CAPTURE(iova);
  CAPTURE(bytes);
  CHECK(nvme_prp_list_pages(iova, bytes) == want_lists);
  Lists lists(want_lists + 1);
  auto prp = nvme_prp_build(iova, bytes, lists.pages);
  REQUIRE(prp);
  CHECK(prp->prp1 == iova);
  CHECK(prp->list_pages_used == want_lists);
  const std::vector<uint64_t> pages = walk(*prp, bytes, lists);
  REQUIRE(pages.size() == nvme_prp_pages(iova, bytes));
  for (size_t i = 0; i < pages.size(); ++i) CHECK(pages[i] == (iova & ~(kPage - 1)) + i * kPage);
  if (want_lists == 0 && pages.size() == 1) CHECK(prp->prp2 == 0);
  if (want_lists > 0) CHECK(prp->prp2 == lists.pages[0].iova);
  // The unused list page is untouched.
  CHECK(lists.mem[want_lists][0] == 0xDEAD);
}

}  // namespace

TEST_CASE("nvme prp: one page, two pages, a list, a full list and chained lists") {
  const uint64_t base = 0x7'0000'0000ull;
  check_transfer(base, 512, 0);                   // one block
  check_transfer(base + 0x200, 4096 - 0x200, 0);  // to the end of the page
  check_transfer(base, 4096, 0);
  check_transfer(base + 0x200, 4096, 0);  // straddles: two pages, PRP2 = the second
  check_transfer(base, 8192, 0);
  check_transfer(base, 8193, 1);  // three pages: a list of two
  check_transfer(base + 4, 3 * kPage, 1);
  check_transfer(base, 513 * kPage, 1);          // 512 list entries: one full list page, no chain
  check_transfer(base, 514 * kPage, 2);          // 513 entries: the last slot chains
  check_transfer(base + 0x800, 513 * kPage, 2);  // misaligned: one page more
  check_transfer(base, (1 + 511 + 512) * kPage, 2);
  check_transfer(base, (1 + 511 + 513) * kPage, 3);
  check_transfer(base + 0x10, 8 * 1024 * 1024, 5);  // 2049 pages, 2048 entries
  // Two pages: PRP2 is the second page itself.
  Lists none(0);
  auto two = nvme_prp_build(base + 0x200, 4096, none.pages);
  REQUIRE(two);
  CHECK(two->prp2 == base + kPage);
}

TEST_CASE("nvme prp: refuses zero bytes, an unaligned IOVA and too few list pages") {
  Lists lists(1);
  CHECK_FALSE(nvme_prp_build(0x10000, 0, lists.pages));
  CHECK_FALSE(nvme_prp_build(0x10002, 512, lists.pages));
  auto r = nvme_prp_build(0x10000, 600 * kPage, lists.pages);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("need 2 PRP list pages, have 1") != std::string::npos);
}

TEST_CASE("nvme prp: MDTS limits each command and the split covers the read exactly") {
  CHECK(nvme_max_transfer(5, 0, 1 << 20) == 128 * 1024);
  CHECK(nvme_max_transfer(0, 0, 1 << 20) == 1 << 20);    // no limit: the driver's cap
  CHECK(nvme_max_transfer(9, 0, 1 << 20) == 1 << 20);    // 2 MiB > cap
  CHECK(nvme_max_transfer(1, 1, 1 << 20) == 16 * 1024);  // MPSMIN 8 KiB

  auto p = nvme_split_read(1000, 1000, 512, 128 * 1024);
  REQUIRE(p.size() == 4);
  CHECK(p[0].lba == 1000);
  CHECK(p[0].blocks == 256);
  CHECK(p[3].lba == 1768);
  CHECK(p[3].blocks == 1000 - 768);
  CHECK(p[3].offset == 768 * 512);
  uint64_t covered = 0;
  for (const auto& x : p) {
    CHECK(x.lba == 1000 + covered);
    CHECK(x.offset == covered * 512);
    CHECK(size_t{x.blocks} * 512 <= 128 * 1024);
    covered += x.blocks;
  }
  CHECK(covered == 1000);
  // NLB is 16 bits: never more than 65536 blocks per command.
  auto q = nvme_split_read(0, 200000, 512, size_t{1} << 30);
  CHECK(q.size() == 4);
  CHECK(q[0].blocks == 65536);
  // A limit below one block still moves one block per command.
  CHECK(nvme_split_read(0, 3, 4096, 512).size() == 3);
  CHECK(nvme_split_read(5, 0, 512, 4096).empty());
}
