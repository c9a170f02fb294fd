// Queue pair mechanics against the in-memory controller: doorbell offsets and
// values, the phase tag over several laps, command-id reuse, a full queue
// that is never overrun, completions out of order, and the submit path's
// own refusal of a disallowed entry.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <set>

#include "io/nvme/controller.h"
#include "tests/unit/io/nvme/mem_controller.h"

namespace ls {
// Test-only: makes a command the factories never would (command.h).
struct NvmeCommandForge {
  static NvmeCommand make(NvmeQueueKind kind, const nvme::SubmissionEntry& e) {
    return NvmeCommand(kind, e);
  }
};
}  // namespace ls

using namespace ls;
using ls::test::HeapDma;
using ls::test::MemNvme;
using ls::test::MemNvmeConfig;

namespace {

struct Rig {
  HeapDma dma;
  MemNvme dev;
  std::unique_ptr<NvmeController> ctrl;
  explicit Rig(const MemNvmeConfig& cfg, NvmeControllerOptions opts = {}) : dev(dma, cfg) {
    opts.command_timeout = std::chrono::milliseconds(200);
    auto c = NvmeController::open(dev, dma, opts);
    REQUIRE_MESSAGE(c, (c ? "" : c.error().message));
    ctrl = std::move(*c);
  }
};

// Submit a one-block read of `lba` into `iova` on `q`; returns the cid.
uint16_t submit_read(NvmeQueuePair& q, uint64_t lba, uint64_t iova) {
  auto cid = q.reserve();
  REQUIRE(cid);
  auto cmd = NvmeCommand::read(1, lba, 1, iova, 0);
  REQUIRE(cmd);
  REQUIRE(q.submit(*cid, *cmd).ok());
  return *cid;
}

}  // namespace

TEST_CASE("nvme queue: doorbells on the stride, tail and head wrap, the phase flips each lap") {
  MemNvmeConfig cfg;
  cfg.dstrd = 2;  // 16-byte stride
  NvmeControllerOptions opts;
  opts.io_queue_depth = 4;
  Rig r(cfg, opts);
  NvmeQueuePair& q = r.ctrl->io_queue(0);
  REQUIRE(q.entries() == 4);
  auto buf = r.dma.alloc(4096);
  REQUIRE(buf);
  const size_t before = r.dev.doorbells().size();
  const int laps = 5;
  for (int i = 0; i < 4 * laps; ++i) {
    const uint16_t cid = submit_read(q, i, buf->iova);
    auto c = q.wait(std::chrono::milliseconds(200));
    REQUIRE(c);
    CHECK(c->cid == cid);
    CHECK(c->status == 0);
    CHECK(std::memcmp(buf->host, r.dev.data().data() + i * 512, 512) == 0);
    // After each lap the expected phase has flipped once more.
    CHECK(q.cq_phase() == (((i + 1) / 4) % 2 == 0));
  }
  const auto& db = r.dev.doorbells();
  REQUIRE(db.size() - before == size_t{2} * 4 * laps);
  for (int i = 0; i < 4 * laps; ++i) {
    const auto& sq = db[before + 2 * i];
    const auto& cq = db[before + 2 * i + 1];
    CHECK(sq.offset == 0x1000 + 2 * 16);  // queue 1, SQ tail
    CHECK(cq.offset == 0x1000 + 3 * 16);  // queue 1, CQ head
    CHECK(sq.value == uint32_t((i + 1) % 4));
    CHECK(cq.value == uint32_t((i + 1) % 4));
  }
  CHECK(r.dev.violations().empty());
  r.dma.free(*buf);
}

TEST_CASE("nvme queue: a full queue refuses more, ids return only after completion, FIFO reuse") {
  NvmeControllerOptions opts;
  opts.io_queue_depth = 8;
  Rig r(MemNvmeConfig{}, opts);
  NvmeQueuePair& q = r.ctrl->io_queue(0);
  auto buf = r.dma.alloc(4096);
  REQUIRE(buf);
  r.dev.faults.hold_fetch = true;  // the controller fetches nothing yet
  std::vector<uint16_t> cids;
  for (int i = 0; i < 7; ++i) cids.push_back(submit_read(q, i, buf->iova));
  CHECK(std::set<uint16_t>(cids.begin(), cids.end()).size() == 7);
  // 8 entries hold 7 commands: one more would overrun the rings.
  CHECK(q.full());
  auto more = q.reserve();
  REQUIRE_FALSE(more);
  CHECK(more.error().message.find("queue 1 is full") != std::string::npos);
  CHECK(r.dev.violations().empty());

  r.dev.release_fetch();
  auto c = q.wait(std::chrono::milliseconds(200));
  REQUIRE(c);
  CHECK(c->cid == cids[0]);
  // One id is free again, and it is the one just completed (the others are outstanding).
  const uint16_t again = submit_read(q, 9, buf->iova);
  CHECK(again == cids[0]);
  std::set<uint16_t> done;
  for (int i = 0; i < 7; ++i) {
    auto d = q.wait(std::chrono::milliseconds(200));
    REQUIRE(d);
    CHECK(done.insert(d->cid).second);
  }
  CHECK(q.outstanding() == 0);
  CHECK(r.dev.violations().empty());
  r.dma.free(*buf);
}

TEST_CASE("nvme queue: completions in another order are matched by command id") {
  NvmeControllerOptions opts;
  opts.io_queue_depth = 16;
  Rig r(MemNvmeConfig{}, opts);
  NvmeQueuePair& q = r.ctrl->io_queue(0);
  auto buf = r.dma.alloc(8 * 4096);
  REQUIRE(buf);
  r.dev.faults.reorder = true;
  std::vector<uint16_t> cids;
  for (int i = 0; i < 8; ++i) cids.push_back(submit_read(q, 100 + i, buf->iova + i * 4096));
  std::vector<uint16_t> order;
  for (int i = 0; i < 8; ++i) {
    auto c = q.wait(std::chrono::milliseconds(200));
    REQUIRE(c);
    order.push_back(c->cid);
    // The entry handed back is the one submitted under this id.
    const int k = int(std::find(cids.begin(), cids.end(), c->cid) - cids.begin());
    CHECK(c->entry.cdw10 == uint32_t(100 + k));
  }
  CHECK(order == std::vector<uint16_t>(cids.rbegin(), cids.rend()));
  for (int i = 0; i < 8; ++i) {
    CHECK(std::memcmp(static_cast<uint8_t*>(buf->host) + i * 4096,
                      r.dev.data().data() + (100 + i) * 512, 512) == 0);
  }
  CHECK(r.dev.violations().empty());
  r.dma.free(*buf);
}

TEST_CASE("nvme queue: submit refuses a forged entry outside the allow-list, before the device") {
  Rig r(MemNvmeConfig{});
  NvmeQueuePair& io = r.ctrl->io_queue(0);
  NvmeQueuePair& adm = r.ctrl->admin_queue();
  const size_t doorbells = r.dev.doorbells().size();
  const size_t seen = r.dev.commands_seen().size();

  nvme::SubmissionEntry write;
  write.opcode = nvme::io::kWrite;
  write.nsid = 1;
  nvme::SubmissionEntry format;
  format.opcode = nvme::admin::kFormatNvm;
  nvme::SubmissionEntry flush;
  flush.opcode = nvme::io::kFlush;
  struct Case {
    NvmeQueuePair* q;
    NvmeCommand cmd;
    const char* words;
  };
  auto rd = NvmeCommand::read(1, 0, 1, 0x1000, 0);
  REQUIRE(rd);
  std::vector<Case> cases = {
      {&io, NvmeCommandForge::make(NvmeQueueKind::io, write), "only reads"},
      {&io, NvmeCommandForge::make(NvmeQueueKind::io, flush), "only reads"},
      {&adm, NvmeCommandForge::make(NvmeQueueKind::admin, format), "allow-list"},
      // Admin 0x01 (create I/O SQ) on an I/O queue would be a Write.
      {&io, NvmeCommand::create_io_sq(2, 8, 0x1000, 1), "admin command"},
      {&adm, *rd, "I/O command"},
  };
  for (Case& c : cases) {
    CAPTURE(c.words);
    const uint16_t tail = c.q->sq_tail();
    auto cid = c.q->reserve();
    REQUIRE(cid);
    Status st = c.q->submit(*cid, c.cmd);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message.find(c.words) != std::string::npos);
    CHECK(c.q->sq_tail() == tail);
    CHECK(c.q->outstanding() == 0);
    CHECK_FALSE(c.q->full());
  }
  CHECK(r.dev.doorbells().size() == doorbells);
  CHECK(r.dev.commands_seen().size() == seen);
  CHECK(r.dev.violations().empty());
}

TEST_CASE("nvme queue: a completion for a command id not outstanding is an error") {
  Rig r(MemNvmeConfig{});
  NvmeQueuePair& q = r.ctrl->io_queue(0);
  auto buf = r.dma.alloc(4096);
  REQUIRE(buf);
  r.dev.faults.duplicate_completions = true;
  const uint16_t cid = submit_read(q, 5, buf->iova);
  r.dev.faults.duplicate_completions = false;  // the admin queue at shutdown stays sane
  auto first = q.wait(std::chrono::milliseconds(200));
  REQUIRE(first);
  CHECK(first->cid == cid);
  // The same completion again: the id is free now, so it cannot be matched.
  auto second = q.poll();
  REQUIRE_FALSE(second);
  CHECK(second.error().message.find("not outstanding") != std::string::npos);
  r.dma.free(*buf);
}
