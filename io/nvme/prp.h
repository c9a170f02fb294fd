// PRP (physical region page) entries for one transfer of `bytes` at a
// contiguous IOVA range, page size 4 KiB (CC.MPS = 0):
//   one page    → PRP1 = the IOVA (any dword-aligned offset), PRP2 = 0
//   two pages   → PRP2 = the second page
//   more        → PRP2 = the IOVA of a PRP list: one 8-byte entry per page
//                 after the first; a list page holds 512 entries, and when
//                 more are needed its last entry points to the next list page.
// And the MDTS split: a read larger than one command may move becomes
// several reads, each within the controller's limit.
// defines: NvmePrp, NvmePrpListPage, nvme_prp_pages(), nvme_prp_list_pages(),
//          nvme_prp_build(), NvmeReadPiece, nvme_max_transfer(), nvme_split_read()
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/status.h"

namespace ls {

struct NvmePrp {
  uint64_t prp1 = 0;
  uint64_t prp2 = 0;
  size_t list_pages_used = 0;
};

// One page of device-reachable memory to hold PRP entries.
struct NvmePrpListPage {
  uint64_t* host = nullptr;  // 512 entries
  uint64_t iova = 0;         // page aligned
};

// Data pages a transfer touches.
size_t nvme_prp_pages(uint64_t iova, size_t bytes);
// PRP list pages it needs (0 for one or two data pages).
size_t nvme_prp_list_pages(uint64_t iova, size_t bytes);
// Fills PRP1/PRP2 and, if needed, the first nvme_prp_list_pages() of `lists`.
// Errors: zero bytes, an IOVA not dword aligned, too few list pages.
Expected<NvmePrp> nvme_prp_build(uint64_t iova, size_t bytes,
                                 std::span<const NvmePrpListPage> lists);

// The most bytes one command may move: MDTS is a power of two in units of
// the minimum page size (4 KiB << CAP.MPSMIN); 0 means no limit, and then
// `cap_bytes` (the driver's own limit, which sizes its PRP lists) applies.
size_t nvme_max_transfer(uint8_t mdts, uint32_t mpsmin, size_t cap_bytes);

struct NvmeReadPiece {
  uint64_t lba = 0;
  uint32_t blocks = 0;
  size_t offset = 0;  // bytes from the start of the caller's buffer
};
// Splits a read of `blocks` blocks at `lba` into commands of at most
// `max_bytes` (a whole number of blocks, at least one) and 65536 blocks.
std::vector<NvmeReadPiece> nvme_split_read(uint64_t lba, uint64_t blocks, uint32_t block_size,
                                           size_t max_bytes);

}  // namespace ls
