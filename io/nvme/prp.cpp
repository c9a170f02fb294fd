// PRP building and the MDTS split; the rules are in prp.h.
#include "io/nvme/prp.h"

#include <algorithm>

#include "io/nvme/spec.h"

namespace ls {

namespace {
constexpr uint64_t kPage = nvme::kPageSize;
constexpr size_t kEntriesPerList = kPage / sizeof(uint64_t);  // 512
}  // namespace

size_t nvme_prp_pages(uint64_t iova, size_t bytes) {
  if (bytes == 0) return 0;
  return static_cast<size_t>(((iova % kPage) + bytes + kPage - 1) / kPage);
}

size_t nvme_prp_list_pages(uint64_t iova, size_t bytes) {
  const size_t pages = nvme_prp_pages(iova, bytes);
  if (pages <= 2) return 0;
  // Every list page but the last gives one entry to the chain pointer:
  // k pages hold 511 (k - 1) + 512 data entries.
  const size_t entries = pages - 1;
  if (entries <= kEntriesPerList) return 1;
  return 1 + (entries - kEntriesPerList + kEntriesPerList - 2) / (kEntriesPerList - 1);
}

Expected<NvmePrp> nvme_prp_build(uint64_t iova, size_t bytes,
                                 std::span<const NvmePrpListPage> lists) {
  if (bytes == 0) return make_error("nvme prp: a transfer of 0 bytes");
  if (iova & 3) {
    return make_error("nvme prp: IOVA 0x%llx is not dword aligned",
                      static_cast<unsigned long long>(iova));
  }
  const size_t pages = nvme_prp_pages(iova, bytes);
  const size_t need = nvme_prp_list_pages(iova, bytes);
  if (lists.size() < need) {
    return make_error("nvme prp: %zu bytes at IOVA 0x%llx need %zu PRP list pages, have %zu", bytes,
                      static_cast<unsigned long long>(iova), need, lists.size());
  }
  NvmePrp prp;
  prp.prp1 = iova;
  const uint64_t first_page = iova & ~(kPage - 1);
  if (pages == 1) return prp;
  if (pages == 2) {
    prp.prp2 = first_page + kPage;
    return prp;
  }
  prp.prp2 = lists[0].iova;
  prp.list_pages_used = need;
  size_t list = 0;
  size_t slot = 0;
  for (size_t p = 1; p < pages; ++p) {
    // The last slot of a list page chains to the next list when more than
    // one data entry remains (one remaining entry fits in the slot itself).
    if (slot == kEntriesPerList - 1 && pages - p > 1) {
      lists[list].host[slot] = lists[list + 1].iova;
      ++list;
      slot = 0;
    }
    lists[list].host[slot++] = first_page + p * kPage;
  }
  return prp;
}

size_t nvme_max_transfer(uint8_t mdts, uint32_t mpsmin, size_t cap_bytes) {
  if (mdts == 0) return cap_bytes;
  const uint32_t shift = 12 + mpsmin + mdts;
  if (shift >= 40) return cap_bytes;  // beyond any cap we would pick
  return std::min(cap_bytes, static_cast<size_t>(1) << shift);
}

std::vector<NvmeReadPiece> nvme_split_read(uint64_t lba, uint64_t blocks, uint32_t block_size,
                                           size_t max_bytes) {
  const uint64_t per_cmd = std::min<uint64_t>(65536, std::max<uint64_t>(1, max_bytes / block_size));
  std::vector<NvmeReadPiece> pieces;
  pieces.reserve(static_cast<size_t>((blocks + per_cmd - 1) / per_cmd));
  for (uint64_t done = 0; done < blocks;) {
    const uint64_t n = std::min(per_cmd, blocks - done);
    pieces.push_back(
        {lba + done, static_cast<uint32_t>(n), static_cast<size_t>(done * block_size)});
    done += n;
  }
  return pieces;
}

}  // namespace ls
