// The key/value cache in host memory, paged (kernels/kv_pages.h): a pool of
// n_blocks blocks of kKvBlockLen positions, each block holding those
// positions' keys and values for every layer, and the block table that says
// which blocks each sequence slot holds, in position order. Several
// sequences live side by side, so one pass over a layer's weights can serve
// a batch of (sequence, position) pairs; a sequence takes blocks as it grows
// (model/kv_blocks.h decides which; set_table() brings the decision here).
//
// Layout: (layer, block, head, pos in block, dim) for values, (layer,
// block, head, dim, pos in block) for keys: head-major within a block, each
// key/value head's 16 positions contiguous (4 KiB at head_dim 128 in f16),
// and a block's keys of a head dims-major, the tiled keys of
// kernels/ref/attention.h (AttnKv::k_tiled: a vector load holds one dim of
// 16 positions, and the CPU tier's scores need no horizontal sums). The CPU tier's attention reads
// one head over a run of positions at a time (kernels/cpu/attention_cpu.h), and contiguous runs
// stream at the host's read bandwidth where rows of all heads, read one head
// at a time, left 7/8 of every 2 KiB row to be skipped (on the H200
// machine's Xeon, 70B shape, one thread: 6.7-8.7 GB/s against 5.5-7.1 with
// rows; bench/results/2026-12-01-h200-issue14.md). The row interfaces below
// (store, load, read_rows, write_rows) take and give whole rows of n_embd_kv
// values, whatever the layout.
//
// Until a table is set, a pool of at least n_seq × n_ctx positions (the
// default) gives slot s the blocks s·max_blocks.. in order: callers that
// never page (a Session, the tests of the backend) see a cache of n_ctx
// positions per slot, as before the paging; a smaller pool starts empty.
// defines: KvType, KvCache
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/half.h"
#include "kernels/kv_pages.h"
#include "kernels/ref/attention.h"
#include "runtime/status.h"
#include "runtime/zeroed_array.h"

namespace ls {

enum class KvType { F32, F16 };

// A pool block holds whole key tiles.
static_assert(kKvBlockLen == kAttnKTile, "a KvCache block is one key tile a head");

class KvCache {
 public:
  KvCache() = default;
  // n_blocks 0: n_seq × ceil(n_ctx / kKvBlockLen) (model/kv_blocks.h's default).
  KvCache(uint32_t n_layer, uint32_t n_seq, uint32_t n_ctx, uint32_t n_head_kv, uint32_t head_dim,
          KvType type, uint32_t n_blocks = 0);

  uint32_t n_ctx() const { return n_ctx_; }
  uint32_t n_seq() const { return n_seq_; }
  uint32_t n_head_kv() const { return n_head_kv_; }
  uint32_t head_dim() const { return head_dim_; }
  uint32_t n_embd_kv() const { return n_head_kv_ * head_dim_; }
  uint32_t n_blocks() const { return n_blocks_; }
  uint32_t max_blocks() const { return max_blocks_; }  // a slot's table row: n_ctx positions
  KvType type() const { return type_; }
  uint64_t bytes() const;
  // Bytes a pool of n_blocks blocks needs (for budgets and plans).
  static uint64_t bytes_for(uint32_t n_layer, uint32_t n_blocks, uint32_t n_embd_kv, KvType type);

  // The block table, (n_seq, max_blocks): -1, or a block below n_blocks.
  // An error names the first bad entry (and nothing changes).
  Status set_table(const std::vector<int32_t>& table);
  const std::vector<int32_t>& table() const { return table_; }
  // Whether slot seq holds a block for every position of [p0, p1).
  bool holds(uint32_t seq, uint32_t p0, uint32_t p1) const;

  // Rows of positions the slot holds blocks for (holds(); asserted).
  void store(uint32_t layer, uint32_t seq, uint32_t pos, const float* k, const float* v);
  // Row (n_embd_kv values) of a position, converted to f32 into out.
  void load_k(uint32_t layer, uint32_t seq, uint32_t pos, float* out) const;
  void load_v(uint32_t layer, uint32_t seq, uint32_t pos, float* out) const;
  // The rows of positions [p0, p1), n_embd_kv f32 values per position: a
  // layer's cache moving between backends when a hybrid plan computes the
  // layer on the GPU for one step and on the CPU for the next. f32 carries
  // either cache type exactly, so rows written back are the same bits.
  void read_rows(uint32_t layer, uint32_t seq, uint32_t p0, uint32_t p1, float* k, float* v) const;
  void write_rows(uint32_t layer, uint32_t seq, uint32_t p0, uint32_t p1, const float* k,
                  const float* v);
  // Direct pointers to a layer's pool (block 0, head 0, position 0), for the
  // attention kernels that read it in place (f32 ones for an F32 cache, f16
  // ones for an F16 cache) through pages(); the strides in elements.
  const float* k_f32(uint32_t layer) const { return kf_.data() + index(layer, 0, 0, 0); }
  const float* v_f32(uint32_t layer) const { return vf_.data() + index(layer, 0, 0, 0); }
  const uint16_t* k_f16(uint32_t layer) const { return kh_.data() + index(layer, 0, 0, 0); }
  const uint16_t* v_f16(uint32_t layer) const { return vh_.data() + index(layer, 0, 0, 0); }
  KvPages pages() const {
    return {table_.data(), static_cast<int32_t>(max_blocks_), kKvBlockShift};
  }
  // Values' strides; keys are tiled (AttnKv::k_tiled) within the same
  // blocks and heads.
  int64_t ld_pos() const { return head_dim_; }
  int64_t ld_head() const { return int64_t{kKvBlockLen} * head_dim_; }
  int64_t ld_block() const { return ld_head() * n_head_kv_; }
  // Layer's pool as the attention kernels read it: paged, tiled keys.
  AttnKv attn(uint32_t layer) const;

 private:
  // Element of (layer, pool block, head, position within the block).
  uint64_t index(uint32_t layer, uint32_t block, uint32_t head, uint32_t in_block) const {
    return (((static_cast<uint64_t>(layer) * n_blocks_ + block) * n_head_kv_ + head) * kKvBlockLen +
            in_block) *
           head_dim_;
  }
  // Element of (layer, slot, head, position) through the table: a value
  // row's first; k_at: a key's dim 0 (its dim d kAttnKTile·d further).
  uint64_t at(uint32_t layer, uint32_t seq, uint32_t head, uint32_t pos) const;
  uint64_t k_at(uint32_t layer, uint32_t seq, uint32_t head, uint32_t pos) const;
  uint32_t n_layer_ = 0, n_seq_ = 0, n_ctx_ = 0, n_head_kv_ = 0, head_dim_ = 0;
  uint32_t n_blocks_ = 0, max_blocks_ = 0;
  KvType type_ = KvType::F32;
  std::vector<int32_t> table_;  // (n_seq, max_blocks)
  ZeroedArray<float> kf_, vf_;  // zero until first written (runtime/zeroed_array.h)
  ZeroedArray<uint16_t> kh_, vh_;
};

}  // namespace ls
