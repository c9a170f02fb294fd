// KvCache (model/kv_cache.h): rows in, the same rows out, whatever the
// layout; the head-major layout the attention kernels read through the
// direct pointers and strides.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "model/kv_cache.h"

using namespace ls;

namespace {

// A distinct value per (layer, seq, pos, element), exact in f16.
float value(uint32_t layer, uint32_t seq, uint32_t pos, uint32_t i, bool is_v) {
  return static_cast<float>((layer * 7 + seq * 5 + pos * 3 + i + (is_v ? 11 : 0)) % 1000) - 500;
}

}  // namespace

TEST_CASE("kv_cache: rows stored come back, and sit head-major behind the pointers") {
  const uint32_t n_layer = 2, n_seq = 3, n_ctx = 9, n_kv = 4, hd = 6, E = n_kv * hd;
  for (KvType type : {KvType::F16, KvType::F32}) {
    KvCache kv(n_layer, n_seq, n_ctx, n_kv, hd, type);
    CHECK(kv.n_embd_kv() == E);
    CHECK(kv.bytes() == KvCache::bytes_for(n_layer, n_seq, n_ctx, E, type));
    std::vector<float> k(E), v(E);
    for (uint32_t l = 0; l < n_layer; ++l)
      for (uint32_t s = 0; s < n_seq; ++s)
        for (uint32_t p = 0; p < n_ctx; ++p) {
          for (uint32_t i = 0; i < E; ++i)
            k[i] = value(l, s, p, i, false), v[i] = value(l, s, p, i, true);
          kv.store(l, s, p, k.data(), v.data());
        }
    int64_t bad = 0;
    std::vector<float> rk(E), rv(E);
    for (uint32_t l = 0; l < n_layer; ++l)
      for (uint32_t s = 0; s < n_seq; ++s)
        for (uint32_t p = 0; p < n_ctx; ++p) {
          kv.load_k(l, s, p, rk.data());
          kv.load_v(l, s, p, rv.data());
          for (uint32_t i = 0; i < E; ++i) {
            bad += rk[i] != value(l, s, p, i, false) || rv[i] != value(l, s, p, i, true);
            // In place: head h = i / hd, element i % hd of it.
            const int64_t at = s * kv.ld_seq() + (i / hd) * kv.ld_head() + p * kv.ld_pos() + i % hd;
            const float ik = type == KvType::F16 ? fp16_to_fp32(kv.k_f16(l)[at]) : kv.k_f32(l)[at];
            const float iv = type == KvType::F16 ? fp16_to_fp32(kv.v_f16(l)[at]) : kv.v_f32(l)[at];
            bad += ik != value(l, s, p, i, false) || iv != value(l, s, p, i, true);
          }
        }
    CHECK(bad == 0);
    // Each head's positions are contiguous.
    CHECK(kv.ld_pos() == hd);
    CHECK(kv.ld_head() == int64_t{n_ctx} * hd);
    CHECK(kv.ld_seq() == int64_t{n_kv} * n_ctx * hd);

    // read_rows / write_rows: a run of rows out of one layer into another
    // sequence, and back out the same.
    std::vector<float> rows_k(4 * E), rows_v(4 * E), back_k(4 * E), back_v(4 * E);
    kv.read_rows(1, 2, 3, 7, rows_k.data(), rows_v.data());
    for (uint32_t p = 3; p < 7; ++p)
      for (uint32_t i = 0; i < E; ++i) {
        bad += rows_k[(p - 3) * E + i] != value(1, 2, p, i, false);
        bad += rows_v[(p - 3) * E + i] != value(1, 2, p, i, true);
      }
    kv.write_rows(0, 0, 5, 9, rows_k.data(), rows_v.data());
    kv.read_rows(0, 0, 5, 9, back_k.data(), back_v.data());
    CHECK(back_k == rows_k);
    CHECK(back_v == rows_v);
    // Neighbours untouched: position 4 of (0, 0), and sequence 1.
    kv.load_k(0, 0, 4, rk.data());
    kv.load_k(0, 1, 5, rv.data());
    for (uint32_t i = 0; i < E; ++i)
      bad += rk[i] != value(0, 0, 4, i, false) || rv[i] != value(0, 1, 5, i, false);
    CHECK(bad == 0);
  }
}
