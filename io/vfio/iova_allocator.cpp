// IovaAllocator: first fit from the free list, else bump within the windows.
#include "io/vfio/iova_allocator.h"

#include <algorithm>
#include <cinttypes>

namespace ls {
namespace {
uint64_t round_up(uint64_t x, uint64_t a) {
  return (x + a - 1) / a * a;
}
uint64_t round_down(uint64_t x, uint64_t a) {
  return x / a * a;
}
}  // namespace

IovaAllocator::IovaAllocator(std::vector<std::pair<uint64_t, uint64_t>> windows) {
  std::sort(windows.begin(), windows.end());
  for (auto [s, e] : windows) {
    s = round_up(std::max<uint64_t>(s, kPage), kPage);  // keep IOVA 0 unused
    e = round_down(e, kPage);
    if (e > s) windows_.emplace_back(s, e);
  }
  if (!windows_.empty()) bump_ = windows_[0].first;
}

Expected<uint64_t> IovaAllocator::alloc(uint64_t bytes) {
  if (bytes == 0) return make_error("IOVA allocation of 0 bytes");
  const uint64_t size = round_up(bytes, kPage);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < size) continue;
    const uint64_t iova = it->first, left = it->second - size;
    free_.erase(it);
    if (left) free_.emplace(iova + size, left);
    in_use_ += size;
    return iova;
  }
  while (window_ < windows_.size()) {
    if (windows_[window_].second - bump_ >= size) {
      const uint64_t iova = bump_;
      bump_ += size;
      in_use_ += size;
      return iova;
    }
    // The tail of this window is too small: keep it for smaller requests.
    if (windows_[window_].second > bump_) add_free(bump_, windows_[window_].second - bump_);
    if (++window_ < windows_.size()) bump_ = windows_[window_].first;
  }
  return make_error("IOVA space exhausted: no free range of %" PRIu64 " bytes (%" PRIu64
                    " bytes mapped)",
                    size, in_use_);
}

void IovaAllocator::release(uint64_t iova, uint64_t bytes) {
  const uint64_t size = round_up(bytes, kPage);
  in_use_ -= std::min(in_use_, size);
  add_free(iova, size);
}

void IovaAllocator::add_free(uint64_t iova, uint64_t size) {
  uint64_t bytes = size;
  auto next = free_.lower_bound(iova);
  // Coalesce with the neighbours so large requests can reuse the space.
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == iova) {
      iova = prev->first;
      bytes = prev->second + size;
      free_.erase(prev);
    }
  }
  if (next != free_.end() && iova + bytes == next->first) {
    bytes += next->second;
    free_.erase(next);
  }
  free_.emplace(iova, bytes);
}

}  // namespace ls
