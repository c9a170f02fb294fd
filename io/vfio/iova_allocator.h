// I/O virtual addresses for VFIO DMA mappings: the controller sees host memory
// at an IOVA we choose, so we hand out page-aligned ranges from the windows the
// IOMMU accepts (VFIO reports them; x86 reserves the MSI window at 0xfee00000).
// A bump pointer with a free list: a range comes back to the free list only
// after its VFIO_IOMMU_UNMAP_DMA succeeded, so an IOVA the controller might
// still reach is never handed out twice. Not thread-safe (VfioDma locks).
// defines: IovaAllocator
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "runtime/status.h"

namespace ls {

class IovaAllocator {
 public:
  static constexpr uint64_t kPage = 4096;

  // windows: [start, end) ranges the IOMMU accepts; IOVA 0 is never handed out
  // (DmaMemory::iova_of uses 0 for "not mapped").
  explicit IovaAllocator(std::vector<std::pair<uint64_t, uint64_t>> windows);

  // A page-aligned range of at least `bytes` (rounded up to pages).
  Expected<uint64_t> alloc(uint64_t bytes);
  // Give back a range alloc() returned, once nothing can reach it any more.
  void release(uint64_t iova, uint64_t bytes);

  uint64_t bytes_in_use() const { return in_use_; }

 private:
  void add_free(uint64_t iova, uint64_t size);  // coalesces with its neighbours

  std::vector<std::pair<uint64_t, uint64_t>> windows_;  // page-aligned, sorted
  size_t window_ = 0;                                   // the one the bump pointer is in
  uint64_t bump_ = 0;
  std::map<uint64_t, uint64_t> free_;  // start -> bytes, coalesced
  uint64_t in_use_ = 0;
};

}  // namespace ls
