#include "model/kv_blocks.h"

#include <algorithm>
#include <random>

namespace ls {

KvBlockTable::KvBlockTable(uint32_t n_slots, uint32_t n_ctx, uint32_t n_blocks, uint64_t seed)
    : n_slots_(n_slots),
      n_blocks_(n_blocks ? n_blocks : kv_default_blocks(n_slots, n_ctx)),
      max_blocks_(kv_blocks_for(n_ctx)),
      table_(static_cast<size_t>(n_slots) * max_blocks_, -1),
      held_(n_slots, 0) {
  free_.resize(n_blocks_);
  // Stack order: block 0 on top, so a lone sequence takes 0, 1, 2, ... and its
  // blocks lie in the pool as the unpaged cache's did.
  for (uint32_t i = 0; i < n_blocks_; ++i) free_[i] = static_cast<int32_t>(n_blocks_ - 1 - i);
  if (seed) {
    std::mt19937_64 rng(seed);
    std::shuffle(free_.begin(), free_.end(), rng);
  }
}

uint32_t KvBlockTable::lacking(uint32_t s, uint32_t n_pos) const {
  const uint32_t want = kv_blocks_for(n_pos);
  return want > held_[s] ? want - held_[s] : 0;
}

bool KvBlockTable::reserve(uint32_t s, uint32_t n_pos) {
  const uint32_t want = kv_blocks_for(n_pos);
  if (want > max_blocks_) return false;
  if (lacking(s, n_pos) > free_.size()) return false;
  int32_t* row = table_.data() + static_cast<size_t>(s) * max_blocks_;
  while (held_[s] < want) {
    row[held_[s]++] = free_.back();
    free_.pop_back();
  }
  return true;
}

void KvBlockTable::trim(uint32_t s, uint32_t n_pos) {
  const uint32_t keep = std::min(kv_blocks_for(n_pos), held_[s]);
  int32_t* row = table_.data() + static_cast<size_t>(s) * max_blocks_;
  // Back in reverse, so the next reserve takes them in the order they had.
  while (held_[s] > keep) {
    free_.push_back(row[--held_[s]]);
    row[held_[s]] = -1;
  }
}

}  // namespace ls
