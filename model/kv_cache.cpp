#include "model/kv_cache.h"

#include <algorithm>

#include "kernels/cpu/convert_f16.h"

namespace ls {

KvCache::KvCache(uint32_t n_layer, uint32_t n_seq, uint32_t n_ctx, uint32_t n_head_kv,
                 uint32_t head_dim, KvType type)
    : n_layer_(n_layer),
      n_seq_(n_seq),
      n_ctx_(n_ctx),
      n_head_kv_(n_head_kv),
      head_dim_(head_dim),
      type_(type) {
  const uint64_t n = static_cast<uint64_t>(n_layer) * n_seq * n_ctx * n_embd_kv();
  if (type == KvType::F32) {
    kf_.assign(n, 0.0f);
    vf_.assign(n, 0.0f);
  } else {
    kh_.assign(n, 0);
    vh_.assign(n, 0);
  }
}

uint64_t KvCache::bytes_for(uint32_t n_layer, uint32_t n_seq, uint32_t n_ctx, uint32_t n_embd_kv,
                            KvType type) {
  return 2ull * n_layer * n_seq * n_ctx * n_embd_kv * (type == KvType::F32 ? 4 : 2);
}

uint64_t KvCache::bytes() const {
  return bytes_for(n_layer_, n_seq_, n_ctx_, n_embd_kv(), type_);
}

void KvCache::store(uint32_t layer, uint32_t seq, uint32_t pos, const float* k, const float* v) {
  write_rows(layer, seq, pos, pos + 1, k, v);
}

void KvCache::load_k(uint32_t layer, uint32_t seq, uint32_t pos, float* out) const {
  for (uint32_t h = 0; h < n_head_kv_; ++h) {
    const uint64_t at = index(layer, seq, h, pos);
    float* o = out + static_cast<uint64_t>(h) * head_dim_;
    if (type_ == KvType::F32)
      std::copy_n(kf_.data() + at, head_dim_, o);
    else
      fp16_to_fp32_n(kh_.data() + at, o, head_dim_);
  }
}

void KvCache::load_v(uint32_t layer, uint32_t seq, uint32_t pos, float* out) const {
  for (uint32_t h = 0; h < n_head_kv_; ++h) {
    const uint64_t at = index(layer, seq, h, pos);
    float* o = out + static_cast<uint64_t>(h) * head_dim_;
    if (type_ == KvType::F32)
      std::copy_n(vf_.data() + at, head_dim_, o);
    else
      fp16_to_fp32_n(vh_.data() + at, o, head_dim_);
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
  for (uint32_t p = p0; p < p1; ++p)
    for (uint32_t h = 0; h < n_head_kv_; ++h) {
      const uint64_t at = index(layer, seq, h, p);
      const uint64_t in = static_cast<uint64_t>(p - p0) * n_embd_kv() + uint64_t{h} * head_dim_;
      if (type_ == KvType::F32) {
        std::copy_n(k + in, head_dim_, kf_.data() + at);
        std::copy_n(v + in, head_dim_, vf_.data() + at);
      } else {
        fp32_to_fp16_n(k + in, kh_.data() + at, head_dim_);
        fp32_to_fp16_n(v + in, vh_.data() + at, head_dim_);
      }
    }
}

}  // namespace ls
