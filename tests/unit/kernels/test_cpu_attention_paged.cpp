// The CPU attention over a paged cache (kernels/kv_pages.h) against the same
// values in a contiguous cache: attention_cpu (every ISA variant this CPU
// runs, 1 and 3 threads: whole rows and split blocks, block lengths by rule
// and by tuning) and attention_ref_f32 must give the same bits both ways,
// since only the addresses differ, never the order of the sums. The pool's
// blocks are shuffled (KvBlockTable with a seed), sequences of different
// lengths share the batch (decode tokens and a prompt's rows), and every
// pool element no table entry covers, and every position past a sequence's
// end, is NaN: a read of one shows in the output. Layouts: head-major blocks
// with tiled keys (the CPU's KvCache) and without, and blocks of whole rows
// (the GPU's), blocks of 16 positions and of 4 (more runs than any real
// cache, up to 64 a block).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/attention_cpu.h"
#include "kernels/cpu/isa.h"
#include "kernels/half.h"
#include "kernels/ref/attention.h"
#include "runtime/thread_pool.h"
#include "tests/unit/sanitizer_subset.h"

using namespace ls;

namespace {

struct Shape {
  int n_seq, n_ctx, n_kv, hd, group;
  std::vector<int> len;  // positions each sequence has cached
  int shift;             // log2 of positions per block
  bool head_major;
  AttnKvType type;
  bool tiled = false;  // keys tiled (AttnKv::k_tiled), both ways: head-major, 16-position blocks
};

// Contiguous cache: (seq, head, pos, dim), head-major, as values and as the
// cache's type.
struct Both {
  std::vector<float> cf_k, cf_v, pf_k, pf_v;     // f32: contiguous, paged
  std::vector<uint16_t> ch_k, ch_v, ph_k, ph_v;  // f16
  std::vector<int32_t> table;
  int max_blocks = 0, n_blocks = 0;
  AttnKv contiguous, paged;
};

void build(const Shape& sh, std::mt19937& rng, Both& b) {
  const int64_t hd = sh.hd, n_ctx = sh.n_ctx, n_kv = sh.n_kv;
  const int64_t n = sh.n_seq * n_kv * n_ctx * hd;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::normal_distribution<float> nd;
  b.cf_k.assign(n, nan);
  b.cf_v.assign(n, nan);
  for (int s = 0; s < sh.n_seq; ++s)
    for (int64_t h = 0; h < n_kv; ++h)
      for (int p = 0; p < sh.len[s]; ++p)
        for (int64_t i = 0; i < hd; ++i) {
          const int64_t at = ((s * n_kv + h) * n_ctx + p) * hd + i;
          b.cf_k[at] = nd(rng);
          b.cf_v[at] = nd(rng);
          if (sh.type == AttnKvType::F16) {  // values exact in f16 both ways
            b.cf_k[at] = fp16_to_fp32(fp32_to_fp16(b.cf_k[at]));
            b.cf_v[at] = fp16_to_fp32(fp32_to_fp16(b.cf_v[at]));
          }
        }
  // The pool: 3 spare blocks beyond what the sequences take, shuffled.
  const int bl = 1 << sh.shift;
  b.max_blocks = (sh.n_ctx + bl - 1) / bl;
  int need = 0;
  for (int s = 0; s < sh.n_seq; ++s) need += (sh.len[s] + bl - 1) / bl;
  b.n_blocks = need + 3;
  std::vector<int32_t> ids(b.n_blocks);
  for (int i = 0; i < b.n_blocks; ++i) ids[i] = i;
  std::shuffle(ids.begin(), ids.end(), rng);
  b.table.assign(static_cast<size_t>(sh.n_seq) * b.max_blocks, -1);
  int next = 0;
  for (int s = 0; s < sh.n_seq; ++s)
    for (int k = 0; k * bl < sh.len[s]; ++k) b.table[s * b.max_blocks + k] = ids[next++];
  // Paged layout: head-major (block, head, pos, dim) or rows (block, pos, head, dim).
  const int64_t ld_pos = sh.head_major ? hd : n_kv * hd;
  const int64_t ld_head = sh.head_major ? bl * hd : hd;
  const int64_t ld_block = bl * n_kv * hd;
  b.pf_k.assign(b.n_blocks * ld_block, nan);
  b.pf_v.assign(b.n_blocks * ld_block, nan);
  for (int s = 0; s < sh.n_seq; ++s)
    for (int p = 0; p < sh.len[s]; ++p)
      for (int64_t h = 0; h < n_kv; ++h)
        for (int64_t i = 0; i < hd; ++i) {
          const int64_t blk = b.table[s * b.max_blocks + (p >> sh.shift)];
          const int64_t at = blk * ld_block + (p & (bl - 1)) * ld_pos + h * ld_head + i;
          const int64_t from = ((s * n_kv + h) * n_ctx + p) * hd + i;
          b.pf_k[at] = b.cf_k[from];
          b.pf_v[at] = b.cf_v[from];
        }
  // Tiled keys: each 16 positions of a head (a tile of the contiguous
  // head's run; a block of the pool) dims-major.
  if (sh.tiled) {
    REQUIRE((sh.head_major && sh.shift == 4 && n_ctx % kAttnKTile == 0));
    auto tile = [&](std::vector<float>& x, int64_t n_runs) {
      const std::vector<float> rows = x;
      for (int64_t r = 0; r < n_runs; ++r)  // a run: a head's 16 rows
        for (int64_t p = 0; p < kAttnKTile; ++p)
          for (int64_t i = 0; i < hd; ++i)
            x[(r * kAttnKTile * hd) + i * kAttnKTile + p] = rows[(r * kAttnKTile + p) * hd + i];
    };
    tile(b.cf_k, n / (kAttnKTile * hd));
    tile(b.pf_k, b.n_blocks * n_kv);
  }
  auto to_f16 = [](const std::vector<float>& x) {
    std::vector<uint16_t> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = fp32_to_fp16(x[i]);
    return y;
  };
  const bool f16 = sh.type == AttnKvType::F16;
  if (f16) {
    b.ch_k = to_f16(b.cf_k), b.ch_v = to_f16(b.cf_v);
    b.ph_k = to_f16(b.pf_k), b.ph_v = to_f16(b.pf_v);
  }
  AttnKv& c = b.contiguous;
  c.type = sh.type;
  c.k = f16 ? static_cast<const void*>(b.ch_k.data()) : b.cf_k.data();
  c.v = f16 ? static_cast<const void*>(b.ch_v.data()) : b.cf_v.data();
  c.ld_pos = hd;
  c.ld_head = n_ctx * hd;
  c.ld_seq = n_kv * n_ctx * hd;
  AttnKv& pg = b.paged;
  pg.type = sh.type;
  pg.k = f16 ? static_cast<const void*>(b.ph_k.data()) : b.pf_k.data();
  pg.v = f16 ? static_cast<const void*>(b.ph_v.data()) : b.pf_v.data();
  pg.ld_pos = ld_pos;
  pg.ld_head = sh.head_major ? ld_head : 0;
  pg.ld_block = ld_block;
  pg.pages.table = b.table.data();
  pg.pages.max_blocks = b.max_blocks;
  pg.pages.shift = sh.shift;
  c.k_tiled = pg.k_tiled = sh.tiled;
}

// The batch: each sequence's last position (decode), and sequence 0's last
// min(len, 70) positions as a prompt's rows.
void batch(const Shape& sh, std::vector<int32_t>& pos, std::vector<int32_t>& seq) {
  for (int s = 0; s < sh.n_seq; ++s) pos.push_back(sh.len[s] - 1), seq.push_back(s);
  for (int p = std::max(0, sh.len[0] - 70); p < sh.len[0]; ++p) pos.push_back(p), seq.push_back(0);
}

}  // namespace

TEST_CASE("cpu_attention paged: the same bits as over a contiguous cache, blocks shuffled") {
  std::mt19937 rng(2024);
  std::vector<Shape> shapes;
  for (AttnKvType type : {AttnKvType::F16, AttnKvType::F32}) {
    // Lengths: one block and a bit, a block exactly, one position, past 2k (256-position blocks).
    shapes.push_back({4, 2200, 2, 64, 4, {17, 16, 1, 2100}, 4, true, type});
    shapes.push_back({3, 300, 1, 128, 8, {300, 129, 33}, 4, false, type});
    shapes.push_back({2, 2100, 2, 32, 2, {2099, 250}, 2, true, type});  // 64 runs a block
    shapes.push_back({2, 100, 3, 40, 3, {99, 7}, 3, true, type});       // odd head_dim, group 3
    // Tiled keys (the KvCache's layout).
    shapes.push_back({4, 2208, 2, 64, 4, {17, 16, 1, 2100}, 4, true, type, true});
    shapes.push_back({2, 112, 3, 40, 3, {99, 7}, 4, true, type, true});
  }
  ThreadPool one(1), three(3);
  int compared = 0;
  for (const Shape& sh : shapes) {
    Both b;
    build(sh, rng, b);
    std::vector<int32_t> pos, seq;
    batch(sh, pos, seq);
    const int n_head = sh.n_kv * sh.group;
    const int64_t ld = int64_t{n_head} * sh.hd;
    std::normal_distribution<float> nd(0.0f, 2.0f);
    std::vector<float> q(pos.size() * ld);
    for (float& x : q) x = nd(rng);
    AttnArgs a;
    a.n_head = n_head;
    a.n_head_kv = sh.n_kv;
    a.head_dim = sh.hd;
    a.scale = 1.0f / std::sqrt(static_cast<float>(sh.hd));
    a.n_tok = static_cast<int64_t>(pos.size());
    a.pos = pos.data();
    a.seq = seq.data();
    a.q = q.data();
    a.ldq = a.ldo = ld;
    const std::string what = std::string(sh.type == AttnKvType::F16 ? "f16" : "f32") +
                             " head_dim " + std::to_string(sh.hd) + " block " +
                             std::to_string(1 << sh.shift) +
                             (sh.tiled        ? " tiled"
                              : sh.head_major ? " head-major"
                                              : " rows");
    auto run = [&](const AttnKv& kv, auto f) {
      std::vector<float> out(pos.size() * ld, std::numeric_limits<float>::quiet_NaN());
      AttnArgs x = a;
      x.kv = kv;
      x.out = out.data();
      f(x);
      return out;
    };
    auto same = [&](const std::vector<float>& c, const std::vector<float>& p,
                    const std::string& w) {
      bool finite = true;
      for (float x : p) finite = finite && std::isfinite(x);
      CHECK_MESSAGE(finite, what << ", " << w << ": a NaN read (or left) in the output");
      CHECK_MESSAGE(std::memcmp(c.data(), p.data(), c.size() * 4) == 0,
                    what << ", " << w << ": paged differs from contiguous");
      ++compared;
    };
    same(run(b.contiguous, [](const AttnArgs& x) { attention_ref_f32(x); }),
         run(b.paged, [](const AttnArgs& x) { attention_ref_f32(x); }), "attention_ref_f32");
    for (CpuIsa isa : {CpuIsa::Portable, CpuIsa::Avx2, CpuIsa::Avx512}) {
      if (!cpu_isa_supported(isa)) continue;
      for (ThreadPool* pool : {&one, &three})
        for (int blk : {0, 16, 48}) {
          // Under the sanitizers, 1 thread with the default block and 3
          // with the others: each split and block once (a third of the runs).
          if (test::sanitizer_subset() && (pool == &one) != (blk == 0)) continue;
          AttnCpuTuning tune;
          tune.block = blk;
          auto cpu = [&](const AttnArgs& x) {
            AttentionCpuScratch scratch;
            attention_cpu(*pool, x, scratch, isa, tune);
          };
          same(run(b.contiguous, cpu), run(b.paged, cpu),
               std::string(cpu_isa_name(isa)) + ", " + std::to_string(pool->size()) +
                   " threads, block " + std::to_string(blk));
        }
    }
  }
  MESSAGE(compared << " paged runs, each the same bits as its contiguous one");
}
