// Read-only by construction: an NvmeCommand can only be made by the
// factories below. The one I/O command is Read; the admin commands are the
// few that bring a controller up and down (identify, number of queues, I/O
// queue create/delete). Nothing here can write, flush, format, sanitize,
// trim or touch firmware. The queue's submit path checks every entry against
// nvme_command_allowed() once more (defence in depth), because opcodes are
// reused across the two queue kinds: admin 0x01 (create I/O SQ) is I/O 0x01
// (write), admin 0x00 (delete I/O SQ) is I/O 0x00 (flush).
// defines: NvmeQueueKind, NvmeCommand, nvme_command_allowed(), nvme_command_name()
#pragma once

#include <cstdint>

#include "io/nvme/spec.h"
#include "runtime/status.h"

namespace ls {

enum class NvmeQueueKind : uint8_t { admin, io };

// "read", "identify controller", "create I/O submission queue", ...
const char* nvme_command_name(NvmeQueueKind kind, const nvme::SubmissionEntry& e);

class NvmeCommand {
 public:
  // I/O: read `blocks` (1..65536) logical blocks from `slba` of namespace
  // `nsid` into the memory the PRP entries describe (io/nvme/prp.h).
  static Expected<NvmeCommand> read(uint32_t nsid, uint64_t slba, uint32_t blocks, uint64_t prp1,
                                    uint64_t prp2);

  // Admin. Identify data (4096 bytes) lands at `prp1` (page aligned).
  static NvmeCommand identify_controller(uint64_t prp1);
  static NvmeCommand identify_namespace(uint32_t nsid, uint64_t prp1);
  // Ask for `sq` submission and `cq` completion I/O queues (1-based counts).
  static NvmeCommand set_features_num_queues(uint16_t sq, uint16_t cq);
  // Physically contiguous queues of `entries` entries at `iova`, polled (no interrupts).
  static NvmeCommand create_io_cq(uint16_t qid, uint16_t entries, uint64_t iova);
  static NvmeCommand create_io_sq(uint16_t qid, uint16_t entries, uint64_t iova, uint16_t cqid);
  static NvmeCommand delete_io_sq(uint16_t qid);
  static NvmeCommand delete_io_cq(uint16_t qid);

  NvmeQueueKind kind() const { return kind_; }
  uint8_t opcode() const { return entry_.opcode; }
  // The entry without its command id (the queue assigns one).
  const nvme::SubmissionEntry& entry() const { return entry_; }
  // "read", "identify controller", ...: for error messages.
  const char* name() const { return nvme_command_name(kind_, entry_); }

 private:
  // Only the factories make commands. NvmeCommandForge exists for one unit
  // test, which forges a disallowed entry to prove that submit refuses it;
  // it is declared here and defined nowhere in the library.
  friend struct NvmeCommandForge;
  NvmeCommand(NvmeQueueKind kind, const nvme::SubmissionEntry& e) : kind_(kind), entry_(e) {}

  NvmeQueueKind kind_;
  nvme::SubmissionEntry entry_;
};

// The allow-list: (queue kind, opcode) and, for the admin commands with
// sub-functions, the sub-function (Identify CNS, Set Features FID). An error
// names what was refused.
Status nvme_command_allowed(NvmeQueueKind kind, const nvme::SubmissionEntry& e);

}  // namespace ls
