// GPU tests of the paged key/value cache's kernels (kernels/kv_pages.h)
// through a block table against the same kernels over the contiguous cache
// they replaced:
//   kv_store   each row lands in the pool row the table gives; rows no entry
//              names keep their poison.
//   attention  the scalar kernel (decode splits, several sequences of
//              different lengths, f16 and f32, blocks of 16 and of 4) and the
//              tensor-core prefill kernel (64-position key tiles over 4
//              blocks of 16; prompts sharing a tile; random entries): the
//              same bits as over the contiguous cache, the pool's blocks
//              shuffled, every row that no table entry covers and every
//              position past a sequence's cached end NaN (a read of one
//              shows). Only addresses differ, never the arithmetic.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention.cuh"
#include "kernels/attention_prefill.cuh"
#include "kernels/half.h"
#include "kernels/kv_store.cuh"
#include "tests/gpu/gpu_test_util.h"

using namespace ls;
using namespace ls::gpu_test;

namespace {

// A table for sequences of len[s] cached positions: blocks of 2^shift
// positions from a pool with `spare` blocks besides, in a shuffled order.
struct Table {
  int32_t shift = kKvBlockShift, max_blocks = 0, n_blocks = 0, n_ctx = 0;
  std::vector<int32_t> t;  // (n_seq, max_blocks)
  int64_t row(int32_t s, int32_t p) const {
    return (int64_t{t[s * max_blocks + (p >> shift)]} << shift) + (p & ((1 << shift) - 1));
  }
};

Table make_table(const std::vector<int32_t>& len, int32_t n_ctx, int32_t shift, int spare,
                 std::mt19937& rng) {
  Table tb;
  tb.shift = shift;
  tb.n_ctx = n_ctx;
  const int32_t bl = 1 << shift;
  tb.max_blocks = (n_ctx + bl - 1) / bl;
  int need = 0;
  for (int32_t l : len) need += (l + bl - 1) / bl;
  tb.n_blocks = need + spare;
  std::vector<int32_t> ids(tb.n_blocks);
  for (int i = 0; i < tb.n_blocks; ++i) ids[i] = i;
  std::shuffle(ids.begin(), ids.end(), rng);
  tb.t.assign(len.size() * tb.max_blocks, -1);
  int next = 0;
  for (size_t s = 0; s < len.size(); ++s)
    for (int k = 0; k * bl < len[s]; ++k) tb.t[s * tb.max_blocks + k] = ids[next++];
  return tb;
}

// The contiguous cache's rows (n_seq, n_ctx, kv) moved to the pool's rows;
// every other pool row `poison`.
template <typename T>
std::vector<T> to_pool(const std::vector<T>& cont, const Table& tb, const std::vector<int32_t>& len,
                       int32_t kv, T poison) {
  std::vector<T> pool((static_cast<size_t>(tb.n_blocks) << tb.shift) * kv, poison);
  for (size_t s = 0; s < len.size(); ++s)
    for (int32_t p = 0; p < len[s]; ++p)
      std::memcpy(&pool[tb.row(static_cast<int32_t>(s), p) * kv],
                  &cont[(s * tb.n_ctx + p) * static_cast<size_t>(kv)], kv * sizeof(T));
  return pool;
}

KvPages pages_of(const Table& tb, const int32_t* dev) {
  KvPages pg;
  pg.table = dev;
  pg.max_blocks = tb.max_blocks;
  pg.shift = tb.shift;
  return pg;
}

}  // namespace

TEST_CASE("cuda kv paged: kv store writes each row where the block table says") {
  LS_GPU_TEST_GUARD();
  std::mt19937 rng(17);
  const int32_t n_ctx = 50, kv = 96;
  const std::vector<int32_t> len = {50, 20, 33};  // positions each slot holds blocks for
  const Table tb = make_table(len, n_ctx, kKvBlockShift, 2, rng);
  std::vector<int32_t> pos = {0, 49, 15, 16, 19, 32, 17}, seq = {0, 0, 1, 1, 1, 2, 2};
  const int64_t n_tok = static_cast<int64_t>(pos.size());
  auto k = rand_floats(rng, n_tok * kv, -5, 5), v = rand_floats(rng, n_tok * kv, -5, 5);
  DevBuf<float> dk(k), dv(v);
  DevBuf<int32_t> dpos(pos), dseq(seq), dtab(tb.t);
  const size_t rows = static_cast<size_t>(tb.n_blocks) * kKvBlockLen;
  for (bool f32 : {false, true}) {
    CAPTURE(f32);
    DevBuf<uint16_t> kh(rows * kv), vh(rows * kv);
    DevBuf<float> kf(rows * kv), vf(rows * kv);
    kh.poison(), vh.poison(), kf.poison(), vf.poison();
    KvStoreParams p;
    p.k = dk.p;
    p.v = dv.p;
    p.pos = dpos.p;
    p.seq = dseq.p;
    p.k_cache = f32 ? static_cast<void*>(kf.p) : kh.p;
    p.v_cache = f32 ? static_cast<void*>(vf.p) : vh.p;
    p.pages = pages_of(tb, dtab.p);
    p.f32 = f32;
    p.n_tok = n_tok;
    p.n_embd_kv = kv;
    p.n_ctx = n_ctx;
    REQUIRE(kv_store_cuda(p, nullptr).ok());
    std::vector<uint8_t> written(rows, 0);
    int64_t bad = 0;
    if (f32) {
      auto gk = kf.download(), gv = vf.download();
      for (int64_t t = 0; t < n_tok; ++t) {
        const int64_t r = tb.row(seq[t], pos[t]);
        written[r] = 1;
        bad += std::memcmp(&gk[r * kv], &k[t * kv], kv * 4) != 0;
        bad += std::memcmp(&gv[r * kv], &v[t * kv], kv * 4) != 0;
      }
      for (size_t r = 0; r < rows; ++r)
        if (!written[r]) bad += !std::isnan(gk[r * kv]) || !std::isnan(gv[r * kv + kv - 1]);
    } else {
      auto gk = kh.download(), gv = vh.download();
      for (int64_t t = 0; t < n_tok; ++t) {
        const int64_t r = tb.row(seq[t], pos[t]);
        written[r] = 1;
        for (int32_t i = 0; i < kv; ++i) {
          bad += gk[r * kv + i] != fp32_to_fp16(k[t * kv + i]);
          bad += gv[r * kv + i] != fp32_to_fp16(v[t * kv + i]);
        }
      }
      for (size_t r = 0; r < rows; ++r)
        if (!written[r]) bad += gk[r * kv] != 0xFFFF || gv[r * kv + kv - 1] != 0xFFFF;
    }
    CHECK(bad == 0);
  }
}

TEST_CASE(
    "cuda kv paged: scalar attention through the table equals the contiguous cache, bit for bit") {
  LS_GPU_TEST_GUARD();
  std::mt19937 rng(23);
  struct Case {
    const char* what;
    int32_t n_head, n_head_kv, hd, n_ctx, shift;
    std::vector<int32_t> pos, seq;
  };
  std::vector<Case> cases;
  cases.push_back({"decode 1 token at 2999 (splits)", 8, 2, 64, 3000, 4, {2999}, {0}});
  cases.push_back({"decode 4 sequences of different lengths",
                   4,
                   4,
                   128,
                   1200,
                   4,
                   {1100, 5, 700, 16},
                   {0, 1, 2, 3}});
  cases.push_back(
      {"decode blocks of 4 positions, head_dim 256", 2, 1, 256, 300, 2, {0, 299}, {0, 1}});
  {
    Case c{"prefill-shaped 40 tokens beside 2 decoders", 8, 2, 64, 128, 4, {}, {}};
    for (int i = 0; i < 40; ++i) c.pos.push_back(60 + i), c.seq.push_back(1);
    c.pos.push_back(127), c.seq.push_back(0);
    c.pos.push_back(3), c.seq.push_back(2);
    cases.push_back(c);
  }
  for (const Case& cs : cases) {
    CAPTURE(cs.what);
    const int32_t n_seq = *std::max_element(cs.seq.begin(), cs.seq.end()) + 1;
    std::vector<int32_t> len(n_seq, 0);
    for (size_t t = 0; t < cs.pos.size(); ++t)
      len[cs.seq[t]] = std::max(len[cs.seq[t]], cs.pos[t] + 1);
    const int64_t n_tok = static_cast<int64_t>(cs.pos.size());
    const int32_t kv = cs.n_head_kv * cs.hd;
    const size_t cache_n = static_cast<size_t>(n_seq) * cs.n_ctx * kv;
    // Contiguous values; NaN past each sequence's end.
    std::vector<float> kc32(cache_n, NAN), vc32(cache_n, NAN);
    std::normal_distribution<float> nd;
    for (int32_t s = 0; s < n_seq; ++s)
      for (int64_t i = 0; i < int64_t{len[s]} * kv; ++i) {
        const size_t at = static_cast<size_t>(s) * cs.n_ctx * kv + i;
        kc32[at] = fp16_to_fp32(fp32_to_fp16(nd(rng)));
        vc32[at] = fp16_to_fp32(fp32_to_fp16(nd(rng)));
      }
    std::vector<uint16_t> kc16(cache_n), vc16(cache_n);
    for (size_t i = 0; i < cache_n; ++i)
      kc16[i] = fp32_to_fp16(kc32[i]), vc16[i] = fp32_to_fp16(vc32[i]);
    const Table tb = make_table(len, cs.n_ctx, cs.shift, 3, rng);
    auto q = rand_floats(rng, n_tok * cs.n_head * cs.hd, -2, 2);
    DevBuf<float> dq(q), dout(n_tok * cs.n_head * cs.hd);
    DevBuf<int32_t> dpos(cs.pos), dseq(cs.seq), dtab(tb.t);
    const int32_t max_pos = *std::max_element(cs.pos.begin(), cs.pos.end());
    for (bool f32 : {false, true}) {
      CAPTURE(f32);
      std::vector<float> pk32, pv32;
      std::vector<uint16_t> pk16, pv16;
      if (f32) {
        pk32 = to_pool(kc32, tb, len, kv, NAN), pv32 = to_pool(vc32, tb, len, kv, NAN);
      } else {
        pk16 = to_pool(kc16, tb, len, kv, uint16_t{0xFFFF});
        pv16 = to_pool(vc16, tb, len, kv, uint16_t{0xFFFF});
      }
      DevBuf<float> ck32(kc32), cv32(vc32), gk32(f32 ? pk32 : std::vector<float>(1)),
          gv32(f32 ? pv32 : std::vector<float>(1));
      DevBuf<uint16_t> ck16(kc16), cv16(vc16), gk16(f32 ? std::vector<uint16_t>(1) : pk16),
          gv16(f32 ? std::vector<uint16_t>(1) : pv16);
      AttentionParams p;
      p.q = dq.p;
      p.pos = dpos.p;
      p.seq = dseq.p;
      p.out = dout.p;
      p.n_tok = n_tok;
      p.n_head = cs.n_head;
      p.n_head_kv = cs.n_head_kv;
      p.head_dim = cs.hd;
      p.n_ctx = cs.n_ctx;
      p.kv_f32 = f32;
      p.scale = 1.0f / std::sqrt(static_cast<float>(cs.hd));
      p.n_split = attention_splits(n_tok, cs.n_head, max_pos);
      p.scalar_only = true;
      DevBuf<float> part(
          std::max<int64_t>(1, attention_partial_floats(n_tok, cs.n_head, cs.hd, p.n_split)));
      p.partial = part.p;
      // pa over the contiguous cache, then over the pool through the table:
      // the same bits, all finite; returns the paged output.
      auto contiguous_then_paged = [&](AttentionParams pa) {
        pa.k_cache = f32 ? static_cast<void*>(ck32.p) : ck16.p;
        pa.v_cache = f32 ? static_cast<void*>(cv32.p) : cv16.p;
        pa.pages = KvPages{};
        dout.poison();
        REQUIRE(attention_cuda(pa, nullptr).ok());
        const auto want = dout.download();
        pa.k_cache = f32 ? static_cast<void*>(gk32.p) : gk16.p;
        pa.v_cache = f32 ? static_cast<void*>(gv32.p) : gv16.p;
        pa.pages = pages_of(tb, dtab.p);
        dout.poison();
        REQUIRE(attention_cuda(pa, nullptr).ok());
        const auto got = dout.download();
        CHECK(std::all_of(got.begin(), got.end(), [](float x) { return std::isfinite(x); }));
        CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
        return got;
      };
      const auto got = contiguous_then_paged(p);
      MESSAGE(cs.what << (f32 ? " f32" : " f16") << ": splits " << p.n_split << ", max|out| "
                      << max_abs(got));
      // The tensor-core decode kernel (an f16 cache, head_dim 64 or 128) at
      // 2 and 16 splits, its lookups through L2 or its split's table entries
      // in shared memory (tc_table): the contiguous cache's bits each time.
      if (!f32 && (cs.hd == 64 || cs.hd == 128))
        for (int32_t ns : {2, 16})
          for (int32_t table : {0, 1}) {
            CAPTURE(ns);
            CAPTURE(table);
            AttentionParams pt = p;
            pt.tc = 1;
            pt.tc_table = table;
            pt.chunk = 0;
            pt.n_split = ns;
            DevBuf<float> partt(attention_partial_floats(n_tok, cs.n_head, cs.hd, ns));
            pt.partial = partt.p;
            contiguous_then_paged(pt);
          }
    }
  }
}

TEST_CASE(
    "cuda kv paged: tensor-core prefill through the table equals the contiguous cache, bit for "
    "bit") {
  LS_GPU_TEST_GUARD();
  std::mt19937 rng(29);
  struct Case {
    const char* what;
    int32_t n_head, n_head_kv, hd, n_ctx;
    std::vector<int32_t> pos, seq;
  };
  auto prompt = [](Case& c, int32_t s, int32_t from, int32_t n) {
    for (int32_t i = 0; i < n; ++i) c.pos.push_back(from + i), c.seq.push_back(s);
  };
  std::vector<Case> cases;
  {
    Case c{"200 tokens, hd 128, GQA 4", 16, 4, 128, 256, {}, {}};
    prompt(c, 0, 0, 200);
    cases.push_back(c);
  }
  {
    Case c{"77 tokens continuing at 300, hd 64", 8, 8, 64, 400, {}, {}};
    prompt(c, 0, 300, 77);
    cases.push_back(c);
  }
  {
    Case c{"two prompts sharing a tile, hd 128, GQA 8", 16, 2, 128, 256, {}, {}};
    prompt(c, 2, 0, 120);
    prompt(c, 0, 50, 80);
    cases.push_back(c);
  }
  {
    Case c{"130 random entries of 3 sequences, hd 64", 8, 2, 64, 700, {}, {}};
    std::uniform_int_distribution<int32_t> ds(0, 2), dp(0, 699);
    for (int i = 0; i < 130; ++i) c.seq.push_back(ds(rng)), c.pos.push_back(dp(rng));
    cases.push_back(c);
  }
  for (const Case& cs : cases) {
    CAPTURE(cs.what);
    const int32_t n_seq = *std::max_element(cs.seq.begin(), cs.seq.end()) + 1;
    std::vector<int32_t> len(n_seq, 0);
    for (size_t t = 0; t < cs.pos.size(); ++t)
      len[cs.seq[t]] = std::max(len[cs.seq[t]], cs.pos[t] + 1);
    const int64_t n_tok = static_cast<int64_t>(cs.pos.size());
    const int32_t kv = cs.n_head_kv * cs.hd;
    const size_t cache_n = static_cast<size_t>(n_seq) * cs.n_ctx * kv;
    std::vector<uint16_t> kc(cache_n, 0xFFFF), vc(cache_n, 0xFFFF);
    std::normal_distribution<float> nd;
    for (int32_t s = 0; s < n_seq; ++s)
      for (int64_t i = 0; i < int64_t{len[s]} * kv; ++i) {
        const size_t at = static_cast<size_t>(s) * cs.n_ctx * kv + i;
        kc[at] = fp32_to_fp16(nd(rng));
        vc[at] = fp32_to_fp16(nd(rng));
      }
    const Table tb = make_table(len, cs.n_ctx, kKvBlockShift, 4, rng);
    auto pk = to_pool(kc, tb, len, kv, uint16_t{0xFFFF}),
         pv = to_pool(vc, tb, len, kv, uint16_t{0xFFFF});
    auto q = rand_floats(rng, n_tok * cs.n_head * cs.hd, -2, 2);
    DevBuf<float> dq(q), dout(n_tok * cs.n_head * cs.hd);
    DevBuf<uint16_t> ck(kc), cv(vc), gk(pk), gv(pv);
    DevBuf<int32_t> dpos(cs.pos), dseq(cs.seq), dtab(tb.t);
    AttentionParams p;
    p.q = dq.p;
    p.pos = dpos.p;
    p.seq = dseq.p;
    p.out = dout.p;
    p.n_tok = n_tok;
    p.n_head = cs.n_head;
    p.n_head_kv = cs.n_head_kv;
    p.head_dim = cs.hd;
    p.n_ctx = cs.n_ctx;
    p.scale = 1.0f / std::sqrt(static_cast<float>(cs.hd));
    p.k_cache = ck.p;
    p.v_cache = cv.p;
    REQUIRE(attention_prefill_supported(p));
    dout.poison();
    REQUIRE(attention_prefill_f16kv_cuda(p, nullptr).ok());
    const auto want = dout.download();
    p.k_cache = gk.p;
    p.v_cache = gv.p;
    p.pages = pages_of(tb, dtab.p);
    dout.poison();
    REQUIRE(attention_prefill_f16kv_cuda(p, nullptr).ok());
    const auto got = dout.download();
    CHECK(std::all_of(got.begin(), got.end(), [](float x) { return std::isfinite(x); }));
    CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
    // attention_cuda dispatches the same kernel for these batches.
    dout.poison();
    p.n_split = 1;
    REQUIRE(attention_cuda(p, nullptr).ok());
    const auto got2 = dout.download();
    CHECK(std::memcmp(got2.data(), want.data(), got2.size() * sizeof(float)) == 0);
  }
}
