// Queue pair mechanics; the protocol is summarised in queue.h.
#include "io/nvme/queue.h"

#include <atomic>
#include <cstring>

namespace ls {

namespace {
// How many empty polls pass between two reads of CSTS: an MMIO read costs
// about a microsecond, a memory poll a few nanoseconds.
constexpr uint32_t kPollsPerStatusCheck = 256;
}  // namespace

Expected<std::unique_ptr<NvmeQueuePair>> NvmeQueuePair::create(NvmeRegs& regs, DmaMemory& dma,
                                                               uint16_t qid, uint32_t entries,
                                                               uint32_t stride,
                                                               size_t prp_list_pages) {
  if (entries < 2 || entries > 65536) {
    return make_error("nvme queue %u: %u entries; a queue holds 2..65536", qid, entries);
  }
  std::unique_ptr<NvmeQueuePair> q(new NvmeQueuePair(regs, dma, qid, entries, stride));
  auto sq = dma.alloc(size_t{entries} << nvme::kSqEntryLog2);
  if (!sq) return Error{sq.error()};
  q->sq_ = *sq;
  auto cq = dma.alloc(size_t{entries} << nvme::kCqEntryLog2);
  if (!cq) return Error{cq.error()};
  q->cq_ = *cq;
  const uint32_t ids = entries - 1;
  if (prp_list_pages > 0) {
    auto prp = dma.alloc(size_t{ids} * prp_list_pages * nvme::kPageSize);
    if (!prp) return Error{prp.error()};
    q->prp_ = *prp;
    q->prp_pages_per_cid_ = prp_list_pages;
    q->prp_pages_.resize(size_t{ids} * prp_list_pages);
    for (size_t i = 0; i < q->prp_pages_.size(); ++i) {
      q->prp_pages_[i].host =
          reinterpret_cast<uint64_t*>(static_cast<uint8_t*>(q->prp_.host) + i * nvme::kPageSize);
      q->prp_pages_[i].iova = q->prp_.iova + i * nvme::kPageSize;
    }
  }
  q->free_cids_.resize(ids);
  for (uint32_t i = 0; i < ids; ++i) q->free_cids_[i] = static_cast<uint16_t>(i);
  q->free_count_ = ids;
  q->cid_state_.assign(ids, CidState::free);
  q->cid_entry_.resize(ids);
  q->cid_seq_.assign(ids, 0);
  return q;
}

NvmeQueuePair::~NvmeQueuePair() {
  if (sq_.host) dma_.free(sq_);
  if (cq_.host) dma_.free(cq_);
  if (prp_.host) dma_.free(prp_);
}

uint32_t NvmeQueuePair::sq_slots_used() const {
  return (sq_tail_ + entries_ - sq_head_) % entries_;
}

bool NvmeQueuePair::full() const {
  // entries - 1: a ring with head == tail is empty, so one slot stays unused.
  return free_count_ == 0 || sq_slots_used() + reserved_ + 1 > entries_ - 1;
}

Expected<uint16_t> NvmeQueuePair::reserve() {
  if (full()) {
    return make_error("nvme queue %u is full (%u commands outstanding, %u entries)", qid_,
                      outstanding_, entries_);
  }
  const uint16_t cid = free_cids_[free_head_];
  free_head_ = (free_head_ + 1) % free_cids_.size();
  --free_count_;
  cid_state_[cid] = CidState::reserved;
  ++reserved_;
  return cid;
}

void NvmeQueuePair::cancel(uint16_t cid) {
  if (cid >= cid_state_.size() || cid_state_[cid] != CidState::reserved) return;
  cid_state_[cid] = CidState::free;
  --reserved_;
  free_cids_[(free_head_ + free_count_) % free_cids_.size()] = cid;
  ++free_count_;
}

std::span<const NvmePrpListPage> NvmeQueuePair::prp_lists(uint16_t cid) const {
  if (prp_pages_per_cid_ == 0 || cid >= cid_state_.size()) return {};
  return {prp_pages_.data() + size_t{cid} * prp_pages_per_cid_, prp_pages_per_cid_};
}

Status NvmeQueuePair::submit(uint16_t cid, const NvmeCommand& cmd) {
  if (cid >= cid_state_.size() || cid_state_[cid] != CidState::reserved) {
    return make_error("nvme queue %u: submit under cid %u, which was not reserved", qid_, cid);
  }
  // Defence in depth: the factories only build allowed commands, and the
  // queue checks once more, against its own kind, before the device sees it.
  if (cmd.kind() != kind()) {
    cancel(cid);
    return make_error("nvme: refused %s command (opcode 0x%02x) on %s queue %u",
                      cmd.kind() == NvmeQueueKind::admin ? "an admin" : "an I/O", cmd.opcode(),
                      kind() == NvmeQueueKind::admin ? "admin" : "I/O", qid_);
  }
  if (Status st = nvme_command_allowed(kind(), cmd.entry()); !st) {
    cancel(cid);
    return st;
  }
  nvme::SubmissionEntry e = cmd.entry();
  e.cid = cid;
  std::memcpy(static_cast<uint8_t*>(sq_.host) + (size_t{sq_tail_} << nvme::kSqEntryLog2), &e,
              sizeof e);
  cid_state_[cid] = CidState::submitted;
  cid_entry_[cid] = e;
  cid_seq_[cid] = seq_++;
  --reserved_;
  ++outstanding_;
  sq_tail_ = static_cast<uint16_t>((sq_tail_ + 1) % entries_);
  // The entry must be in memory before the controller hears of it.
  std::atomic_thread_fence(std::memory_order_release);
  regs_.write32(nvme::sq_doorbell(qid_, stride_), sq_tail_);
  return ok();
}

Expected<std::optional<NvmeCompletion>> NvmeQueuePair::poll() {
  auto* slot = reinterpret_cast<nvme::CompletionEntry*>(static_cast<uint8_t*>(cq_.host) +
                                                        (size_t{cq_head_} << nvme::kCqEntryLog2));
  // Read the phase first; the rest of the entry is valid once it matches.
  const uint16_t status_phase = *reinterpret_cast<volatile uint16_t*>(&slot->status_phase);
  if (nvme::cqe_phase(status_phase) != phase_) return std::optional<NvmeCompletion>{};
  std::atomic_thread_fence(std::memory_order_acquire);
  nvme::CompletionEntry cqe;
  std::memcpy(&cqe, slot, sizeof cqe);

  cq_head_ = static_cast<uint16_t>((cq_head_ + 1) % entries_);
  if (cq_head_ == 0) phase_ = !phase_;
  regs_.write32(nvme::cq_doorbell(qid_, stride_), cq_head_);

  if (cqe.sq_head >= entries_ || cqe.sq_id != qid_) {
    return make_error("nvme queue %u: completion reports SQ %u head %u (queue has %u entries)",
                      qid_, cqe.sq_id, cqe.sq_head, entries_);
  }
  sq_head_ = cqe.sq_head;
  if (cqe.cid >= cid_state_.size() || cid_state_[cqe.cid] != CidState::submitted) {
    return make_error("nvme queue %u: completion for cid %u, which is not outstanding", qid_,
                      cqe.cid);
  }
  NvmeCompletion c;
  c.cid = cqe.cid;
  c.status = nvme::cqe_status(cqe.status_phase) & 0x7FFF;
  c.dw0 = cqe.dw0;
  c.entry = cid_entry_[cqe.cid];
  cid_state_[cqe.cid] = CidState::free;
  --outstanding_;
  free_cids_[(free_head_ + free_count_) % free_cids_.size()] = cqe.cid;
  ++free_count_;
  return std::optional<NvmeCompletion>{c};
}

std::string NvmeQueuePair::describe(const nvme::SubmissionEntry& e, uint16_t qid) {
  char buf[160];
  if (qid != 0 && e.opcode == nvme::io::kRead) {
    const uint64_t slba = (uint64_t{e.cdw11} << 32) | e.cdw10;
    std::snprintf(buf, sizeof buf, "read of %u blocks at LBA %llu (cid %u) on I/O queue %u",
                  (e.cdw12 & 0xFFFF) + 1, static_cast<unsigned long long>(slba), e.cid, qid);
  } else {
    const NvmeQueueKind kind = qid == 0 ? NvmeQueueKind::admin : NvmeQueueKind::io;
    std::snprintf(buf, sizeof buf, "%s (cid %u) on %s queue %u", nvme_command_name(kind, e), e.cid,
                  qid == 0 ? "the admin" : "I/O", qid);
  }
  return buf;
}

Expected<NvmeCompletion> NvmeQueuePair::wait(std::chrono::milliseconds timeout) {
  if (outstanding_ == 0) {
    return make_error("nvme queue %u: waiting for a completion with no command outstanding", qid_);
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (uint32_t spins = 1;; ++spins) {
    auto c = poll();
    if (!c) return Error{c.error()};
    if (c->has_value()) return **c;
    if (spins % kPollsPerStatusCheck != 0) continue;
    const uint32_t csts = regs_.read32(nvme::reg::kCsts);
    if (csts == 0xFFFFFFFFu) {
      return make_error("nvme queue %u: the controller is gone (CSTS reads all ones)", qid_);
    }
    if (csts & nvme::csts::kCfs) {
      return make_error(
          "nvme queue %u: controller fatal status (CSTS.CFS=1) with %u commands "
          "outstanding",
          qid_, outstanding_);
    }
    if (std::chrono::steady_clock::now() < deadline) continue;
    // A last look: the completion may have landed while we read the clock.
    c = poll();
    if (!c) return Error{c.error()};
    if (c->has_value()) return **c;
    size_t oldest = 0;
    for (size_t i = 0; i < cid_state_.size(); ++i) {
      if (cid_state_[i] == CidState::submitted &&
          (cid_state_[oldest] != CidState::submitted || cid_seq_[i] < cid_seq_[oldest])) {
        oldest = i;
      }
    }
    return make_error("nvme: %s timed out after %lld ms (%u commands outstanding)",
                      describe(cid_entry_[oldest], qid_).c_str(),
                      static_cast<long long>(timeout.count()), outstanding_);
  }
}

}  // namespace ls
