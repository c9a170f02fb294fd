// The only place NVMe commands are built. Field layouts are from the NVMe
// base specification (admin commands) and the NVM command set (Read).
#include "io/nvme/command.h"

namespace ls {

using nvme::SubmissionEntry;
namespace admin = nvme::admin;

Expected<NvmeCommand> NvmeCommand::read(uint32_t nsid, uint64_t slba, uint32_t blocks,
                                        uint64_t prp1, uint64_t prp2) {
  // NLB is a 16-bit 0's based count, so one command moves 1..65536 blocks.
  if (blocks == 0 || blocks > 65536) {
    return make_error("nvme read: %u blocks at LBA %llu: one command reads 1..65536 blocks", blocks,
                      static_cast<unsigned long long>(slba));
  }
  if (prp1 & 3) {
    return make_error("nvme read at LBA %llu: PRP1 0x%llx is not dword aligned",
                      static_cast<unsigned long long>(slba), static_cast<unsigned long long>(prp1));
  }
  SubmissionEntry e;
  e.opcode = nvme::io::kRead;
  e.nsid = nsid;
  e.prp1 = prp1;
  e.prp2 = prp2;
  e.cdw10 = static_cast<uint32_t>(slba);
  e.cdw11 = static_cast<uint32_t>(slba >> 32);
  e.cdw12 = blocks - 1;  // no FUA, no limited retry, no protection information
  return NvmeCommand(NvmeQueueKind::io, e);
}

NvmeCommand NvmeCommand::identify_controller(uint64_t prp1) {
  SubmissionEntry e;
  e.opcode = admin::kIdentify;
  e.prp1 = prp1;
  e.cdw10 = admin::kCnsController;
  return NvmeCommand(NvmeQueueKind::admin, e);
}

NvmeCommand NvmeCommand::identify_namespace(uint32_t nsid, uint64_t prp1) {
  SubmissionEntry e;
  e.opcode = admin::kIdentify;
  e.nsid = nsid;
  e.prp1 = prp1;
  e.cdw10 = admin::kCnsNamespace;
  return NvmeCommand(NvmeQueueKind::admin, e);
}

NvmeCommand NvmeCommand::set_features_num_queues(uint16_t sq, uint16_t cq) {
  SubmissionEntry e;
  e.opcode = admin::kSetFeatures;
  e.cdw10 = admin::kFeatureNumQueues;  // not saved (SV = 0): the setting ends with the reset
  e.cdw11 = (static_cast<uint32_t>(cq - 1) << 16) | static_cast<uint16_t>(sq - 1);
  return NvmeCommand(NvmeQueueKind::admin, e);
}

NvmeCommand NvmeCommand::create_io_cq(uint16_t qid, uint16_t entries, uint64_t iova) {
  SubmissionEntry e;
  e.opcode = admin::kCreateIoCq;
  e.prp1 = iova;
  e.cdw10 = (static_cast<uint32_t>(entries - 1) << 16) | qid;
  e.cdw11 = 1;  // PC: physically contiguous; IEN = 0: polled
  return NvmeCommand(NvmeQueueKind::admin, e);
}

NvmeCommand NvmeCommand::create_io_sq(uint16_t qid, uint16_t entries, uint64_t iova,
                                      uint16_t cqid) {
  SubmissionEntry e;
  e.opcode = admin::kCreateIoSq;
  e.prp1 = iova;
  e.cdw10 = (static_cast<uint32_t>(entries - 1) << 16) | qid;
  e.cdw11 = (static_cast<uint32_t>(cqid) << 16) | 1;  // PC = 1, priority 0
  return NvmeCommand(NvmeQueueKind::admin, e);
}

NvmeCommand NvmeCommand::delete_io_sq(uint16_t qid) {
  SubmissionEntry e;
  e.opcode = admin::kDeleteIoSq;
  e.cdw10 = qid;
  return NvmeCommand(NvmeQueueKind::admin, e);
}

NvmeCommand NvmeCommand::delete_io_cq(uint16_t qid) {
  SubmissionEntry e;
  e.opcode = admin::kDeleteIoCq;
  e.cdw10 = qid;
  return NvmeCommand(NvmeQueueKind::admin, e);
}

const char* nvme_command_name(NvmeQueueKind kind, const SubmissionEntry& e) {
  if (kind == NvmeQueueKind::io) return e.opcode == nvme::io::kRead ? "read" : "I/O command";
  switch (e.opcode) {
    case admin::kIdentify:
      return (e.cdw10 & 0xFF) == admin::kCnsController ? "identify controller"
                                                       : "identify namespace";
    case admin::kSetFeatures:
      return "set features (number of queues)";
    case admin::kCreateIoCq:
      return "create I/O completion queue";
    case admin::kCreateIoSq:
      return "create I/O submission queue";
    case admin::kDeleteIoSq:
      return "delete I/O submission queue";
    case admin::kDeleteIoCq:
      return "delete I/O completion queue";
    default:
      return "admin command";
  }
}

Status nvme_command_allowed(NvmeQueueKind kind, const SubmissionEntry& e) {
  if (kind == NvmeQueueKind::io) {
    if (e.opcode == nvme::io::kRead) return ok();
    return make_error("nvme: refused I/O opcode 0x%02x: this driver only reads", e.opcode);
  }
  switch (e.opcode) {
    case admin::kIdentify: {
      const uint32_t cns = e.cdw10 & 0xFF;
      if (cns == admin::kCnsController || cns == admin::kCnsNamespace) return ok();
      return make_error("nvme: refused identify CNS 0x%02x", cns);
    }
    case admin::kSetFeatures: {
      const uint32_t fid = e.cdw10 & 0xFF;
      if (fid == admin::kFeatureNumQueues) return ok();
      return make_error("nvme: refused set features FID 0x%02x: only the number of queues", fid);
    }
    case admin::kCreateIoCq:
    case admin::kCreateIoSq:
    case admin::kDeleteIoSq:
    case admin::kDeleteIoCq:
      return ok();
    default:
      return make_error("nvme: refused admin opcode 0x%02x: not in the read-only allow-list",
                        e.opcode);
  }
}

}  // namespace ls
