// An NVMe controller in memory, for the driver's unit tests: the registers of
// BAR0 (NvmeRegs) and a device that fetches submission entries when a tail
// doorbell is written, serves Identify, Set Features (number of queues), I/O
// queue create/delete and Read from a backing byte vector, walks PRP entries
// and lists through the IOVA map of HeapDma, and posts completions with the
// phase tag. It checks the driver as it goes: anything a real controller
// would reject or misbehave on (a doorbell off the stride, a tail beyond the
// queue, a completion queue overrun, a PRP entry that maps nothing, an opcode
// outside the read-only allow-list) is recorded in violations().
//
// Faults: an error status on one LBA, controller fatal status after N
// commands or at enable, a read that never completes, never becoming ready,
// completions posted in reverse order or twice, entries left unfetched.
//
// Time: the model acts synchronously on writes; "later" is a register read
// (CSTS polling): RDY follows EN after a few reads, and reordered
// completions are posted at the next read.
// defines: HeapDma, MemNvmeConfig, MemNvmeFaults, MemNvme
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "io/nvme/hw.h"
#include "io/nvme/spec.h"

namespace ls::test {

// DmaMemory over the heap with made-up IOVAs far from host addresses (so an
// IOVA used as a pointer, or the reverse, shows up), a page-sized hole after
// each region (so running off its end faults).
class HeapDma : public DmaMemory {
 public:
  ~HeapDma() override;
  Expected<DmaBuffer> alloc(size_t bytes) override;
  void free(const DmaBuffer& b) override;
  Expected<uint64_t> map(void* host, size_t bytes) override;
  void unmap(void* host, size_t bytes) override;
  uint64_t iova_of(const void* host) const override;

  // The device's view: host bytes of [iova, iova + bytes) when they lie in
  // one region, else nullptr.
  uint8_t* translate(uint64_t iova, size_t bytes) const;
  size_t regions() const { return by_iova_.size(); }

 private:
  struct Region {
    uint8_t* host;
    size_t bytes;
    bool owned;
  };
  uint64_t place(uint8_t* host, size_t bytes, bool owned);
  std::map<uint64_t, Region> by_iova_;
  uint64_t next_iova_ = 0x40'0000'0000ull;
};

struct MemNvmeConfig {
  uint32_t mqes = 1023;  // 0's based: queues of up to 1024 entries
  uint32_t dstrd = 0;    // doorbell stride 4 << dstrd
  uint32_t to = 1;       // CAP.TO, 500 ms units
  uint8_t mdts = 5;      // 4 KiB << 5 = 128 KiB per command; 0 = no limit
  uint32_t max_io_queues = 8;
  uint64_t nsze = 4096;            // blocks
  uint32_t lbads = 9;              // log2(block size)
  uint32_t ready_delay_reads = 2;  // CSTS reads before RDY follows EN
};

struct MemNvmeFaults {
  std::optional<uint64_t> error_lba;  // a read covering it completes with error_status
  uint16_t error_status = nvme::make_status(nvme::sct::kMedia, nvme::sc::kUnrecoveredReadError);
  std::optional<uint64_t> hang_lba;              // a read covering it never completes
  std::optional<uint32_t> fatal_after_commands;  // CSTS.CFS = 1 instead of command N + 1
  bool fatal_on_enable = false;
  bool never_ready = false;
  bool reorder = false;     // completions held, then posted newest first at a register read
  bool hold_fetch = false;  // submission entries stay unfetched until release_fetch()
  bool duplicate_completions = false;  // every completion posted twice
};

class MemNvme : public NvmeRegs {
 public:
  MemNvme(HeapDma& dma, const MemNvmeConfig& cfg);

  uint32_t read32(uint32_t offset) override;
  uint64_t read64(uint32_t offset) override;
  void write32(uint32_t offset, uint32_t value) override;
  void write64(uint32_t offset, uint64_t value) override;

  MemNvmeFaults faults;
  std::vector<uint8_t>& data() { return data_; }  // nsze << lbads bytes, random
  uint32_t block_size() const { return 1u << cfg_.lbads; }

  // What the driver did.
  const std::vector<std::string>& violations() const { return violations_; }
  struct Doorbell {
    uint32_t offset, value;
  };
  const std::vector<Doorbell>& doorbells() const { return doorbells_; }
  struct Seen {
    bool admin;
    uint8_t opcode;
  };
  const std::vector<Seen>& commands_seen() const { return seen_; }
  uint32_t reads_served() const { return reads_served_; }
  uint32_t prp_lists_chained() const { return chained_; }
  uint32_t max_blocks_per_read() const { return max_blocks_; }
  size_t io_queues() const { return sqs_.size() - (sqs_.count(0) ? 1 : 0); }
  uint32_t cc() const { return cc_; }
  uint32_t csts() const { return csts_; }
  void release_fetch();

 private:
  struct Sq {
    uint64_t iova;
    uint32_t size;
    uint16_t cqid;
    uint32_t head = 0, tail = 0;
  };
  struct Cq {
    uint64_t iova;
    uint32_t size;
    uint32_t head = 0, tail = 0;
    bool phase = true;
  };
  struct Result {
    uint16_t status = 0;
    uint32_t dw0 = 0;
  };
  struct Held {
    uint16_t cqid;
    nvme::CompletionEntry e;
  };

  void violation(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  void enable();
  void reset();
  void tick();  // "time passes": a register read
  void process(uint16_t sqid);
  std::optional<Result> execute(uint16_t sqid, const nvme::SubmissionEntry& e);
  Result admin(const nvme::SubmissionEntry& e);
  std::optional<Result> io_read(const nvme::SubmissionEntry& e);
  bool dma_write(uint64_t prp1, uint64_t prp2, const uint8_t* src, size_t bytes);
  void post(uint16_t cqid, const nvme::CompletionEntry& e);

  HeapDma& dma_;
  MemNvmeConfig cfg_;
  std::vector<uint8_t> data_;
  uint32_t cc_ = 0, csts_ = 0, aqa_ = 0;
  uint64_t asq_ = 0, acq_ = 0;
  uint32_t reads_since_en_change_ = 0;
  std::map<uint16_t, Sq> sqs_;
  std::map<uint16_t, Cq> cqs_;
  std::vector<Held> held_;
  uint32_t commands_ = 0;
  uint32_t reads_served_ = 0, chained_ = 0, max_blocks_ = 0;
  std::vector<std::string> violations_;
  std::vector<Doorbell> doorbells_;
  std::vector<Seen> seen_;
};

}  // namespace ls::test
