// The controller driver end to end against the in-memory controller:
// bring-up, reads compared byte for byte at queue depths 1, 8 and 64, each
// fault with its clear error and the controller left disabled, and the proof
// that nothing but the read-only command set ever reached the device.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <random>

#include "io/nvme/controller.h"
#include "tests/unit/io/nvme/mem_controller.h"

using namespace ls;
using ls::test::HeapDma;
using ls::test::MemNvme;
using ls::test::MemNvmeConfig;

namespace {

bool contains(const std::string& s, const char* part) {
  return s.find(part) != std::string::npos;
}

// The controller must end disabled: CC.EN = 0 and CSTS.RDY = 0 (CSTS is
// read twice: RDY follows EN after a read or two).
void check_disabled(MemNvme& dev) {
  for (int i = 0; i < 4; ++i) (void)dev.read32(nvme::reg::kCsts);
  CHECK((dev.cc() & nvme::cc::kEn) == 0);
  CHECK((dev.csts() & nvme::csts::kRdy) == 0);
  CHECK(dev.io_queues() == 0);
}

void check_read_only(const MemNvme& dev) {
  for (const auto& s : dev.commands_seen()) {
    CAPTURE(int(s.opcode));
    if (s.admin) {
      CHECK((s.opcode == 0x00 || s.opcode == 0x01 || s.opcode == 0x04 || s.opcode == 0x05 ||
             s.opcode == 0x06 || s.opcode == 0x09));
    } else {
      CHECK(s.opcode == nvme::io::kRead);
    }
  }
}

NvmeControllerOptions quick(uint32_t depth = 64, uint32_t queues = 1) {
  NvmeControllerOptions o;
  o.io_queue_depth = depth;
  o.io_queues = queues;
  o.command_timeout = std::chrono::milliseconds(100);
  return o;
}

}  // namespace

TEST_CASE("nvme controller: bring-up identifies, creates capped queues, shutdown leaves it off") {
  HeapDma dma;
  MemNvmeConfig cfg;
  cfg.mqes = 15;  // queues of at most 16 entries
  cfg.max_io_queues = 3;
  cfg.nsze = 1000;
  cfg.lbads = 12;
  MemNvme dev(dma, cfg);
  auto c = NvmeController::open(dev, dma, quick(64, 4));
  REQUIRE_MESSAGE(c, (c ? "" : c.error().message));
  const NvmeControllerInfo& info = (*c)->info();
  CHECK(info.model == "layerstream in-memory NVMe");
  CHECK(info.serial == "MEM0001");
  CHECK(info.firmware == "1.0");
  CHECK(info.mdts == 5);
  CHECK(info.max_transfer == 128 * 1024);
  CHECK(info.nsze == 1000);
  CHECK(info.block_size == 4096);
  CHECK(info.io_queues == 3);        // asked 4, granted 3
  CHECK(info.io_queue_depth == 16);  // asked 64, CAP.MQES + 1 = 16
  CHECK(info.ready_timeout_ms == 500);
  CHECK(dev.io_queues() == 3);
  CHECK((dev.cc() & nvme::cc::kEn) != 0);
  CHECK(((dev.cc() >> nvme::cc::kIosqesShift) & 0xF) == 6);
  CHECK(((dev.cc() >> nvme::cc::kIocqesShift) & 0xF) == 4);
  CHECK((dev.csts() & nvme::csts::kRdy) != 0);
  CHECK((*c)->shutdown().ok());
  check_disabled(dev);
  CHECK((*c)->shutdown().ok());  // idempotent
  auto r = (*c)->read(0, 1, 0x1000);
  REQUIRE_FALSE(r.ok());
  CHECK(contains(r.error().message, "shut down"));
  c->reset();
  CHECK(dma.regions() == 0);  // every queue, list and identify buffer freed
  CHECK(dev.violations().empty());
  check_read_only(dev);
}

TEST_CASE("nvme controller: the destructor shuts the controller down") {
  HeapDma dma;
  MemNvme dev(dma, MemNvmeConfig{});
  {
    auto c = NvmeController::open(dev, dma, quick());
    REQUIRE(c);
    CHECK((dev.cc() & nvme::cc::kEn) != 0);
  }
  check_disabled(dev);
  CHECK(dma.regions() == 0);
}

TEST_CASE("nvme controller: every read equals the backing data at queue depths 1, 8 and 64") {
  std::mt19937_64 rng(7);
  for (uint32_t lbads : {9u, 12u}) {
    for (uint32_t qd : {1u, 8u, 64u}) {
      CAPTURE(lbads);
      CAPTURE(qd);
      HeapDma dma;
      MemNvmeConfig cfg;
      cfg.lbads = lbads;
      cfg.nsze = lbads == 9 ? 8192 : 1024;  // 4 MiB
      cfg.mdts = 3;                         // 32 KiB per command: most reads split
      MemNvme dev(dma, cfg);
      auto c = NvmeController::open(dev, dma, quick(qd + 1, 2));  // qd in flight: qd + 1 entries
      REQUIRE_MESSAGE(c, (c ? "" : c.error().message));
      // The destination is the caller's memory, mapped (not allocated) for the device.
      std::vector<uint8_t> host((2 << 20) + 8192);
      void* page = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(host.data()) + 4095) &
                                           ~uintptr_t{4095});
      auto iova = dma.map(page, 2 << 20);
      REQUIRE(iova);
      const uint32_t bs = 1u << lbads;
      for (int i = 0; i < 40; ++i) {
        const uint64_t blocks = 1 + rng() % ((1 << 20) / bs);
        const uint64_t lba = rng() % (cfg.nsze - blocks + 1);
        const size_t off = (rng() % 1024) * 4;  // any dword offset into the buffer
        std::memset(page, 0xA5, (1 << 20) + off + 64);
        Status st = (*c)->read(lba, blocks, *iova + off, i % 2);
        REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().message));
        const uint8_t* got = static_cast<uint8_t*>(page) + off;
        CHECK(std::memcmp(got, dev.data().data() + lba * bs, blocks * bs) == 0);
        CHECK(got[blocks * bs] == 0xA5);  // nothing past the end
      }
      CHECK(dev.max_blocks_per_read() == (32u * 1024) / bs);
      CHECK((*c)->shutdown().ok());
      dma.unmap(page, 2 << 20);
      check_disabled(dev);
      CHECK(dev.violations().empty());
      check_read_only(dev);
    }
  }
}

TEST_CASE("nvme controller: transfers beyond 512 pages go through chained PRP lists") {
  HeapDma dma;
  MemNvmeConfig cfg;
  cfg.lbads = 12;
  cfg.nsze = 4096;  // 16 MiB
  cfg.mdts = 0;     // no limit: the driver's cap applies
  MemNvme dev(dma, cfg);
  NvmeControllerOptions o = quick(8);
  o.max_transfer_cap = 4 << 20;
  auto c = NvmeController::open(dev, dma, o);
  REQUIRE(c);
  auto buf = dma.alloc((8 << 20) + 4096);
  REQUIRE(buf);
  Status st = (*c)->read(100, 2048, buf->iova + 512);  // 8 MiB, misaligned: 2 commands of 4 MiB
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().message));
  CHECK(std::memcmp(static_cast<uint8_t*>(buf->host) + 512, dev.data().data() + 100 * 4096,
                    8 << 20) == 0);
  CHECK(dev.reads_served() == 2);
  CHECK(dev.prp_lists_chained() >= 2);
  dma.free(*buf);
  CHECK(dev.violations().empty());
}

TEST_CASE("nvme controller: a read beyond the namespace is refused before it is submitted") {
  HeapDma dma;
  MemNvme dev(dma, MemNvmeConfig{});  // 4096 blocks
  auto c = NvmeController::open(dev, dma, quick());
  REQUIRE(c);
  const size_t seen = dev.commands_seen().size();
  Status st = (*c)->read(4090, 8, 0x1000);
  REQUIRE_FALSE(st.ok());
  CHECK(contains(st.error().message, "LBA 4090"));
  CHECK(contains(st.error().message, "NSZE = 4096"));
  CHECK_FALSE((*c)->read(1ull << 62, 1, 0x1000).ok());
  CHECK(dev.commands_seen().size() == seen);
  // The controller is still fine for reads inside it.
  auto buf = dma.alloc(4096);
  REQUIRE(buf);
  CHECK((*c)->read(4095, 1, buf->iova).ok());
  dma.free(*buf);
}

TEST_CASE("nvme controller: an error status names the LBA and the decoded status") {
  HeapDma dma;
  MemNvme dev(dma, MemNvmeConfig{});
  dev.faults.error_lba = 800;
  auto c = NvmeController::open(dev, dma, quick(8));
  REQUIRE(c);
  auto buf = dma.alloc(1 << 20);
  REQUIRE(buf);
  // 1024 blocks in 4 commands of 256 (MDTS 128 KiB); the second covers LBA 800.
  Status st = (*c)->read(512, 1024, buf->iova);
  REQUIRE_FALSE(st.ok());
  CHECK(contains(st.error().message, "read of 256 blocks at LBA 768 failed"));
  CHECK(contains(st.error().message, "unrecovered read error (SCT 2 media, SC 0x81)"));
  CHECK(contains(st.error().message, "(namespace 1, I/O queue 1)"));
  // Every other command of the read was reaped before the error came back.
  CHECK((*c)->io_queue(0).outstanding() == 0);
  CHECK(dev.reads_served() == 3);
  CHECK((*c)->shutdown().ok());
  check_disabled(dev);
  dma.free(*buf);
  check_read_only(dev);
}

TEST_CASE("nvme controller: a command that never completes times out naming it and its queue") {
  HeapDma dma;
  MemNvme dev(dma, MemNvmeConfig{});
  dev.faults.hang_lba = 42;
  auto c = NvmeController::open(dev, dma, quick(8, 2));
  REQUIRE(c);
  auto buf = dma.alloc(8192);
  REQUIRE(buf);
  Status st = (*c)->read(40, 4, buf->iova, 1);
  REQUIRE_FALSE(st.ok());
  CHECK(contains(st.error().message, "read of 4 blocks at LBA 40"));
  CHECK(contains(st.error().message, "I/O queue 2"));
  CHECK(contains(st.error().message, "timed out after 100 ms"));
  // Disabled before read() returned: the hung command may still write into
  // buf, which a caller frees on the error.
  CHECK(contains(st.error().message, "the controller was disabled"));
  CHECK((*c)->failed());
  CHECK((dev.cc() & nvme::cc::kEn) == 0);
  CHECK((dev.csts() & nvme::csts::kRdy) == 0);
  // Nothing more goes to a controller that may have been writing.
  st = (*c)->read(0, 1, buf->iova);
  REQUIRE_FALSE(st.ok());
  CHECK(contains(st.error().message, "failed"));
  (void)(*c)->shutdown();
  check_disabled(dev);
  c->reset();
  dma.free(*buf);
}

TEST_CASE("nvme controller: controller fatal status stops a read and the controller is reset") {
  HeapDma dma;
  MemNvme dev(dma, MemNvmeConfig{});
  auto c = NvmeController::open(dev, dma, quick(8));
  REQUIRE(c);
  dev.faults.fatal_after_commands = static_cast<uint32_t>(dev.commands_seen().size()) + 2;
  auto buf = dma.alloc(1 << 20);
  REQUIRE(buf);
  Status st = (*c)->read(0, 2048, buf->iova);
  REQUIRE_FALSE(st.ok());
  CHECK(contains(st.error().message, "CSTS.CFS=1"));
  CHECK(dev.reads_served() == 2);
  // Reset before read() returned, not only at shutdown.
  CHECK(contains(st.error().message, "the controller was disabled"));
  CHECK((dev.cc() & nvme::cc::kEn) == 0);
  CHECK((dev.csts() & nvme::csts::kRdy) == 0);
  (void)(*c)->shutdown();
  check_disabled(dev);
  CHECK((dev.csts() & nvme::csts::kCfs) == 0);  // the reset cleared it
  c->reset();
  dma.free(*buf);
  CHECK(dma.regions() == 0);
}

TEST_CASE("nvme controller: fatal status at enable, or never ready, fails open and leaves it off") {
  {
    HeapDma dma;
    MemNvme dev(dma, MemNvmeConfig{});
    dev.faults.fatal_on_enable = true;
    auto c = NvmeController::open(dev, dma, quick());
    REQUIRE_FALSE(c);
    CHECK(contains(c.error().message, "enable: controller fatal status (CSTS.CFS=1)"));
    CHECK(contains(c.error().message, "the controller refused CC 0x00460001 (MPS 0, IOSQES 6"));
    check_disabled(dev);
    CHECK(dma.regions() == 0);
  }
  {
    HeapDma dma;
    MemNvme dev(dma, MemNvmeConfig{});  // CAP.TO = 1: 500 ms
    dev.faults.never_ready = true;
    auto c = NvmeController::open(dev, dma, quick());
    REQUIRE_FALSE(c);
    CHECK(contains(c.error().message, "CSTS.RDY did not become 1 within CAP.TO = 500 ms"));
    check_disabled(dev);
    CHECK(dma.regions() == 0);
  }
  {
    // A namespace the controller does not have.
    HeapDma dma;
    MemNvme dev(dma, MemNvmeConfig{});
    NvmeControllerOptions o = quick();
    o.nsid = 2;
    auto c = NvmeController::open(dev, dma, o);
    REQUIRE_FALSE(c);
    CHECK(contains(c.error().message, "namespace 2 does not exist"));
    check_disabled(dev);
  }
}

TEST_CASE("nvme controller: out-of-order completions still fill the right bytes") {
  HeapDma dma;
  MemNvmeConfig cfg;
  cfg.mdts = 1;  // 8 KiB per command: many commands per read
  MemNvme dev(dma, cfg);
  dev.faults.reorder = true;
  auto c = NvmeController::open(dev, dma, quick(16));
  REQUIRE(c);
  auto buf = dma.alloc(1 << 20);
  REQUIRE(buf);
  Status st = (*c)->read(3, 1000, buf->iova + 12);
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().message));
  CHECK(std::memcmp(static_cast<uint8_t*>(buf->host) + 12, dev.data().data() + 3 * 512,
                    1000 * 512) == 0);
  CHECK(dev.violations().empty());
  dma.free(*buf);
}
