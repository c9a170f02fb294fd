// One NVMe queue pair (a submission queue and its completion queue), polled.
//   submit: reserve() a command id and an SQ slot, submit() the entry at the
//     SQ tail, ring the tail doorbell. Command ids come from a free list and
//     return to it only when their completion has been reaped, so an id is
//     never reused while the controller may still answer it.
//   complete: a CQ entry is new when its phase tag equals the phase we
//     expect; the expected phase flips each time the head wraps. After
//     reaping, the head doorbell tells the controller the slot is free.
//     Completions may come in any order; they are matched by command id.
//   never overrun: at most entries - 1 commands are outstanding (so the CQ
//     can always take their completions), and the SQ slots in use are
//     counted from the SQ head the controller reports in each completion.
// Not thread-safe: one owner polls it (a reader actor or the admin path).
// defines: NvmeCompletion, NvmeQueuePair
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "io/nvme/command.h"
#include "io/nvme/hw.h"
#include "io/nvme/prp.h"
#include "io/nvme/spec.h"
#include "runtime/status.h"

namespace ls {

struct NvmeCompletion {
  uint16_t cid = 0;
  uint16_t status = 0;          // SCT/SC without the phase; 0 = success
  uint32_t dw0 = 0;             // command specific result
  nvme::SubmissionEntry entry;  // what was submitted under this id (for messages)
};

class NvmeQueuePair {
 public:
  // Queue `qid` (0 = the admin queue) of `entries` slots per queue, its
  // doorbells `stride` bytes apart, with `prp_list_pages` PRP list pages per
  // command id. The memory comes from `dma`; creating the queue on the
  // controller (AQA/ASQ/ACQ or Create I/O SQ/CQ) is the caller's job.
  static Expected<std::unique_ptr<NvmeQueuePair>> create(NvmeRegs& regs, DmaMemory& dma,
                                                         uint16_t qid, uint32_t entries,
                                                         uint32_t stride, size_t prp_list_pages);
  ~NvmeQueuePair();
  NvmeQueuePair(const NvmeQueuePair&) = delete;
  NvmeQueuePair& operator=(const NvmeQueuePair&) = delete;

  uint16_t qid() const { return qid_; }
  NvmeQueueKind kind() const { return qid_ == 0 ? NvmeQueueKind::admin : NvmeQueueKind::io; }
  uint32_t entries() const { return entries_; }
  uint64_t sq_iova() const { return sq_.iova; }
  uint64_t cq_iova() const { return cq_.iova; }
  uint32_t outstanding() const { return outstanding_; }
  uint16_t sq_tail() const { return sq_tail_; }
  uint16_t cq_head() const { return cq_head_; }
  bool cq_phase() const { return phase_; }

  // True when reserve() would fail: every id or SQ slot is in use.
  bool full() const;
  // A command id with an SQ slot held for it; an error when the queue is
  // full (the caller reaps completions first).
  Expected<uint16_t> reserve();
  // Give back a reservation that will not be submitted.
  void cancel(uint16_t cid);
  // PRP list pages owned by `cid`, for building the command's PRPs.
  std::span<const NvmePrpListPage> prp_lists(uint16_t cid) const;
  // Write the entry under `cid` at the SQ tail and ring the doorbell. Refuses
  // (and cancels the reservation) a command whose queue kind or opcode is
  // not in the read-only allow-list.
  Status submit(uint16_t cid, const NvmeCommand& cmd);

  // The next completion if one is posted; frees its command id.
  Expected<std::optional<NvmeCompletion>> poll();
  // Polls until a completion arrives, the controller reports a fatal status
  // (CSTS.CFS, checked now and then while waiting), or `timeout` passes; the
  // timeout error names the oldest outstanding command and this queue.
  Expected<NvmeCompletion> wait(std::chrono::milliseconds timeout);

  // "read of 8 blocks at LBA 42 (cid 3) on I/O queue 1"
  static std::string describe(const nvme::SubmissionEntry& e, uint16_t qid);

 private:
  NvmeQueuePair(NvmeRegs& regs, DmaMemory& dma, uint16_t qid, uint32_t entries, uint32_t stride)
      : regs_(regs), dma_(dma), qid_(qid), entries_(entries), stride_(stride) {}
  uint32_t sq_slots_used() const;

  NvmeRegs& regs_;
  DmaMemory& dma_;
  uint16_t qid_;
  uint32_t entries_;
  uint32_t stride_;
  DmaBuffer sq_, cq_, prp_;
  size_t prp_pages_per_cid_ = 0;
  std::vector<NvmePrpListPage> prp_pages_;  // (entries - 1) * prp_pages_per_cid_

  uint16_t sq_tail_ = 0;
  uint16_t sq_head_ = 0;  // as last reported by the controller
  uint16_t cq_head_ = 0;
  bool phase_ = true;  // the controller's first lap writes phase 1
  uint32_t outstanding_ = 0;
  uint32_t reserved_ = 0;  // reserved, not yet submitted

  enum class CidState : uint8_t { free, reserved, submitted };
  std::vector<uint16_t> free_cids_;  // FIFO: an id waits the longest before it is reused
  size_t free_head_ = 0;
  size_t free_count_ = 0;
  std::vector<CidState> cid_state_;
  std::vector<nvme::SubmissionEntry> cid_entry_;
  std::vector<uint64_t> cid_seq_;  // submission order, to name the oldest on a timeout
  uint64_t seq_ = 0;
};

}  // namespace ls
