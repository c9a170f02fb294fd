// The parts of io/vfio that run without an IOMMU: BAR0 register access over
// plain memory (64-bit as two 32-bit accesses, low half first; outside the BAR
// reads give all ones and writes are dropped), and VfioDma's error path over
// an fd that is no VFIO container (the refused mapping names its size and
// IOVA, frees its memory and gives the IOVA back).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "io/vfio/vfio.h"

using namespace ls;

TEST_CASE("vfio regs: 32- and 64-bit accesses at byte offsets of the BAR") {
  std::vector<uint32_t> bar(0x2000 / 4, 0);
  VfioRegs r(reinterpret_cast<volatile uint8_t*>(bar.data()), 0x2000);
  bar[0] = 0x0f0a0001;  // CAP, low half
  bar[1] = 0x00000020;  // CAP, high half
  CHECK(r.read32(0) == 0x0f0a0001u);
  CHECK(r.read64(0) == 0x000000200f0a0001ull);
  r.write64(0x28, 0x1122334455667000ull);  // ASQ
  CHECK(bar[0x28 / 4] == 0x55667000u);
  CHECK(bar[0x2c / 4] == 0x11223344u);
  r.write32(0x1000, 7);  // SQ 0 tail doorbell
  CHECK(bar[0x1000 / 4] == 7u);
  CHECK(r.bad_accesses() == 0);
  // A driver bug: outside the BAR, or unaligned.
  CHECK(r.read32(0x2000) == 0xffffffffu);
  CHECK(r.read32(2) == 0xffffffffu);
  r.write32(0x1ffe, 1);
  CHECK(r.read64(0x1ffc) == 0xffffffff00000000ull);  // low half in, high half out
  CHECK(r.bad_accesses() == 4);
}

TEST_CASE("vfio dma: a refused mapping is an error naming size and IOVA, and the IOVA comes back") {
  const int fd = ::open("/dev/null", O_RDWR);
  REQUIRE(fd >= 0);
  {
    VfioDma dma(fd, IovaAllocator({{1 << 20, 1 << 30}}));
    auto a = dma.alloc(100);
    REQUIRE_FALSE(a);
    CHECK(a.error().message.find("VFIO_IOMMU_MAP_DMA of 4096 bytes at IOVA 0x100000 failed") !=
          std::string::npos);
    auto b = dma.alloc(100);  // never mapped: the same IOVA again
    REQUIRE_FALSE(b);
    CHECK(b.error().message.find("at IOVA 0x100000") != std::string::npos);
    alignas(4096) static uint8_t page[4096];
    CHECK_FALSE(dma.map(page + 1, 100));  // not page aligned
    CHECK(dma.iova_of(page) == 0);
  }
  ::close(fd);
}
