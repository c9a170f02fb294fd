// A PCI device opened through VFIO type1, for the userspace NVMe driver:
//   container (/dev/vfio/vfio) -> the device's IOMMU group (/dev/vfio/N) ->
//   VFIO_SET_IOMMU type1 -> the device fd -> BAR0 mapped -> bus mastering on.
// VfioRegs is io/nvme/hw.h's NvmeRegs over the mapped BAR0; VfioDma is its
// DmaMemory over VFIO_IOMMU_MAP_DMA with an IovaAllocator. Everything is
// released in the destructors (bus mastering off, DMA unmapped, BAR
// unmapped, fds closed), and on every error path of open().
// Each error says what is missing: the module, root, the IOMMU, interrupt
// remapping, or which device keeps the group from being viable.
// Exercised by the QEMU guest test (tests/qemu/); this machine has no IOMMU.
// defines: VfioRegs, VfioDma, VfioDevice
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "io/nvme/hw.h"
#include "io/vfio/iova_allocator.h"
#include "runtime/status.h"

namespace ls {

// BAR0 registers: volatile 32-bit accesses; a 64-bit register as two 32-bit
// ones, low half first (NVMe allows it, and some controllers take nothing else).
class VfioRegs final : public NvmeRegs {
 public:
  VfioRegs(volatile uint8_t* base, size_t bytes) : base_(base), bytes_(bytes) {}
  uint32_t read32(uint32_t offset) override;
  uint64_t read64(uint32_t offset) override;
  void write32(uint32_t offset, uint32_t value) override;
  void write64(uint32_t offset, uint64_t value) override;
  size_t bytes() const { return bytes_; }
  // Accesses outside the BAR (a driver bug): reads give all ones, as a PCI
  // read from a missing device does, and writes are dropped; counted here.
  uint64_t bad_accesses() const { return bad_; }

 private:
  volatile uint8_t* base_;
  size_t bytes_;
  uint64_t bad_ = 0;
};

// DMA memory of one VFIO container. Thread-safe: the reader maps staging
// buffers while the driver allocates queues.
class VfioDma final : public DmaMemory {
 public:
  VfioDma(int container_fd, IovaAllocator iovas) : fd_(container_fd), iovas_(std::move(iovas)) {}
  ~VfioDma() override;  // unmaps all, frees what alloc() made
  VfioDma(const VfioDma&) = delete;
  VfioDma& operator=(const VfioDma&) = delete;

  Expected<DmaBuffer> alloc(size_t bytes) override;
  void free(const DmaBuffer& b) override;
  Expected<uint64_t> map(void* host, size_t bytes) override;
  void unmap(void* host, size_t bytes) override;
  uint64_t iova_of(const void* host) const override;
  // Mappings alive now (alloc() and map() ones): 0 once every user has
  // released its memory, which the QEMU fault test checks after each error.
  size_t mappings() const;

 private:
  struct Mapping {
    uint64_t iova = 0;
    size_t bytes = 0;    // page-rounded
    bool owned = false;  // alloc() made the host memory: munmap it on free
  };
  Expected<uint64_t> map_locked(void* host, size_t bytes, bool owned);
  Status unmap_locked(uintptr_t host);

  int fd_;
  mutable std::mutex mu_;
  IovaAllocator iovas_;
  std::map<uintptr_t, Mapping> maps_;  // by host address
};

class VfioDevice {
 public:
  // address: "0000:00:04.0". root: where sysfs and /dev are ("/" but in tests).
  static Expected<std::unique_ptr<VfioDevice>> open(const std::string& address,
                                                    const std::string& root = "/");
  ~VfioDevice();
  VfioDevice(const VfioDevice&) = delete;
  VfioDevice& operator=(const VfioDevice&) = delete;

  NvmeRegs& regs() { return *regs_; }
  VfioDma& dma() { return *dma_; }
  const std::string& address() const { return address_; }
  int group() const { return group_; }

 private:
  VfioDevice() = default;
  Status set_bus_master(bool on);

  std::string address_;
  int group_ = -1;
  int container_fd_ = -1, group_fd_ = -1, device_fd_ = -1;
  void* bar_ = nullptr;
  size_t bar_bytes_ = 0;
  uint64_t config_offset_ = 0;  // of the PCI config space region in the device fd
  bool bus_master_set_ = false;
  std::unique_ptr<VfioRegs> regs_;
  std::unique_ptr<VfioDma> dma_;
};

}  // namespace ls
