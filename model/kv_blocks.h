// Who holds which block of the paged key/value cache (kernels/kv_pages.h):
// a pool of n_blocks blocks of kKvBlockLen positions (each block holds those
// positions' keys and values for every layer, on every backend: the CPU
// cache in host memory, the CUDA cache on the device, the same block ids)
// and, per sequence slot, the blocks it holds, in position order. Only
// bookkeeping: the sampler actor owns one (actors/sampler.h), grows a slot's
// blocks as its sequence reaches new positions and frees them when it ends,
// and sends table() with every step for the backends to read through.
// defines: kv_blocks_for(), kv_default_blocks(), KvBlockTable
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kv_pages.h"

namespace ls {

// Blocks that hold positions [0, n_pos).
inline uint32_t kv_blocks_for(uint64_t n_pos) {
  return static_cast<uint32_t>((n_pos + kKvBlockLen - 1) / kKvBlockLen);
}
// The pool that keeps the unpaged cache's memory: n_ctx positions for every slot.
inline uint32_t kv_default_blocks(uint32_t n_seq, uint32_t n_ctx) {
  return n_seq * kv_blocks_for(n_ctx);
}

class KvBlockTable {
 public:
  KvBlockTable() = default;
  // n_blocks 0: kv_default_blocks(n_slots, n_ctx). The free blocks are taken
  // lowest id first; a seed other than 0 shuffles them (tests: sequences'
  // blocks scattered over the pool in no order).
  KvBlockTable(uint32_t n_slots, uint32_t n_ctx, uint32_t n_blocks, uint64_t seed = 0);

  uint32_t n_slots() const { return n_slots_; }
  uint32_t n_blocks() const { return n_blocks_; }
  uint32_t max_blocks() const { return max_blocks_; }  // per slot: n_ctx positions' worth
  uint32_t n_free() const { return static_cast<uint32_t>(free_.size()); }
  uint32_t n_used() const { return n_blocks_ - n_free(); }
  // Blocks slot s holds, and the positions they cover.
  uint32_t held(uint32_t s) const { return held_[s]; }
  uint32_t capacity(uint32_t s) const { return held_[s] * kKvBlockLen; }

  // Slot s holds blocks for positions [0, n_pos) afterwards, taking what it
  // lacks from the pool; false (and nothing taken) when the pool has too
  // few free, or n_pos is past the slot's max_blocks.
  bool reserve(uint32_t s, uint32_t n_pos);
  // Slot s keeps only the blocks of positions [0, n_pos); the rest go back.
  void trim(uint32_t s, uint32_t n_pos);
  // What reserve(s, n_pos) would take from the pool.
  uint32_t lacking(uint32_t s, uint32_t n_pos) const;

  // (n_slots, max_blocks): each slot's blocks, -1 past the last.
  const std::vector<int32_t>& table() const { return table_; }

 private:
  uint32_t n_slots_ = 0, n_blocks_ = 0, max_blocks_ = 0;
  std::vector<int32_t> table_;
  std::vector<uint32_t> held_;
  std::vector<int32_t> free_;  // a stack: back() is taken next
};

}  // namespace ls
