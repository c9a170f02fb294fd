#include "model/kv_cache.h"

namespace ls {

KvCache::KvCache(uint32_t n_layer, uint32_t n_seq, uint32_t n_ctx, uint32_t n_embd_kv, KvType type)
    : n_layer_(n_layer), n_seq_(n_seq), n_ctx_(n_ctx), n_embd_kv_(n_embd_kv), type_(type) {
  const uint64_t n = static_cast<uint64_t>(n_layer) * n_seq * n_ctx * n_embd_kv;
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
  return bytes_for(n_layer_, n_seq_, n_ctx_, n_embd_kv_, type_);
}

void KvCache::store(uint32_t layer, uint32_t seq, uint32_t pos, const float* k, const float* v) {
  const uint64_t at = index(layer, seq, pos);
  if (type_ == KvType::F32) {
    for (uint32_t i = 0; i < n_embd_kv_; ++i) {
      kf_[at + i] = k[i];
      vf_[at + i] = v[i];
    }
  } else {
    for (uint32_t i = 0; i < n_embd_kv_; ++i) {
      kh_[at + i] = fp32_to_fp16(k[i]);
      vh_[at + i] = fp32_to_fp16(v[i]);
    }
  }
}

void KvCache::load_k(uint32_t layer, uint32_t seq, uint32_t pos, float* out) const {
  const uint64_t at = index(layer, seq, pos);
  for (uint32_t i = 0; i < n_embd_kv_; ++i)
    out[i] = type_ == KvType::F32 ? kf_[at + i] : fp16_to_fp32(kh_[at + i]);
}

void KvCache::load_v(uint32_t layer, uint32_t seq, uint32_t pos, float* out) const {
  const uint64_t at = index(layer, seq, pos);
  for (uint32_t i = 0; i < n_embd_kv_; ++i)
    out[i] = type_ == KvType::F32 ? vf_[at + i] : fp16_to_fp32(vh_[at + i]);
}

void KvCache::read_rows(uint32_t layer, uint32_t seq, uint32_t p0, uint32_t p1, float* k,
                        float* v) const {
  const uint64_t at = index(layer, seq, p0), n = static_cast<uint64_t>(p1 - p0) * n_embd_kv_;
  for (uint64_t i = 0; i < n; ++i) {
    k[i] = type_ == KvType::F32 ? kf_[at + i] : fp16_to_fp32(kh_[at + i]);
    v[i] = type_ == KvType::F32 ? vf_[at + i] : fp16_to_fp32(vh_[at + i]);
  }
}

void KvCache::write_rows(uint32_t layer, uint32_t seq, uint32_t p0, uint32_t p1, const float* k,
                         const float* v) {
  const uint64_t at = index(layer, seq, p0), n = static_cast<uint64_t>(p1 - p0) * n_embd_kv_;
  for (uint64_t i = 0; i < n; ++i) {
    if (type_ == KvType::F32) {
      kf_[at + i] = k[i];
      vf_[at + i] = v[i];
    } else {
      kh_[at + i] = fp32_to_fp16(k[i]);
      vh_[at + i] = fp32_to_fp16(v[i]);
    }
  }
}

}  // namespace ls
