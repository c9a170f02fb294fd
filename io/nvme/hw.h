// What the userspace NVMe driver (io/nvme/) needs from the machine, as two
// small interfaces, so the driver's logic runs the same against a real
// controller (BAR0 mapped through VFIO, buffers mapped into the IOMMU: io/vfio/)
// and against the in-memory controller model of the unit tests.
//   NvmeRegs: the controller's registers (BAR0): 32- and 64-bit loads and
//     stores at byte offsets, in the order issued (MMIO is uncached; the
//     implementation adds the barriers its transport needs).
//   DmaMemory: host memory the controller can reach: a host pointer and the
//     I/O virtual address (IOVA) the controller uses for it. Queues, PRP
//     lists and identify buffers come from here; the reader's staging buffers
//     are mapped through the same object.
// defines: NvmeRegs, DmaBuffer, DmaMemory
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/status.h"

namespace ls {

class NvmeRegs {
 public:
  virtual ~NvmeRegs() = default;
  virtual uint32_t read32(uint32_t offset) = 0;
  virtual uint64_t read64(uint32_t offset) = 0;
  virtual void write32(uint32_t offset, uint32_t value) = 0;
  virtual void write64(uint32_t offset, uint64_t value) = 0;
};

struct DmaBuffer {
  void* host = nullptr;
  uint64_t iova = 0;
  size_t bytes = 0;
};

class DmaMemory {
 public:
  virtual ~DmaMemory() = default;
  // Zeroed, page-aligned (4 KiB) memory of at least `bytes`, mapped for the device.
  virtual Expected<DmaBuffer> alloc(size_t bytes) = 0;
  virtual void free(const DmaBuffer& b) = 0;
  // Map memory the caller owns (page-aligned; e.g. the reader's staging
  // buffers) for the device; unmap before freeing it.
  virtual Expected<uint64_t> map(void* host, size_t bytes) = 0;
  virtual void unmap(void* host, size_t bytes) = 0;
  // The IOVA of a host address inside a buffer alloc() or map() returned;
  // 0 when it lies in none.
  virtual uint64_t iova_of(const void* host) const = 0;
};

}  // namespace ls
