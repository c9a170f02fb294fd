// NVMe facts and the read-only command set: doorbell offsets, status
// decoding, every factory's command allowed, every other opcode refused.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "io/nvme/command.h"
#include "io/nvme/spec.h"

using namespace ls;
namespace n = ls::nvme;

TEST_CASE("nvme spec: doorbells sit 4 << DSTRD bytes apart, SQ tail before CQ head") {
  CHECK(n::doorbell_stride(0) == 4);
  CHECK(n::doorbell_stride(uint64_t{2} << 32) == 16);
  CHECK(n::sq_doorbell(0, 4) == 0x1000);
  CHECK(n::cq_doorbell(0, 4) == 0x1004);
  CHECK(n::sq_doorbell(3, 4) == 0x1018);
  CHECK(n::cq_doorbell(3, 16) == 0x1000 + 7 * 16);
  CHECK(n::aqa(32, 16) == ((15u << 16) | 31u));
  const uint64_t cap =
      1023 | (uint64_t{20} << 24) | (uint64_t{3} << 32) | (uint64_t{1} << 37) | (uint64_t{2} << 48);
  CHECK(n::cap_mqes(cap) == 1023);
  CHECK(n::cap_to(cap) == 20);
  CHECK(n::cap_dstrd(cap) == 3);
  CHECK(n::cap_css(cap) == 1);
  CHECK(n::cap_mpsmin(cap) == 2);
}

TEST_CASE("nvme spec: a status decodes to its type and code in words") {
  CHECK(n::status_string(n::make_status(n::sct::kGeneric, 0x80)) ==
        "LBA out of range (SCT 0 generic, SC 0x80)");
  CHECK(n::status_string(n::make_status(n::sct::kGeneric, 0x02)) ==
        "invalid field in command (SCT 0 generic, SC 0x02)");
  CHECK(n::status_string(n::make_status(n::sct::kMedia, 0x81)) ==
        "unrecovered read error (SCT 2 media, SC 0x81)");
  CHECK(n::status_string(n::make_status(n::sct::kCommandSpecific, 0x01)) ==
        "invalid queue identifier (SCT 1 command specific, SC 0x01)");
  CHECK(n::status_string(n::make_status(n::sct::kGeneric, 0x7F)) ==
        "status code 0x7f (SCT 0 generic, SC 0x7f)");
  CHECK(n::status_string(n::make_status(5, 0x12)) == "status code 0x12 (SCT 5 reserved, SC 0x12)");
  // Do Not Retry (bit 14) is said; More (bit 13) does not change the words.
  CHECK(n::status_string(n::make_status(n::sct::kGeneric, 0x80) | n::kStatusDnr | 0x2000) ==
        "LBA out of range (SCT 0 generic, SC 0x80, do not retry)");
  // The status field of a CQE sits above the phase tag.
  const uint16_t sp =
      static_cast<uint16_t>((n::make_status(n::sct::kMedia, 0x81) | 0x4000) << 1 | 1);
  CHECK(n::cqe_phase(sp));
  CHECK(n::status_code(n::cqe_status(sp)) == 0x81);
  CHECK(n::status_type(n::cqe_status(sp)) == n::sct::kMedia);
}

namespace {
const std::set<uint8_t> kAdminAllowed = {n::admin::kDeleteIoSq, n::admin::kCreateIoSq,
                                         n::admin::kDeleteIoCq, n::admin::kCreateIoCq,
                                         n::admin::kIdentify,   n::admin::kSetFeatures};
}  // namespace

TEST_CASE("nvme command: every factory builds a command in the read-only allow-list") {
  auto rd = NvmeCommand::read(1, 0x1'2345'6789ull, 8, 0x10000, 0);
  REQUIRE(rd);
  std::vector<NvmeCommand> all = {
      *rd,
      NvmeCommand::identify_controller(0x1000),
      NvmeCommand::identify_namespace(1, 0x1000),
      NvmeCommand::set_features_num_queues(4, 4),
      NvmeCommand::create_io_cq(1, 64, 0x2000),
      NvmeCommand::create_io_sq(1, 64, 0x3000, 1),
      NvmeCommand::delete_io_sq(1),
      NvmeCommand::delete_io_cq(1),
  };
  for (const NvmeCommand& c : all) {
    CAPTURE(c.name());
    if (c.kind() == NvmeQueueKind::io) {
      CHECK(c.opcode() == n::io::kRead);
    } else {
      CHECK(kAdminAllowed.count(c.opcode()) == 1);
    }
    CHECK(nvme_command_allowed(c.kind(), c.entry()).ok());
  }
  // Read's fields: SLBA in CDW10/11, NLB 0's based in CDW12.
  CHECK(rd->entry().cdw10 == 0x23456789u);
  CHECK(rd->entry().cdw11 == 0x1u);
  CHECK(rd->entry().cdw12 == 7u);
  CHECK(rd->entry().nsid == 1u);
  CHECK(all[4].entry().cdw10 == ((63u << 16) | 1u));
  CHECK(all[5].entry().cdw11 == ((1u << 16) | 1u));
}

TEST_CASE("nvme command: the allow-list refuses every other opcode of either queue kind") {
  for (int op = 0; op < 256; ++op) {
    n::SubmissionEntry e;
    e.opcode = static_cast<uint8_t>(op);
    e.cdw10 = op == n::admin::kIdentify      ? n::admin::kCnsController
              : op == n::admin::kSetFeatures ? n::admin::kFeatureNumQueues
                                             : 0;
    CAPTURE(op);
    CHECK(nvme_command_allowed(NvmeQueueKind::io, e).ok() == (op == n::io::kRead));
    CHECK(nvme_command_allowed(NvmeQueueKind::admin, e).ok() == (kAdminAllowed.count(op) == 1));
  }
  // Sub-functions: only identify controller/namespace, only the number of queues.
  n::SubmissionEntry e;
  e.opcode = n::admin::kIdentify;
  e.cdw10 = 0x02;  // active namespace list: harmless, but not needed, so not allowed
  CHECK_FALSE(nvme_command_allowed(NvmeQueueKind::admin, e).ok());
  e.opcode = n::admin::kSetFeatures;
  e.cdw10 = 0x06;  // volatile write cache
  Status st = nvme_command_allowed(NvmeQueueKind::admin, e);
  CHECK_FALSE(st.ok());
  CHECK(st.error().message.find("FID 0x06") != std::string::npos);
  e.opcode = n::io::kWrite;
  st = nvme_command_allowed(NvmeQueueKind::io, e);
  CHECK(st.error().message.find("only reads") != std::string::npos);
}

TEST_CASE("nvme command: read refuses 0 or more than 65536 blocks and an unaligned PRP1") {
  CHECK_FALSE(NvmeCommand::read(1, 0, 0, 0x1000, 0));
  auto big = NvmeCommand::read(1, 77, 65537, 0x1000, 0);
  REQUIRE_FALSE(big);
  CHECK(big.error().message.find("LBA 77") != std::string::npos);
  CHECK(NvmeCommand::read(1, 0, 65536, 0x1000, 0));
  CHECK_FALSE(NvmeCommand::read(1, 0, 1, 0x1002, 0));
}
