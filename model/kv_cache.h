// The key/value cache: for every layer and every sequence slot, the keys and
// values of positions 0..n_ctx-1, stored as f32 or f16. Several sequences
// live side by side, so one pass over a layer's weights can serve a batch of
// (sequence, position) pairs.
//
// Layout: (layer, seq, head, pos, dim), head-major: each key/value head's
// positions are contiguous. The CPU tier's attention reads one head over a
// run of positions at a time (kernels/cpu/attention_cpu.h), and contiguous
// runs stream at the host's read bandwidth where rows of all heads, read one
// head at a time, left 7/8 of every 2 KiB row to be skipped (on the H200
// machine's Xeon, 70B shape, one thread: 6.7-8.7 GB/s against 5.5-7.1 with
// rows; bench/results/2026-12-01-h200-issue14.md). The row interfaces below
// (store, load, read_rows, write_rows) take and give whole rows of n_embd_kv
// values, whatever the layout.
// defines: KvType, KvCache
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/half.h"

namespace ls {

enum class KvType { F32, F16 };

class KvCache {
 public:
  KvCache() = default;
  KvCache(uint32_t n_layer, uint32_t n_seq, uint32_t n_ctx, uint32_t n_head_kv, uint32_t head_dim,
          KvType type);

  uint32_t n_ctx() const { return n_ctx_; }
  uint32_t n_seq() const { return n_seq_; }
  uint32_t n_head_kv() const { return n_head_kv_; }
  uint32_t head_dim() const { return head_dim_; }
  uint32_t n_embd_kv() const { return n_head_kv_ * head_dim_; }
  KvType type() const { return type_; }
  uint64_t bytes() const;
  // Bytes a cache of this shape needs (for budgets and plans).
  static uint64_t bytes_for(uint32_t n_layer, uint32_t n_seq, uint32_t n_ctx, uint32_t n_embd_kv,
                            KvType type);

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
  // Direct pointers to a layer's cache (sequence 0, head 0, position 0), for
  // the attention kernels that read it in place (f32 ones for an F32 cache,
  // f16 ones for an F16 cache), and the strides in elements.
  const float* k_f32(uint32_t layer) const { return kf_.data() + index(layer, 0, 0, 0); }
  const float* v_f32(uint32_t layer) const { return vf_.data() + index(layer, 0, 0, 0); }
  const uint16_t* k_f16(uint32_t layer) const { return kh_.data() + index(layer, 0, 0, 0); }
  const uint16_t* v_f16(uint32_t layer) const { return vh_.data() + index(layer, 0, 0, 0); }
  int64_t ld_pos() const { return head_dim_; }
  int64_t ld_head() const { return int64_t{n_ctx_} * head_dim_; }
  int64_t ld_seq() const { return ld_head() * n_head_kv_; }

 private:
  uint64_t index(uint32_t layer, uint32_t seq, uint32_t head, uint32_t pos) const {
    return (((static_cast<uint64_t>(layer) * n_seq_ + seq) * n_head_kv_ + head) * n_ctx_ + pos) *
           head_dim_;
  }
  uint32_t n_layer_ = 0, n_seq_ = 0, n_ctx_ = 0, n_head_kv_ = 0, head_dim_ = 0;
  KvType type_ = KvType::F32;
  std::vector<float> kf_, vf_;
  std::vector<uint16_t> kh_, vh_;
};

}  // namespace ls
