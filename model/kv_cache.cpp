#include "model/kv_cache.h"

#include <algorithm>
#include <cassert>

#include "kernels/cpu/convert_f16.h"
#include "model/kv_blocks.h"

namespace ls {

KvCache::KvCache(uint32_t n_layer, uint32_t n_seq, uint32_t n_ctx, uint32_t n_head_kv,
                 uint32_t head_dim, KvType type, uint32_t n_blocks)
    : n_layer_(n_layer),
      n_seq_(n_seq),
      n_ctx_(n_ctx),
      n_head_kv_(n_head_kv),
      head_dim_(head_dim),
      n_blocks_(n_blocks ? n_blocks : kv_default_blocks(n_seq, n_ctx)),
      max_blocks_(kv_blocks_for(n_ctx)),
      type_(type) {
  const uint64_t n = static_cast<uint64_t>(n_layer) * n_blocks_ * kKvBlockLen * n_embd_kv();
  if (type == KvType::F32) {
    kf_ = ZeroedArray<float>(n);
    vf_ = ZeroedArray<float>(n);
  } else {
    kh_ = ZeroedArray<uint16_t>(n);
    vh_ = ZeroedArray<uint16_t>(n);
  }
  // Slot s's blocks s·max_blocks.. in order, when the pool has them all.
  table_.assign(static_cast<size_t>(n_seq) * max_blocks_, -1);
  if (n_blocks_ >= uint64_t{n_seq} * max_blocks_)
    for (size_t i = 0; i < table_.size(); ++i) table_[i] = static_cast<int32_t>(i);
}

uint64_t KvCache::bytes_for(uint32_t n_layer, uint32_t n_blocks, uint32_t n_embd_kv, KvType type) {
  return 2ull * n_layer * n_blocks * kKvBlockLen * n_embd_kv * (type == KvType::F32 ? 4 : 2);
}

uint64_t KvCache::bytes() const {
  return bytes_for(n_layer_, n_blocks_, n_embd_kv(), type_);
}

Status KvCache::set_table(const std::vector<int32_t>& table) {
  if (table.size() != table_.size())
    return make_error("key/value block table of %zu entries; the cache's is %u slots x %u blocks",
                      table.size(), n_seq_, max_blocks_);
  for (size_t i = 0; i < table.size(); ++i)
    if (table[i] < -1 || table[i] >= static_cast<int64_t>(n_blocks_))
      return make_error("key/value block table: slot %zu, block %zu is %d; the pool has %u blocks",
                        i / max_blocks_, i % max_blocks_, table[i], n_blocks_);
  table_ = table;
  return ok();
}

bool KvCache::holds(uint32_t seq, uint32_t p0, uint32_t p1) const {
  if (seq >= n_seq_ || p1 > n_ctx_) return false;
  for (uint32_t b = p0 / kKvBlockLen; b * kKvBlockLen < p1; ++b)
    if (table_[static_cast<size_t>(seq) * max_blocks_ + b] < 0) return false;
  return true;
}

uint64_t KvCache::at(uint32_t layer, uint32_t seq, uint32_t head, uint32_t pos) const {
  const int32_t block = table_[static_cast<size_t>(seq) * max_blocks_ + pos / kKvBlockLen];
  assert(block >= 0);
  return index(layer, static_cast<uint32_t>(block), head, pos % kKvBlockLen);
}

AttnKv KvCache::attn(uint32_t layer) const {
  AttnKv kv;
  const bool f16 = type_ == KvType::F16;
  kv.type = f16 ? AttnKvType::F16 : AttnKvType::F32;
  kv.k = f16 ? static_cast<const void*>(k_f16(layer)) : k_f32(layer);
  kv.v = f16 ? static_cast<const void*>(v_f16(layer)) : v_f32(layer);
  kv.ld_pos = ld_pos();
  kv.ld_head = ld_head();
  kv.ld_block = ld_block();
  kv.pages = pages();
  kv.k_tiled = true;
  return kv;
}

void KvCache::store(uint32_t layer, uint32_t seq, uint32_t pos, const float* k, const float* v) {
  write_rows(layer, seq, pos, pos + 1, k, v);
}

uint64_t KvCache::k_at(uint32_t layer, uint32_t seq, uint32_t head, uint32_t pos) const {
  const uint32_t in_tile = pos % kAttnKTile;
  return at(layer, seq, head, pos - in_tile) + in_tile;
}

void KvCache::load_k(uint32_t layer, uint32_t seq, uint32_t pos, float* out) const {
  for (uint32_t h = 0; h < n_head_kv_; ++h) {
    const uint64_t i = k_at(layer, seq, h, pos);
    float* o = out + static_cast<uint64_t>(h) * head_dim_;
    for (uint32_t d = 0; d < head_dim_; ++d) {
      const uint64_t e = i + uint64_t{d} * kAttnKTile;
      o[d] = type_ == KvType::F32 ? kf_[e] : fp16_to_fp32(kh_[e]);
    }
  }
}

void KvCache::load_v(uint32_t layer, uint32_t seq, uint32_t pos, float* out) const {
  for (uint32_t h = 0; h < n_head_kv_; ++h) {
    const uint64_t i = at(layer, seq, h, pos);
    float* o = out + static_cast<uint64_t>(h) * head_dim_;
    if (type_ == KvType::F32)
      std::copy_n(vf_.data() + i, head_dim_, o);
    else
      fp16_to_fp32_n(vh_.data() + i, o, head_dim_);
  }
}

void KvCache::read_rows(uint32_t layer, uint32_t seq, uint32_t p0, uint32_t p1, float* k,
                        float* v) const {
  for (uint32_t p = p0; p < p1; ++p) {
    const uint64_t row = static_cast<uint64_t>(p - p0) * n_embd_kv();
    load_k(layer, seq, p, k + row);
    load_v(layer, seq, p, v + row);
  }
}

void KvCache::write_rows(uint32_t layer, uint32_t seq, uint32_t p0, uint32_t p1, const float* k,
                         const float* v) {
  std::vector<uint16_t> row(type_ == KvType::F16 ? head_dim_ : 0);
  for (uint32_t p = p0; p < p1; ++p)
    for (uint32_t h = 0; h < n_head_kv_; ++h) {
      const uint64_t i = at(layer, seq, h, p), ki = k_at(layer, seq, h, p);
      const uint64_t in = static_cast<uint64_t>(p - p0) * n_embd_kv() + uint64_t{h} * head_dim_;
      if (type_ == KvType::F32) {
        for (uint32_t d = 0; d < head_dim_; ++d) kf_[ki + uint64_t{d} * kAttnKTile] = k[in + d];
        std::copy_n(v + in, head_dim_, vf_.data() + i);
      } else {
        fp32_to_fp16_n(k + in, row.data(), head_dim_);
        for (uint32_t d = 0; d < head_dim_; ++d) kh_[ki + uint64_t{d} * kAttnKTile] = row[d];
        fp32_to_fp16_n(v + in, vh_.data() + i, head_dim_);
      }
    }
}

}  // namespace ls
