// KvCache (model/kv_cache.h): rows in, the same rows out, whatever the
// layout; the paged, head-major layout the attention kernels read through
// the direct pointers, the strides and the block table (keys tiled:
// kernels/ref/attention.h), and the view the kernels take (KvCache::attn).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "model/kv_blocks.h"
#include "model/kv_cache.h"

using namespace ls;

namespace {

// A distinct value per (layer, seq, pos, element), exact in f16.
float value(uint32_t layer, uint32_t seq, uint32_t pos, uint32_t i, bool is_v) {
  return static_cast<float>((layer * 7 + seq * 5 + pos * 3 + i + (is_v ? 11 : 0)) % 1000) - 500;
}

// Every position of every slot stored, then checked through load_k/load_v
// and in place behind the pointers (block from the table, head-major inside).
int64_t store_and_check(KvCache& kv, uint32_t n_layer, const std::vector<uint32_t>& n_pos) {
  const uint32_t E = kv.n_embd_kv(), hd = kv.head_dim();
  std::vector<float> k(E), v(E), rk(E), rv(E);
  for (uint32_t l = 0; l < n_layer; ++l)
    for (uint32_t s = 0; s < n_pos.size(); ++s)
      for (uint32_t p = 0; p < n_pos[s]; ++p) {
        for (uint32_t i = 0; i < E; ++i)
          k[i] = value(l, s, p, i, false), v[i] = value(l, s, p, i, true);
        kv.store(l, s, p, k.data(), v.data());
      }
  int64_t bad = 0;
  for (uint32_t l = 0; l < n_layer; ++l)
    for (uint32_t s = 0; s < n_pos.size(); ++s)
      for (uint32_t p = 0; p < n_pos[s]; ++p) {
        kv.load_k(l, s, p, rk.data());
        kv.load_v(l, s, p, rv.data());
        const int32_t block = kv.table()[s * kv.max_blocks() + p / kKvBlockLen];
        for (uint32_t i = 0; i < E; ++i) {
          bad += rk[i] != value(l, s, p, i, false) || rv[i] != value(l, s, p, i, true);
          // In place: head h = i / hd, element i % hd of it; keys tiled
          // (dims-major within the block's head), values in rows.
          const int64_t head = block * kv.ld_block() + (i / hd) * kv.ld_head();
          const int64_t at = head + (p % kKvBlockLen) * kv.ld_pos() + i % hd;
          const int64_t kat = head + (i % hd) * kAttnKTile + p % kKvBlockLen;
          const bool f16 = kv.type() == KvType::F16;
          const float ik = f16 ? fp16_to_fp32(kv.k_f16(l)[kat]) : kv.k_f32(l)[kat];
          const float iv = f16 ? fp16_to_fp32(kv.v_f16(l)[at]) : kv.v_f32(l)[at];
          bad += ik != value(l, s, p, i, false) || iv != value(l, s, p, i, true);
          // The kernels' view finds the same elements.
          const AttnKv view = kv.attn(l);
          bad += !view.k_tiled || view.k_elem(s, p, i / hd, hd, i % hd) != kat ||
                 view.at(s, p) + (i / hd) * view.head_stride(hd) + i % hd != at;
        }
      }
  return bad;
}

}  // namespace

TEST_CASE("kv_cache: rows stored come back, and sit paged and head-major behind the pointers") {
  const uint32_t n_layer = 2, n_seq = 3, n_ctx = 37, n_kv = 4, hd = 6, E = n_kv * hd;
  for (KvType type : {KvType::F16, KvType::F32}) {
    KvCache kv(n_layer, n_seq, n_ctx, n_kv, hd, type);
    CHECK(kv.n_embd_kv() == E);
    // The default pool: n_ctx positions for every slot (3 blocks of 16 each).
    CHECK(kv.max_blocks() == 3);
    CHECK(kv.n_blocks() == n_seq * 3);
    CHECK(kv.bytes() == KvCache::bytes_for(n_layer, n_seq * 3, E, type));
    CHECK(kv.bytes() == 2ull * n_layer * n_seq * 48 * E * (type == KvType::F32 ? 4 : 2));
    // Each head's 16 positions of a block are contiguous.
    CHECK(kv.ld_pos() == hd);
    CHECK(kv.ld_head() == int64_t{kKvBlockLen} * hd);
    CHECK(kv.ld_block() == int64_t{n_kv} * kKvBlockLen * hd);
    // With no table set, slot s holds blocks s*3, s*3+1, s*3+2.
    for (uint32_t s = 0; s < n_seq; ++s)
      for (uint32_t b = 0; b < 3; ++b)
        CHECK(kv.table()[s * 3 + b] == static_cast<int32_t>(s * 3 + b));
    CHECK(kv.holds(2, 0, n_ctx));
    CHECK_FALSE(kv.holds(2, 0, n_ctx + 1));
    CHECK(store_and_check(kv, n_layer, {n_ctx, n_ctx, n_ctx}) == 0);

    // read_rows / write_rows: a run of rows out of one layer into another
    // sequence, across a block boundary, and back out the same.
    int64_t bad = 0;
    std::vector<float> rows_k(5 * E), rows_v(5 * E), back_k(5 * E), back_v(5 * E), rk(E), rv(E);
    kv.read_rows(1, 2, 13, 18, rows_k.data(), rows_v.data());
    for (uint32_t p = 13; p < 18; ++p)
      for (uint32_t i = 0; i < E; ++i) {
        bad += rows_k[(p - 13) * E + i] != value(1, 2, p, i, false);
        bad += rows_v[(p - 13) * E + i] != value(1, 2, p, i, true);
      }
    kv.write_rows(0, 0, 30, 35, rows_k.data(), rows_v.data());
    kv.read_rows(0, 0, 30, 35, back_k.data(), back_v.data());
    CHECK(back_k == rows_k);
    CHECK(back_v == rows_v);
    // Neighbours untouched: position 29 of (0, 0), and sequence 1.
    kv.load_k(0, 0, 29, rk.data());
    kv.load_k(0, 1, 30, rv.data());
    for (uint32_t i = 0; i < E; ++i)
      bad += rk[i] != value(0, 0, 29, i, false) || rv[i] != value(0, 1, 30, i, false);
    CHECK(bad == 0);
  }
}

TEST_CASE("kv_cache: a small pool, blocks shuffled by a table, slots of different lengths") {
  const uint32_t n_layer = 3, n_seq = 4, n_ctx = 100, n_kv = 2, hd = 8;
  for (KvType type : {KvType::F16, KvType::F32}) {
    // 11 blocks: fewer than one slot's 7 blocks of n_ctx beside the others'.
    KvCache kv(n_layer, n_seq, n_ctx, n_kv, hd, type, 11);
    CHECK(kv.n_blocks() == 11);
    CHECK(kv.bytes() == KvCache::bytes_for(n_layer, 11, n_kv * hd, type));
    // A smaller pool than n_seq x n_ctx starts with no block in any slot.
    CHECK(std::all_of(kv.table().begin(), kv.table().end(), [](int32_t b) { return b == -1; }));
    CHECK_FALSE(kv.holds(0, 0, 1));
    // The sampler's table: slots of 33, 0, 50 and 20 positions (3 + 0 + 4 +
    // 2 = 9 blocks), the pool's blocks in a shuffled order.
    KvBlockTable t(n_seq, n_ctx, 11, 12345);
    const std::vector<uint32_t> n_pos = {33, 0, 50, 20};
    for (uint32_t s = 0; s < n_seq; ++s) REQUIRE(t.reserve(s, n_pos[s]));
    REQUIRE(kv.set_table(t.table()).ok());
    CHECK(kv.holds(2, 0, 50));
    CHECK(kv.holds(2, 48, 64));  // the block of 48..63 is held: 50 rounds up to it
    CHECK_FALSE(kv.holds(2, 0, 65));
    CHECK_FALSE(kv.holds(1, 0, 1));
    CHECK(store_and_check(kv, n_layer, n_pos) == 0);
    // Bad tables are refused, naming the entry, and change nothing.
    std::vector<int32_t> bad = t.table();
    bad[5] = 11;
    auto st = kv.set_table(bad);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message.find("the pool has 11 blocks") != std::string::npos);
    CHECK(kv.table() == t.table());
    CHECK_FALSE(kv.set_table(std::vector<int32_t>(3, -1)).ok());
  }
}
