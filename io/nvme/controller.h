// A userspace NVMe controller driver, read-only, polled: bring-up per the
// NVMe base specification (disable, admin queue, enable, identify, number of
// queues, I/O queue pairs), reads into device-reachable memory, and a
// shutdown that always leaves the controller disabled (CC.EN = 0, CSTS.RDY
// = 0) — on success, on error and from the destructor.
//
// The machine is behind two interfaces (io/nvme/hw.h): the same code drives
// a controller mapped through VFIO and the in-memory model of the unit tests.
// defines: NvmeControllerOptions, NvmeControllerInfo, NvmeController
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/nvme/hw.h"
#include "io/nvme/queue.h"
#include "runtime/status.h"

namespace ls {

struct NvmeControllerOptions {
  uint32_t nsid = 1;             // the namespace read() reads
  uint32_t io_queues = 1;        // I/O queue pairs wanted (the controller may grant fewer)
  uint32_t io_queue_depth = 64;  // entries per I/O queue; capped at CAP.MQES + 1
  uint32_t admin_queue_depth = 32;
  // The driver's own per-command limit when the controller sets none (MDTS =
  // 0); it also sizes the PRP lists each command id owns.
  size_t max_transfer_cap = size_t{1} << 20;
  std::chrono::milliseconds command_timeout{5000};
};

struct NvmeControllerInfo {
  std::string model, serial, firmware;  // trailing spaces removed
  uint16_t vid = 0;
  uint32_t version = 0;            // VS: major << 16 | minor << 8 | tertiary
  uint32_t max_queue_entries = 0;  // CAP.MQES + 1
  uint32_t doorbell_stride = 0;    // bytes
  uint32_t ready_timeout_ms = 0;   // CAP.TO x 500 ms
  uint8_t mdts = 0;
  size_t max_transfer = 0;  // bytes per command
  uint32_t namespaces = 0;  // NN
  uint32_t nsid = 0;
  uint64_t nsze = 0;            // namespace size in blocks
  uint32_t block_size = 0;      // bytes
  uint32_t io_queues = 0;       // created
  uint32_t io_queue_depth = 0;  // entries per I/O queue
};

class NvmeController {
 public:
  // Brings the controller up; on an error it is left disabled. `regs` and
  // `dma` must outlive the controller (its destructor still uses them).
  static Expected<std::unique_ptr<NvmeController>> open(NvmeRegs& regs, DmaMemory& dma,
                                                        const NvmeControllerOptions& opts = {});
  ~NvmeController();  // shutdown(); its error has nowhere to go
  NvmeController(const NvmeController&) = delete;
  NvmeController& operator=(const NvmeController&) = delete;

  const NvmeControllerInfo& info() const { return info_; }

  // Reads `blocks` blocks at `lba` into memory at `iova` (contiguous in IOVA
  // space, dword aligned, mapped through the DmaMemory) on I/O queue
  // `queue`, split into commands of at most info().max_transfer bytes, all
  // in flight at once up to the queue's depth. A read beyond the namespace
  // is refused before anything is submitted. After a timeout or a fatal
  // controller status the controller is disabled before read() returns (a
  // command still in flight could otherwise write into memory the caller
  // frees or unmaps on the error), and it refuses further reads.
  Status read(uint64_t lba, uint64_t blocks, uint64_t iova, uint32_t queue = 0);

  // Deletes the I/O queues, notifies shutdown, disables the controller and
  // waits for CSTS.RDY = 0, then frees the queue memory. Idempotent.
  Status shutdown();

  // True once a timeout, a fatal status or a broken completion has stopped
  // the controller (it is disabled then, or as far as it would go).
  bool failed() const { return failed_; }

  // For tests and diagnostics.
  NvmeQueuePair& io_queue(uint32_t i) { return *io_queues_[i]; }
  NvmeQueuePair& admin_queue() { return *admin_; }

 private:
  // Faults that only tests provoke on purpose, through NvmeControllerFaults:
  // declared here and defined in no library file (tests/qemu/guest_vfio_faults.cpp
  // defines it for the QEMU fault test), as NvmeCommandForge is. None of them
  // can build a command other than the factories' read-only ones.
  friend struct NvmeControllerFaults;
  struct TestFaults {
    // ASQ written with bits 11:0 set: a controller must refuse to enable
    // (CSTS.CFS). Those bits are reserved, so one that ignored them would
    // still find the real admin queue there.
    bool misaligned_asq = false;
  };

  NvmeController(NvmeRegs& regs, DmaMemory& dma, const NvmeControllerOptions& opts)
      : regs_(regs), dma_(dma), opts_(opts) {}
  static Expected<std::unique_ptr<NvmeController>> open_with(NvmeRegs& regs, DmaMemory& dma,
                                                             const NvmeControllerOptions& opts,
                                                             const TestFaults& faults);
  // read() on namespace `nsid`; check_range = false skips the namespace
  // bounds check (tests only: the controller's own answer to such a read).
  Status read_on(uint32_t nsid, uint64_t lba, uint64_t blocks, uint64_t iova, uint32_t queue,
                 bool check_range);
  // A timeout, fatal status or broken completion: mark the controller failed
  // and disable it now; returns `why`, with the disable's own error if any.
  Error fail_stop(const Error& why);
  Status bring_up();
  Status disable();
  Status wait_ready(bool want_ready, bool fail_on_cfs, const char* step);
  Expected<NvmeCompletion> admin(const NvmeCommand& cmd);
  Status identify();
  Status create_io_queues();

  NvmeRegs& regs_;
  DmaMemory& dma_;
  NvmeControllerOptions opts_;
  TestFaults faults_;
  NvmeControllerInfo info_;
  uint64_t cap_ = 0;
  std::unique_ptr<NvmeQueuePair> admin_;
  std::vector<std::unique_ptr<NvmeQueuePair>> io_queues_;
  uint32_t io_cqs_created_ = 0;  // created on the controller, to delete at shutdown
  uint32_t io_sqs_created_ = 0;
  DmaBuffer identify_buf_;
  bool touched_ = false;  // the controller's registers were written: shutdown must disable
  bool failed_ = false;   // a timeout or fatal status: skip admin commands, just disable
  bool down_ = false;
};

}  // namespace ls
