// The in-memory NVMe controller; what it models is in mem_controller.h.
#include "tests/unit/io/nvme/mem_controller.h"

#include <algorithm>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <random>

namespace ls::test {

namespace {
constexpr uint64_t kPage = nvme::kPageSize;
uint64_t round_up(uint64_t x, uint64_t a) {
  return (x + a - 1) / a * a;
}
}  // namespace

// ---- HeapDma ----

HeapDma::~HeapDma() {
  for (auto& [iova, r] : by_iova_) {
    if (r.owned) std::free(r.host);
  }
}

uint64_t HeapDma::place(uint8_t* host, size_t bytes, bool owned) {
  const uint64_t iova = next_iova_;
  next_iova_ += round_up(bytes, kPage) + kPage;  // the hole
  by_iova_[iova] = Region{host, bytes, owned};
  return iova;
}

Expected<DmaBuffer> HeapDma::alloc(size_t bytes) {
  const size_t size = round_up(std::max<size_t>(bytes, 1), kPage);
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(kPage, size));
  if (!p) return make_error("heap dma: out of memory for %zu bytes", bytes);
  std::memset(p, 0, size);
  return DmaBuffer{p, place(p, size, true), size};
}

void HeapDma::free(const DmaBuffer& b) {
  auto it = by_iova_.find(b.iova);
  if (it == by_iova_.end() || it->second.host != b.host) std::abort();  // a driver bug
  std::free(it->second.host);
  by_iova_.erase(it);
}

Expected<uint64_t> HeapDma::map(void* host, size_t bytes) {
  return place(static_cast<uint8_t*>(host), bytes, false);
}

void HeapDma::unmap(void* host, size_t) {
  for (auto it = by_iova_.begin(); it != by_iova_.end(); ++it) {
    if (it->second.host == host && !it->second.owned) {
      by_iova_.erase(it);
      return;
    }
  }
}

uint64_t HeapDma::iova_of(const void* host) const {
  const auto* p = static_cast<const uint8_t*>(host);
  for (const auto& [iova, r] : by_iova_) {
    if (p >= r.host && p < r.host + r.bytes) return iova + (p - r.host);
  }
  return 0;
}

uint8_t* HeapDma::translate(uint64_t iova, size_t bytes) const {
  auto it = by_iova_.upper_bound(iova);
  if (it == by_iova_.begin()) return nullptr;
  --it;
  const uint64_t off = iova - it->first;
  if (off + bytes > it->second.bytes) return nullptr;
  return it->second.host + off;
}

// ---- MemNvme ----

MemNvme::MemNvme(HeapDma& dma, const MemNvmeConfig& cfg) : dma_(dma), cfg_(cfg) {
  data_.resize(cfg.nsze << cfg.lbads);
  std::mt19937_64 rng(cfg.nsze * 31 + cfg.lbads);
  for (size_t i = 0; i + 8 <= data_.size(); i += 8) {
    const uint64_t x = rng();
    std::memcpy(&data_[i], &x, 8);
  }
}

void MemNvme::violation(const char* fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  violations_.push_back(buf);
}

void MemNvme::tick() {
  ++reads_since_en_change_;
  const bool en = cc_ & nvme::cc::kEn;
  const bool rdy = csts_ & nvme::csts::kRdy;
  if (reads_since_en_change_ >= cfg_.ready_delay_reads) {
    if (en && !rdy && !faults.never_ready && !(csts_ & nvme::csts::kCfs)) csts_ |= nvme::csts::kRdy;
    if (!en && rdy) csts_ &= ~nvme::csts::kRdy;
  }
  if (!held_.empty()) {
    std::vector<Held> held;
    held.swap(held_);
    for (auto it = held.rbegin(); it != held.rend(); ++it) post(it->cqid, it->e);
  }
}

uint64_t MemNvme::read64(uint32_t offset) {
  if (offset == nvme::reg::kCap) {
    return uint64_t{cfg_.mqes} | (1ull << 16) | (uint64_t{cfg_.to} << 24) |
           (uint64_t{cfg_.dstrd} << 32) | (1ull << 37);  // CQR, NVM command set, MPSMIN = 0
  }
  if (offset == nvme::reg::kAsq) return asq_;
  if (offset == nvme::reg::kAcq) return acq_;
  violation("read64 at 0x%x", offset);
  return 0;
}

uint32_t MemNvme::read32(uint32_t offset) {
  switch (offset) {
    case nvme::reg::kCap:
      return static_cast<uint32_t>(read64(offset));
    case nvme::reg::kCap + 4:
      return static_cast<uint32_t>(read64(nvme::reg::kCap) >> 32);
    case nvme::reg::kVs:
      return 0x00010400;  // 1.4.0
    case nvme::reg::kCc:
      return cc_;
    case nvme::reg::kAqa:
      return aqa_;
    case nvme::reg::kCsts:
      tick();
      return csts_;
    default:
      violation("read32 at 0x%x", offset);
      return 0;
  }
}

void MemNvme::write64(uint32_t offset, uint64_t value) {
  if (offset != nvme::reg::kAsq && offset != nvme::reg::kAcq) {
    violation("write64 at 0x%x", offset);
    return;
  }
  if (cc_ & nvme::cc::kEn) violation("ASQ/ACQ written while CC.EN = 1");
  if (value % kPage)
    violation("admin queue base 0x%llx not page aligned", (unsigned long long)value);
  (offset == nvme::reg::kAsq ? asq_ : acq_) = value;
}

void MemNvme::enable() {
  const uint32_t sqes = (cc_ >> nvme::cc::kIosqesShift) & 0xF;
  const uint32_t cqes = (cc_ >> nvme::cc::kIocqesShift) & 0xF;
  const uint32_t mps = (cc_ >> nvme::cc::kMpsShift) & 0xF;
  if (sqes != 6 || cqes != 4 || mps != 0 || ((cc_ >> nvme::cc::kCssShift) & 7) != 0) {
    violation("CC = 0x%x at enable: IOSQES %u, IOCQES %u, MPS %u", cc_, sqes, cqes, mps);
    csts_ |= nvme::csts::kCfs;
    return;
  }
  if (!asq_ || !acq_ || !aqa_) violation("enabled without an admin queue");
  sqs_[0] = Sq{asq_, (aqa_ & 0xFFF) + 1, 0};
  cqs_[0] = Cq{acq_, ((aqa_ >> 16) & 0xFFF) + 1};
  if (faults.fatal_on_enable) csts_ |= nvme::csts::kCfs;
}

void MemNvme::reset() {
  sqs_.clear();
  cqs_.clear();
  held_.clear();
  csts_ &= ~(nvme::csts::kCfs | nvme::csts::kShstMask);
}

void MemNvme::write32(uint32_t offset, uint32_t value) {
  if (offset >= nvme::reg::kDoorbells) {
    doorbells_.push_back({offset, value});
    const uint32_t stride = 4u << cfg_.dstrd;
    const uint32_t rel = offset - nvme::reg::kDoorbells;
    if (rel % stride) {
      violation("doorbell write at 0x%x is off the %u-byte stride", offset, stride);
      return;
    }
    const uint16_t qid = static_cast<uint16_t>(rel / stride / 2);
    const bool is_sq = (rel / stride) % 2 == 0;
    if (!(csts_ & nvme::csts::kRdy) || (csts_ & nvme::csts::kCfs)) {
      if (!(csts_ & nvme::csts::kCfs)) violation("doorbell 0x%x written while not ready", offset);
      return;
    }
    if (is_sq) {
      auto it = sqs_.find(qid);
      if (it == sqs_.end() || value >= it->second.size) {
        violation("SQ %u tail doorbell %u: no such queue or beyond it", qid, value);
        return;
      }
      it->second.tail = value;
      if (!faults.hold_fetch) process(qid);
    } else {
      auto it = cqs_.find(qid);
      if (it == cqs_.end() || value >= it->second.size) {
        violation("CQ %u head doorbell %u: no such queue or beyond it", qid, value);
        return;
      }
      Cq& cq = it->second;
      // The head may only move over entries we posted.
      const uint32_t posted = (cq.tail + cq.size - cq.head) % cq.size;
      const uint32_t moved = (value + cq.size - cq.head) % cq.size;
      if (moved > posted) violation("CQ %u head %u passes the tail %u", qid, value, cq.tail);
      cq.head = value;
    }
    return;
  }
  switch (offset) {
    case nvme::reg::kCc: {
      const uint32_t old = cc_;
      cc_ = value;
      if (!(old & nvme::cc::kEn) && (value & nvme::cc::kEn)) {
        reads_since_en_change_ = 0;
        enable();
      } else if ((old & nvme::cc::kEn) && !(value & nvme::cc::kEn)) {
        reads_since_en_change_ = 0;
        reset();
      }
      if ((value & nvme::cc::kEn) && (value & nvme::cc::kShnMask)) {
        csts_ = (csts_ & ~nvme::csts::kShstMask) | nvme::csts::kShstComplete;
      }
      return;
    }
    case nvme::reg::kAqa:
      if (cc_ & nvme::cc::kEn) violation("AQA written while CC.EN = 1");
      aqa_ = value;
      return;
    case nvme::reg::kIntms:
    case nvme::reg::kIntmc:
      return;
    default:
      violation("write32 at 0x%x", offset);
  }
}

void MemNvme::release_fetch() {
  faults.hold_fetch = false;
  for (auto& [qid, sq] : sqs_) process(qid);
}

void MemNvme::process(uint16_t sqid) {
  for (;;) {
    auto it = sqs_.find(sqid);
    if (it == sqs_.end()) return;  // deleted by the command just run
    Sq& sq = it->second;
    if (sq.head == sq.tail || (csts_ & nvme::csts::kCfs)) return;
    const uint8_t* p = dma_.translate(sq.iova + uint64_t{sq.head} * 64, 64);
    if (!p) {
      violation("SQ %u entry %u is not mapped", sqid, sq.head);
      return;
    }
    nvme::SubmissionEntry e;
    std::memcpy(&e, p, sizeof e);
    sq.head = (sq.head + 1) % sq.size;
    const uint16_t cqid = sq.cqid;
    const uint16_t head = static_cast<uint16_t>(sq.head);
    if (faults.fatal_after_commands && commands_ >= *faults.fatal_after_commands) {
      csts_ |= nvme::csts::kCfs;
      return;
    }
    ++commands_;
    seen_.push_back({sqid == 0, e.opcode});
    auto r = execute(sqid, e);
    if (!r) continue;  // never completes
    nvme::CompletionEntry c;
    c.dw0 = r->dw0;
    c.sq_head = head;
    c.sq_id = sqid;
    c.cid = e.cid;
    c.status_phase = static_cast<uint16_t>(r->status << 1);
    if (faults.reorder) {
      held_.push_back({cqid, c});
    } else {
      post(cqid, c);
      if (faults.duplicate_completions) post(cqid, c);
    }
  }
}

void MemNvme::post(uint16_t cqid, const nvme::CompletionEntry& e) {
  auto it = cqs_.find(cqid);
  if (it == cqs_.end()) return;  // deleted meanwhile
  Cq& cq = it->second;
  if ((cq.tail + 1) % cq.size == cq.head) {
    violation("CQ %u overrun: the driver let more commands out than its CQ holds", cqid);
    return;
  }
  uint8_t* p = dma_.translate(cq.iova + uint64_t{cq.tail} * 16, 16);
  if (!p) {
    violation("CQ %u entry %u is not mapped", cqid, cq.tail);
    return;
  }
  nvme::CompletionEntry c = e;
  c.status_phase = static_cast<uint16_t>((e.status_phase & ~1u) | (cq.phase ? 1 : 0));
  // The dword with the phase tag goes last, as a device's write would land.
  std::memcpy(p, &c, 12);
  std::memcpy(p + 12, reinterpret_cast<const uint8_t*>(&c) + 12, 4);
  cq.tail = (cq.tail + 1) % cq.size;
  if (cq.tail == 0) cq.phase = !cq.phase;
}

std::optional<MemNvme::Result> MemNvme::execute(uint16_t sqid, const nvme::SubmissionEntry& e) {
  if (sqid == 0) return admin(e);
  if (e.opcode != nvme::io::kRead) {
    violation("I/O opcode 0x%02x reached the controller", e.opcode);
    return Result{nvme::make_status(nvme::sct::kGeneric, nvme::sc::kInvalidOpcode)};
  }
  return io_read(e);
}

MemNvme::Result MemNvme::admin(const nvme::SubmissionEntry& e) {
  namespace a = nvme::admin;
  auto status = [](uint8_t sct, uint8_t code) { return Result{nvme::make_status(sct, code)}; };
  const uint16_t qid = e.cdw10 & 0xFFFF;
  const uint32_t size = (e.cdw10 >> 16) + 1;
  switch (e.opcode) {
    case a::kIdentify: {
      std::vector<uint8_t> id(nvme::kIdentifyBytes, 0);
      const uint32_t cns = e.cdw10 & 0xFF;
      if (cns == a::kCnsController) {
        const uint16_t vid = 0x1d1d;
        std::memcpy(&id[nvme::idctl::kVid], &vid, 2);
        std::memset(&id[nvme::idctl::kSn], ' ', 20 + 40 + 8);
        std::memcpy(&id[nvme::idctl::kSn], "MEM0001", 7);
        std::memcpy(&id[nvme::idctl::kMn], "layerstream in-memory NVMe", 26);
        std::memcpy(&id[nvme::idctl::kFr], "1.0", 3);
        id[nvme::idctl::kMdts] = cfg_.mdts;
        const uint32_t nn = 1;
        std::memcpy(&id[nvme::idctl::kNn], &nn, 4);
      } else if (cns == a::kCnsNamespace) {
        if (e.nsid != 1) return status(nvme::sct::kGeneric, nvme::sc::kInvalidNamespace);
        std::memcpy(&id[nvme::idns::kNsze], &cfg_.nsze, 8);
        std::memcpy(&id[nvme::idns::kNcap], &cfg_.nsze, 8);
        const uint32_t lbaf = cfg_.lbads << 16;
        std::memcpy(&id[nvme::idns::kLbaf0], &lbaf, 4);
      } else {
        violation("identify CNS 0x%02x", cns);
        return status(nvme::sct::kGeneric, nvme::sc::kInvalidField);
      }
      if (!dma_write(e.prp1, e.prp2, id.data(), id.size())) {
        return status(nvme::sct::kGeneric, nvme::sc::kDataTransferError);
      }
      return {};
    }
    case a::kSetFeatures: {
      if ((e.cdw10 & 0xFF) != a::kFeatureNumQueues) {
        violation("set features FID 0x%02x", e.cdw10 & 0xFF);
        return status(nvme::sct::kGeneric, nvme::sc::kInvalidField);
      }
      const uint32_t nsq = std::min((e.cdw11 & 0xFFFF) + 1, cfg_.max_io_queues);
      const uint32_t ncq = std::min((e.cdw11 >> 16) + 1, cfg_.max_io_queues);
      return Result{0, ((ncq - 1) << 16) | (nsq - 1)};
    }
    case a::kCreateIoCq:
    case a::kCreateIoSq: {
      const bool is_cq = e.opcode == a::kCreateIoCq;
      if (qid == 0 || qid > cfg_.max_io_queues || (is_cq ? cqs_.count(qid) : sqs_.count(qid))) {
        return status(nvme::sct::kCommandSpecific, nvme::sc::kInvalidQid);
      }
      if (size < 2 || size > cfg_.mqes + 1) {
        return status(nvme::sct::kCommandSpecific, nvme::sc::kInvalidQueueSize);
      }
      if (!(e.cdw11 & 1)) return status(nvme::sct::kGeneric, nvme::sc::kInvalidField);
      if (e.prp1 % kPage || !dma_.translate(e.prp1, size_t{size} * (is_cq ? 16 : 64))) {
        violation("queue %u memory at 0x%llx not page aligned or not mapped", qid,
                  (unsigned long long)e.prp1);
        return status(nvme::sct::kGeneric, nvme::sc::kDataTransferError);
      }
      if (is_cq) {
        cqs_[qid] = Cq{e.prp1, size};
      } else {
        const uint16_t cqid = e.cdw11 >> 16;
        if (!cqs_.count(cqid) || cqid == 0) {
          return status(nvme::sct::kCommandSpecific, nvme::sc::kInvalidCq);
        }
        sqs_[qid] = Sq{e.prp1, size, cqid};
      }
      return {};
    }
    case a::kDeleteIoSq:
      if (qid == 0 || !sqs_.count(qid))
        return status(nvme::sct::kCommandSpecific, nvme::sc::kInvalidQid);
      sqs_.erase(qid);
      return {};
    case a::kDeleteIoCq: {
      if (qid == 0 || !cqs_.count(qid))
        return status(nvme::sct::kCommandSpecific, nvme::sc::kInvalidQid);
      for (auto& [id, sq] : sqs_) {
        if (sq.cqid == qid)
          return status(nvme::sct::kCommandSpecific, nvme::sc::kInvalidQueueDeletion);
      }
      cqs_.erase(qid);
      return {};
    }
    default:
      violation("admin opcode 0x%02x reached the controller", e.opcode);
      return status(nvme::sct::kGeneric, nvme::sc::kInvalidOpcode);
  }
}

std::optional<MemNvme::Result> MemNvme::io_read(const nvme::SubmissionEntry& e) {
  if (e.nsid != 1)
    return Result{nvme::make_status(nvme::sct::kGeneric, nvme::sc::kInvalidNamespace)};
  const uint64_t slba = (uint64_t{e.cdw11} << 32) | e.cdw10;
  const uint32_t nlb = (e.cdw12 & 0xFFFF) + 1;
  if (slba >= cfg_.nsze || nlb > cfg_.nsze - slba) {
    return Result{nvme::make_status(nvme::sct::kGeneric, nvme::sc::kLbaOutOfRange)};
  }
  const size_t bytes = size_t{nlb} << cfg_.lbads;
  if (cfg_.mdts && bytes > (size_t{kPage} << cfg_.mdts)) {
    violation("read of %zu bytes exceeds MDTS (%llu bytes)", bytes,
              (unsigned long long)(kPage << cfg_.mdts));
    return Result{nvme::make_status(nvme::sct::kGeneric, nvme::sc::kInvalidField)};
  }
  auto covers = [&](const std::optional<uint64_t>& lba) {
    return lba && *lba >= slba && *lba < slba + nlb;
  };
  if (covers(faults.hang_lba)) return std::nullopt;
  if (covers(faults.error_lba)) return Result{faults.error_status};
  if (!dma_write(e.prp1, e.prp2, data_.data() + (slba << cfg_.lbads), bytes)) {
    return Result{nvme::make_status(nvme::sct::kGeneric, nvme::sc::kDataTransferError)};
  }
  ++reads_served_;
  max_blocks_ = std::max(max_blocks_, nlb);
  return Result{};
}

// The device's side of PRPs: PRP1 may start anywhere (dword aligned) in a
// page; every later data pointer is a whole page. When the data needs more
// than one further page, PRP2 points to a list; the last entry of a full list
// page chains to the next list page while more than one data page remains.
bool MemNvme::dma_write(uint64_t prp1, uint64_t prp2, const uint8_t* src, size_t bytes) {
  auto copy = [&](uint64_t iova, size_t n) {
    uint8_t* dst = dma_.translate(iova, n);
    if (!dst) {
      violation("PRP data pointer 0x%llx (%zu bytes) maps nothing", (unsigned long long)iova, n);
      return false;
    }
    std::memcpy(dst, src, n);
    src += n;
    bytes -= n;
    return true;
  };
  if (prp1 & 3) {
    violation("PRP1 0x%llx not dword aligned", (unsigned long long)prp1);
    return false;
  }
  if (!copy(prp1, std::min<size_t>(bytes, kPage - prp1 % kPage))) return false;
  if (bytes == 0) return true;
  if (bytes <= kPage) {
    if (prp2 % kPage) {
      violation("PRP2 0x%llx (a data page) has an offset", (unsigned long long)prp2);
      return false;
    }
    return copy(prp2, bytes);
  }
  uint64_t entry = prp2;
  if (entry & 7) {
    violation("PRP list pointer 0x%llx not qword aligned", (unsigned long long)entry);
    return false;
  }
  while (bytes > 0) {
    const uint8_t* p = dma_.translate(entry, 8);
    if (!p) {
      violation("PRP list entry at 0x%llx maps nothing", (unsigned long long)entry);
      return false;
    }
    uint64_t ptr;
    std::memcpy(&ptr, p, 8);
    if (entry % kPage == kPage - 8 && bytes > kPage) {
      if (ptr & 7) {
        violation("chained PRP list pointer 0x%llx not qword aligned", (unsigned long long)ptr);
        return false;
      }
      ++chained_;
      entry = ptr;
      continue;
    }
    if (ptr % kPage) {
      violation("PRP list entry 0x%llx has an offset", (unsigned long long)ptr);
      return false;
    }
    if (!copy(ptr, std::min<size_t>(bytes, kPage))) return false;
    entry += 8;
  }
  return true;
}

}  // namespace ls::test
