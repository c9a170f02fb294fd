// Controller bring-up, reads and shutdown. The order of the bring-up steps
// is the NVMe base specification's "controller initialization": disable and
// wait for not-ready, program the admin queue, enable and wait for ready,
// identify, set the number of queues, create each I/O CQ before its SQ.
#include "io/nvme/controller.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "io/nvme/command.h"
#include "io/nvme/prp.h"
#include "io/nvme/spec.h"

namespace ls {

namespace {

std::string ascii_field(const uint8_t* p, size_t n) {
  std::string s(reinterpret_cast<const char*>(p), n);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\0')) s.pop_back();
  return s;
}

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

Expected<std::unique_ptr<NvmeController>> NvmeController::open(NvmeRegs& regs, DmaMemory& dma,
                                                               const NvmeControllerOptions& opts) {
  return open_with(regs, dma, opts, TestFaults{});
}

Expected<std::unique_ptr<NvmeController>> NvmeController::open_with(
    NvmeRegs& regs, DmaMemory& dma, const NvmeControllerOptions& opts, const TestFaults& faults) {
  std::unique_ptr<NvmeController> c(new NvmeController(regs, dma, opts));
  c->faults_ = faults;
  if (Status st = c->bring_up(); !st) {
    (void)c->shutdown();  // the bring-up error is the one to report
    return Error{st.error()};
  }
  return c;
}

NvmeController::~NvmeController() {
  (void)shutdown();
}

Status NvmeController::wait_ready(bool want_ready, bool fail_on_cfs, const char* step) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(info_.ready_timeout_ms);
  for (;;) {
    const uint32_t csts = regs_.read32(nvme::reg::kCsts);
    if (csts == 0xFFFFFFFFu) {
      return make_error("nvme %s: the controller is gone (CSTS reads all ones)", step);
    }
    if (fail_on_cfs && (csts & nvme::csts::kCfs)) {
      return make_error("nvme %s: controller fatal status (CSTS.CFS=1)", step);
    }
    if (((csts & nvme::csts::kRdy) != 0) == want_ready) return ok();
    if (std::chrono::steady_clock::now() > deadline) {
      return make_error("nvme %s: CSTS.RDY did not become %d within CAP.TO = %u ms", step,
                        want_ready ? 1 : 0, info_.ready_timeout_ms);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

Status NvmeController::disable() {
  const uint32_t cc = regs_.read32(nvme::reg::kCc);
  if (cc & nvme::cc::kEn) {
    touched_ = true;
    regs_.write32(nvme::reg::kCc, cc & ~(nvme::cc::kEn | nvme::cc::kShnMask));
  }
  // Also when EN was already 0: a controller still finishing a reset keeps
  // RDY = 1 until it is done, and must not be configured before.
  return wait_ready(false, false, "disable");
}

Error NvmeController::fail_stop(const Error& why) {
  failed_ = true;
  // No admin command (a delete of the queues) can be trusted now: reset the
  // controller straight away, so that when the caller sees the error no
  // command of ours can still write into memory it may free or unmap.
  if (Status st = disable(); !st) {
    return make_error("%s; disabling the controller then failed too: %s", why.message.c_str(),
                      st.error().message.c_str());
  }
  return Error{why.message + "; the controller was disabled"};
}

Status NvmeController::bring_up() {
  cap_ = regs_.read64(nvme::reg::kCap);
  if (cap_ == ~uint64_t{0}) return make_error("nvme: the controller is gone (CAP reads all ones)");
  info_.version = regs_.read32(nvme::reg::kVs);
  info_.max_queue_entries = nvme::cap_mqes(cap_) + 1;
  info_.doorbell_stride = nvme::doorbell_stride(cap_);
  info_.ready_timeout_ms = std::max(1u, nvme::cap_to(cap_)) * 500;
  if ((nvme::cap_css(cap_) & 1) == 0) {
    return make_error("nvme: the controller does not support the NVM command set (CAP.CSS=0x%x)",
                      nvme::cap_css(cap_));
  }
  if (nvme::cap_mpsmin(cap_) != 0) {
    return make_error(
        "nvme: the controller's smallest page is %u KiB (CAP.MPSMIN=%u); this driver "
        "uses 4 KiB pages",
        4u << nvme::cap_mpsmin(cap_), nvme::cap_mpsmin(cap_));
  }
  if (opts_.io_queue_depth < 2 || opts_.admin_queue_depth < 2 || opts_.io_queues == 0) {
    return make_error("nvme: need at least one I/O queue and queue depths of at least 2");
  }

  LS_TRY(disable());

  // Admin queue: AQA sizes are 12 bits, 0's based.
  const uint32_t admin_entries =
      std::min({opts_.admin_queue_depth, info_.max_queue_entries, 4096u});
  auto aq = NvmeQueuePair::create(regs_, dma_, 0, admin_entries, info_.doorbell_stride, 0);
  if (!aq) return Error{aq.error()};
  admin_ = std::move(*aq);
  touched_ = true;
  regs_.write32(nvme::reg::kAqa, nvme::aqa(admin_entries, admin_entries));
  const uint64_t asq = admin_->sq_iova() | (faults_.misaligned_asq ? 0x800 : 0);
  regs_.write64(nvme::reg::kAsq, asq);
  regs_.write64(nvme::reg::kAcq, admin_->cq_iova());

  const uint32_t cc = (0u << nvme::cc::kCssShift) | (0u << nvme::cc::kMpsShift) |
                      (0u << nvme::cc::kAmsShift) | (nvme::kSqEntryLog2 << nvme::cc::kIosqesShift) |
                      (nvme::kCqEntryLog2 << nvme::cc::kIocqesShift) | nvme::cc::kEn;
  regs_.write32(nvme::reg::kCc, cc);
  if (Status st = wait_ready(true, true, "enable"); !st) {
    // A fatal status at enable is the controller refusing this configuration:
    // say what it was given, so it can be checked against CAP and the spec.
    if (regs_.read32(nvme::reg::kCsts) & nvme::csts::kCfs) {
      return make_error(
          "%s: the controller refused CC 0x%08x (MPS %u, IOSQES %u, IOCQES %u) with AQA "
          "0x%08x, ASQ 0x%llx, ACQ 0x%llx",
          st.error().message.c_str(), cc, (cc >> nvme::cc::kMpsShift) & 0xF,
          (cc >> nvme::cc::kIosqesShift) & 0xF, (cc >> nvme::cc::kIocqesShift) & 0xF,
          nvme::aqa(admin_entries, admin_entries), static_cast<unsigned long long>(asq),
          static_cast<unsigned long long>(admin_->cq_iova()));
    }
    return st;
  }

  LS_TRY(identify());
  return create_io_queues();
}

Expected<NvmeCompletion> NvmeController::admin(const NvmeCommand& cmd) {
  if (failed_) return make_error("nvme: %s refused: the controller has failed", cmd.name());
  auto cid = admin_->reserve();
  if (!cid) return Error{cid.error()};
  LS_TRY(admin_->submit(*cid, cmd));
  auto c = admin_->wait(opts_.command_timeout);
  if (!c) return fail_stop(c.error());
  if (c->cid != *cid) {
    return fail_stop(make_error("nvme: %s (cid %u) answered by a completion for cid %u", cmd.name(),
                                *cid, c->cid));
  }
  if (c->status != 0) {
    return make_error("nvme: %s failed: %s", cmd.name(), nvme::status_string(c->status).c_str());
  }
  return c;
}

Status NvmeController::identify() {
  auto buf = dma_.alloc(nvme::kIdentifyBytes);
  if (!buf) return Error{buf.error()};
  identify_buf_ = *buf;
  const uint8_t* id = static_cast<const uint8_t*>(identify_buf_.host);

  auto c = admin(NvmeCommand::identify_controller(identify_buf_.iova));
  if (!c) return Error{c.error()};
  info_.vid = load<uint16_t>(id + nvme::idctl::kVid);
  info_.serial = ascii_field(id + nvme::idctl::kSn, 20);
  info_.model = ascii_field(id + nvme::idctl::kMn, 40);
  info_.firmware = ascii_field(id + nvme::idctl::kFr, 8);
  info_.mdts = id[nvme::idctl::kMdts];
  info_.namespaces = load<uint32_t>(id + nvme::idctl::kNn);
  info_.max_transfer = nvme_max_transfer(info_.mdts, nvme::cap_mpsmin(cap_),
                                         std::max<size_t>(opts_.max_transfer_cap, 4096));
  if (opts_.nsid == 0 || opts_.nsid > info_.namespaces) {
    return make_error("nvme: namespace %u does not exist (the controller has %u)", opts_.nsid,
                      info_.namespaces);
  }

  std::memset(identify_buf_.host, 0, nvme::kIdentifyBytes);
  c = admin(NvmeCommand::identify_namespace(opts_.nsid, identify_buf_.iova));
  if (!c) return Error{c.error()};
  info_.nsid = opts_.nsid;
  info_.nsze = load<uint64_t>(id + nvme::idns::kNsze);
  const uint8_t flbas = id[nvme::idns::kFlbas];
  const uint32_t format = (flbas & 0xF) | ((flbas >> 5) & 0x3) << 4;
  if (format > id[nvme::idns::kNlbaf]) {
    return make_error("nvme: namespace %u uses LBA format %u of %u", opts_.nsid, format,
                      id[nvme::idns::kNlbaf] + 1u);
  }
  const uint32_t lbaf = load<uint32_t>(id + nvme::idns::kLbaf0 + 4 * format);
  const uint32_t lbads = (lbaf >> 16) & 0xFF;
  const uint32_t metadata = lbaf & 0xFFFF;
  if (info_.nsze == 0) return make_error("nvme: namespace %u is inactive (NSZE = 0)", opts_.nsid);
  if (lbads < 9 || lbads > 16) {
    return make_error("nvme: namespace %u has blocks of 2^%u bytes", opts_.nsid, lbads);
  }
  // Metadata at the end of each block (FLBAS bit 4) would interleave with the
  // data in our buffers; separate metadata is never transferred by a Read
  // without a metadata pointer.
  if (metadata != 0 && (flbas & 0x10)) {
    return make_error("nvme: namespace %u interleaves %u bytes of metadata with each block",
                      opts_.nsid, metadata);
  }
  info_.block_size = 1u << lbads;
  if (info_.max_transfer < info_.block_size) info_.max_transfer = info_.block_size;
  return ok();
}

Status NvmeController::create_io_queues() {
  const uint32_t want = std::min(opts_.io_queues, 65535u);
  auto c = admin(NvmeCommand::set_features_num_queues(static_cast<uint16_t>(want),
                                                      static_cast<uint16_t>(want)));
  if (!c) return Error{c.error()};
  const uint32_t granted = std::min((c->dw0 & 0xFFFF) + 1, (c->dw0 >> 16) + 1);
  const uint32_t n = std::min(want, granted);
  const uint32_t depth = std::min({opts_.io_queue_depth, info_.max_queue_entries, 65536u});
  // Room for the worst case: a transfer of max_transfer bytes starting just
  // before a page boundary.
  const size_t prp_pages = nvme_prp_list_pages(nvme::kPageSize - 4, info_.max_transfer);
  for (uint32_t i = 0; i < n; ++i) {
    const uint16_t qid = static_cast<uint16_t>(i + 1);
    auto q = NvmeQueuePair::create(regs_, dma_, qid, depth, info_.doorbell_stride, prp_pages);
    if (!q) return Error{q.error()};
    io_queues_.push_back(std::move(*q));
    NvmeQueuePair& qp = *io_queues_.back();
    auto cq = admin(NvmeCommand::create_io_cq(qid, static_cast<uint16_t>(depth), qp.cq_iova()));
    if (!cq) return Error{cq.error()};
    ++io_cqs_created_;
    auto sq =
        admin(NvmeCommand::create_io_sq(qid, static_cast<uint16_t>(depth), qp.sq_iova(), qid));
    if (!sq) return Error{sq.error()};
    ++io_sqs_created_;
  }
  info_.io_queues = n;
  info_.io_queue_depth = depth;
  return ok();
}

Status NvmeController::read(uint64_t lba, uint64_t blocks, uint64_t iova, uint32_t queue) {
  return read_on(info_.nsid, lba, blocks, iova, queue, true);
}

Status NvmeController::read_on(uint32_t nsid, uint64_t lba, uint64_t blocks, uint64_t iova,
                               uint32_t queue, bool check_range) {
  if (down_ || failed_) {
    return make_error("nvme: read at LBA %llu refused: the controller is %s",
                      static_cast<unsigned long long>(lba), down_ ? "shut down" : "failed");
  }
  if (queue >= io_queues_.size()) {
    return make_error("nvme: read at LBA %llu on I/O queue %u: only %zu queues",
                      static_cast<unsigned long long>(lba), queue + 1, io_queues_.size());
  }
  if (check_range && (lba >= info_.nsze || blocks > info_.nsze - lba)) {
    return make_error(
        "nvme: read of %llu blocks at LBA %llu is beyond the namespace (NSZE = %llu "
        "blocks)",
        static_cast<unsigned long long>(blocks), static_cast<unsigned long long>(lba),
        static_cast<unsigned long long>(info_.nsze));
  }
  if (iova & 3) {
    return make_error("nvme: read at LBA %llu into IOVA 0x%llx: not dword aligned",
                      static_cast<unsigned long long>(lba), static_cast<unsigned long long>(iova));
  }
  NvmeQueuePair& q = *io_queues_[queue];
  const auto pieces = nvme_split_read(lba, blocks, info_.block_size, info_.max_transfer);
  size_t next = 0;
  Status first_error;  // a failed piece: submit no more, reap what is in flight, report it
  while ((next < pieces.size() && first_error.ok()) || q.outstanding() > 0) {
    while (next < pieces.size() && first_error.ok() && !q.full()) {
      const NvmeReadPiece& p = pieces[next];
      auto cid = q.reserve();
      if (!cid) return Error{cid.error()};
      const size_t bytes = size_t{p.blocks} * info_.block_size;
      auto prp = nvme_prp_build(iova + p.offset, bytes, q.prp_lists(*cid));
      if (!prp) {
        q.cancel(*cid);
        first_error = Error{prp.error()};
        break;
      }
      auto cmd = NvmeCommand::read(nsid, p.lba, p.blocks, prp->prp1, prp->prp2);
      if (!cmd) {
        q.cancel(*cid);
        first_error = Error{cmd.error()};
        break;
      }
      if (Status st = q.submit(*cid, *cmd); !st) {
        first_error = st;
        break;
      }
      ++next;
    }
    if (q.outstanding() == 0) break;
    auto c = q.wait(opts_.command_timeout);
    // The controller may still write into the caller's buffer: only a reset
    // stops it, and it must come before the caller can free that buffer.
    if (!c) return fail_stop(c.error());
    if (c->status != 0 && first_error.ok()) {
      const uint64_t slba = (uint64_t{c->entry.cdw11} << 32) | c->entry.cdw10;
      first_error =
          make_error("nvme: read of %u blocks at LBA %llu failed: %s (namespace %u, I/O queue %u)",
                     (c->entry.cdw12 & 0xFFFF) + 1, static_cast<unsigned long long>(slba),
                     nvme::status_string(c->status).c_str(), c->entry.nsid, q.qid());
    }
  }
  return first_error;
}

Status NvmeController::shutdown() {
  if (down_) return ok();
  down_ = true;
  Status first;
  auto note = [&](Status st) {
    if (!st && first.ok()) first = st;
  };
  const bool enabled = (regs_.read32(nvme::reg::kCc) & nvme::cc::kEn) != 0;
  // A controller in fatal status answers no command: reset it straight away.
  if (regs_.read32(nvme::reg::kCsts) & nvme::csts::kCfs) failed_ = true;
  if (enabled && !failed_ && admin_) {
    // SQs before their CQs: a CQ with an SQ attached cannot be deleted.
    for (uint32_t i = io_sqs_created_; i-- > 0 && !failed_;) {
      auto c = admin(NvmeCommand::delete_io_sq(static_cast<uint16_t>(i + 1)));
      if (!c) note(Error{c.error()});
    }
    for (uint32_t i = io_cqs_created_; i-- > 0 && !failed_;) {
      auto c = admin(NvmeCommand::delete_io_cq(static_cast<uint16_t>(i + 1)));
      if (!c) note(Error{c.error()});
    }
    // Normal shutdown notification, so the controller can settle its state;
    // a controller that does not finish in time is disabled all the same.
    if (!failed_) {
      const uint32_t cc = regs_.read32(nvme::reg::kCc);
      regs_.write32(nvme::reg::kCc, (cc & ~nvme::cc::kShnMask) | nvme::cc::kShnNormal);
      const auto deadline =
          std::chrono::steady_clock::now() + std::chrono::milliseconds(info_.ready_timeout_ms);
      while ((regs_.read32(nvme::reg::kCsts) & nvme::csts::kShstMask) !=
                 nvme::csts::kShstComplete &&
             std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
  }
  io_sqs_created_ = io_cqs_created_ = 0;
  Status disabled = touched_ ? disable() : ok();
  note(disabled);
  if (!disabled) {
    // A controller that is still enabled may still write into the queues:
    // leaking their memory (it stays mapped) is safer than freeing it.
    for (auto& q : io_queues_) (void)q.release();
    (void)admin_.release();
    identify_buf_ = {};
  }
  // Only now, with the controller disabled, is the queue memory safe to free.
  io_queues_.clear();
  admin_.reset();
  if (identify_buf_.host) {
    dma_.free(identify_buf_);
    identify_buf_ = {};
  }
  return first;
}

}  // namespace ls
