// Tests of the CPU tier's attention (kernels/cpu/attention_cpu.h) against a
// float64 reference computed here from the same cache values (f16 ones
// decoded exactly): every ISA variant this CPU runs (each forced in turn),
// f16 and f32 caches, GQA groups 1, 4, 8 (and 3, 64), head_dim 64 and 128
// (and 40, 6: the fallbacks), key rows and tiled keys (AttnKv::k_tiled: the
// KvCache's layout, another scores loop), contexts 1, 7, 33, 129 (one past a block) up
// to 1000 and 4096, single tokens, mixed batches (several sequences and
// positions) and prefill-shaped batches (positions p0..p0+n-1 of one
// sequence, each causal). Outputs are poisoned with NaN first and their row
// padding must keep its sentinel; results must be the same bits for 1, 3
// and 16 threads and whether a token runs alone or in a batch.
//
// Tolerance, per output value i of a (token, head), with u = 2^-24, S_i =
// Σ_p w_p |v_p,i| (w the f64 softmax weights) and A = max_p scale·Σ_d
// |q_d k_p,d|:
//     |o_i - ref_i| <= (2·(head_dim + 2)·A + 2·L + 3·nb + 16) · u · S_i
// A score is an f32 dot product of head_dim terms (any order: error <=
// (head_dim + 2)·u·A with the scale); an error δ in the scores moves each
// weight by a factor within e^(±2δ). L terms per f32 chain in the sums over
// positions (the block length for the kernel: one block per chain; the whole
// context for attention_ref_f32), nb block merges of a few roundings each,
// and 16 ulp for the SIMD exp (a few ulp, attention_cpu_exp.h) and the
// final division. First order in u, which is far below any term here. The
// largest ratio error/bound seen is printed.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
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

constexpr float kSentinel = 12345.0f;  // row padding of out: must survive

// Said once per run: the variants this CPU cannot run are skipped.
const std::vector<CpuIsa>& supported_isas() {
  static const std::vector<CpuIsa> v = [] {
    std::vector<CpuIsa> r;
    for (CpuIsa i : {CpuIsa::Portable, CpuIsa::Avx2, CpuIsa::Avx512}) {
      if (cpu_isa_supported(i))
        r.push_back(i);
      else
        MESSAGE("SKIPPED: " << std::string(cpu_isa_name(i)) << " (not on this CPU)");
    }
    return r;
  }();
  return v;
}

// A cache of n_seq sequences × n_ctx positions × n_kv heads, random normal
// values (rounded to f16 for an f16 cache), in one of two layouts, each with
// unused padding so no stride is the packed width:
//   rows (the default):  a position's row holds its n_kv heads, plus `pad`;
//   head_major:          a head's positions are contiguous (ld_pos = hd), a
//                        head's run of n_ctx positions plus `pad`;
//   tiled:               head-major with tiled keys (AttnKv::k_tiled, the
//                        KvCache's layout): the kernels read kt/kht, whose
//                        tiles hold kf/kh's rows dims-major (n_ctx a
//                        multiple of kAttnKTile).
struct Cache {
  int n_seq, n_ctx, n_kv, hd, pad;
  AttnKvType type;
  bool head_major = false, tiled = false;
  std::vector<float> kf, vf;     // f32 cache, or the decoded f16 values
  std::vector<uint16_t> kh, vh;  // f16 cache
  std::vector<float> kt;         // tiled: kf's keys as the kernels read them
  std::vector<uint16_t> kht;     // tiled: kh's
  int64_t ld_pos() const { return head_major ? hd : int64_t{n_kv} * hd + pad; }
  int64_t ld_head() const { return head_major ? int64_t{n_ctx} * hd + pad : hd; }
  int64_t ld_seq() const { return head_major ? n_kv * ld_head() : n_ctx * ld_pos(); }
  AttnKv view() const {
    AttnKv kv;
    kv.type = type;
    kv.k = type == AttnKvType::F16 ? static_cast<const void*>(tiled ? kht.data() : kh.data())
                                   : (tiled ? kt.data() : kf.data());
    kv.k_tiled = tiled;
    kv.v = type == AttnKvType::F16 ? static_cast<const void*>(vh.data()) : vf.data();
    kv.ld_pos = ld_pos();
    kv.ld_seq = ld_seq();
    if (head_major) kv.ld_head = ld_head();
    return kv;
  }
  // The value the kernels read at element i, as f64.
  double k(int64_t i) const { return kf[i]; }
  double v(int64_t i) const { return vf[i]; }
};

Cache make_cache(int n_seq, int n_ctx, int n_kv, int hd, AttnKvType type, std::mt19937& rng,
                 bool head_major = false, bool tiled = false) {
  Cache c{n_seq, n_ctx, n_kv, hd, 8, type, head_major || tiled, tiled, {}, {}, {}, {}, {}, {}};
  const size_t n = static_cast<size_t>(n_seq * c.ld_seq());
  std::normal_distribution<float> nd;
  c.kf.resize(n);
  c.vf.resize(n);
  for (size_t i = 0; i < n; ++i) c.kf[i] = nd(rng), c.vf[i] = nd(rng);
  if (type == AttnKvType::F16) {
    c.kh.resize(n);
    c.vh.resize(n);
    for (size_t i = 0; i < n; ++i) {
      c.kh[i] = fp32_to_fp16(c.kf[i]), c.kf[i] = fp16_to_fp32(c.kh[i]);
      c.vh[i] = fp32_to_fp16(c.vf[i]), c.vf[i] = fp16_to_fp32(c.vh[i]);
    }
  }
  if (tiled) {  // each head's tiles of 16 rows, dims-major; the padding as is
    REQUIRE(n_ctx % kAttnKTile == 0);
    c.kt = c.kf, c.kht = c.kh;
    for (int64_t s = 0; s < n_seq; ++s)
      for (int64_t h = 0; h < n_kv; ++h)
        for (int64_t p = 0; p < n_ctx; ++p)
          for (int64_t d = 0; d < hd; ++d) {
            const int64_t head = s * c.ld_seq() + h * c.ld_head();
            const int64_t from = head + p * hd + d;
            const int64_t to = head + (p & ~int64_t{kAttnKTile - 1}) * hd + d * kAttnKTile +
                               (p & (kAttnKTile - 1));
            c.kt[to] = c.kf[from];
            if (type == AttnKvType::F16) c.kht[to] = c.kh[from];
          }
  }
  return c;
}

struct Tokens {
  std::vector<int32_t> pos, seq;
};

// Queries of n tokens (rows of n_head heads plus 16 floats of padding), N(0, q_sd).
std::vector<float> make_q(int64_t n, int n_head, int hd, float q_sd, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, q_sd);
  std::vector<float> q(static_cast<size_t>(n) * (int64_t{n_head} * hd + 16));
  for (auto& x : q) x = nd(rng);
  return q;
}

AttnArgs args(const Cache& c, int n_head, const Tokens& tk, const std::vector<float>& q,
              std::vector<float>& out) {
  AttnArgs a;
  a.n_head = n_head;
  a.n_head_kv = c.n_kv;
  a.head_dim = c.hd;
  a.scale = 1.0f / std::sqrt(static_cast<float>(c.hd));
  a.n_tok = static_cast<int64_t>(tk.pos.size());
  a.pos = tk.pos.data();
  a.seq = tk.seq.data();
  a.q = q.data();
  a.ldq = int64_t{n_head} * c.hd + 16;
  a.ldo = a.ldq;
  out.assign(static_cast<size_t>(a.n_tok * a.ldo), kSentinel);
  for (int64_t t = 0; t < a.n_tok; ++t)
    std::fill_n(out.begin() + t * a.ldo, int64_t{n_head} * c.hd,
                std::numeric_limits<float>::quiet_NaN());
  a.out = out.data();
  a.kv = c.view();
  return a;
}

// The f64 reference and the bound of the header for each output value.
struct Ref {
  std::vector<double> out, bound;  // (n_tok, n_head, hd)
};

// chain: the longest f32 summation chain over positions (L of the header).
// blk, taper: the kernel's blocks (AttnCpuTuning::block, 0: its rule; taper).
Ref reference(const Cache& c, const AttnArgs& a, bool ref_f32, int blk = 0, bool taper = true) {
  const int group = a.n_head / a.n_head_kv, hd = a.head_dim;
  const double u = 0x1p-24, scale = a.scale;
  Ref r;
  r.out.assign(static_cast<size_t>(a.n_tok) * a.n_head * hd, 0.0);
  r.bound.assign(r.out.size(), 0.0);
  for (int64_t t = 0; t < a.n_tok; ++t) {
    const int32_t pos = a.pos[t];
    const int64_t base = a.seq[t] * a.kv.ld_seq;
    const int len = attention_cpu_block_len(int64_t{pos} + 1, blk);
    const int nb = static_cast<int>(attention_cpu_blocks(int64_t{pos} + 1, blk, taper));
    const double chain = ref_f32 ? pos + 1 : len;
    std::vector<double> s(pos + 1), w(pos + 1);
    for (int h = 0; h < a.n_head; ++h) {
      const float* q = a.q + t * a.ldq + int64_t{h} * hd;
      const int64_t off = int64_t{h / group} * a.kv.head_stride(hd);
      double mx = -INFINITY, amax = 0;
      for (int32_t p = 0; p <= pos; ++p) {
        double d = 0, ad = 0;
        for (int i = 0; i < hd; ++i) {
          const double x = double(q[i]) * c.k(base + p * a.kv.ld_pos + off + i);
          d += x, ad += std::fabs(x);
        }
        s[p] = d * scale;
        mx = std::max(mx, s[p]);
        amax = std::max(amax, ad * scale);
      }
      double l = 0;
      for (int32_t p = 0; p <= pos; ++p) l += (w[p] = std::exp(s[p] - mx));
      for (int32_t p = 0; p <= pos; ++p) w[p] /= l;
      const double k = (2 * (hd + 2) * amax + 2 * chain + 3 * nb + 16) * u;
      for (int i = 0; i < hd; ++i) {
        double o = 0, sa = 0;
        for (int32_t p = 0; p <= pos; ++p) {
          const double v = c.v(base + p * a.kv.ld_pos + off + i);
          o += w[p] * v, sa += w[p] * std::fabs(v);
        }
        const size_t at = (static_cast<size_t>(t) * a.n_head + h) * hd + i;
        r.out[at] = o;
        r.bound[at] = k * sa;
      }
    }
  }
  return r;
}

// Checks out against ref (and the padding); returns the largest error/bound.
double check(const AttnArgs& a, const std::vector<float>& out, const Ref& ref,
             const std::string& what) {
  double worst = 0;
  int64_t bad = 0;
  const int64_t w = int64_t{a.n_head} * a.head_dim;
  for (int64_t t = 0; t < a.n_tok; ++t) {
    for (int64_t i = 0; i < w; ++i) {
      const size_t at = static_cast<size_t>(t * w + i);
      const double got = out[t * a.ldo + i], err = std::fabs(got - ref.out[at]);
      if (!(err <= ref.bound[at])) {
        if (bad++ < 3)
          FAIL_CHECK(what << ": token " << t << " value " << i << ": " << got << " vs "
                          << ref.out[at] << " (bound " << ref.bound[at] << ")");
      } else if (ref.bound[at] > 0) {
        worst = std::max(worst, err / ref.bound[at]);
      }
    }
    for (int64_t i = w; i < a.ldo; ++i)
      if (out[t * a.ldo + i] != kSentinel && bad++ < 3)
        FAIL_CHECK(what << ": token " << t << " wrote its row padding at " << i);
  }
  CHECK_MESSAGE(bad == 0, what << ": " << bad << " values outside the bound");
  return worst;
}

std::string name(CpuIsa isa, const Cache& c, int group, const std::string& shape) {
  return std::string(cpu_isa_name(isa)) + (c.type == AttnKvType::F16 ? " f16" : " f32") +
         (c.tiled        ? " tiled"
          : c.head_major ? " head-major"
                         : " rows") +
         " group " + std::to_string(group) + " head_dim " + std::to_string(c.hd) + " " + shape;
}

// Runs attention_cpu on each pool; all must give the same bits; returns the
// first result.
std::vector<float> run_pools(const Cache& c, int n_head, const Tokens& tk,
                             const std::vector<float>& q, CpuIsa isa,
                             std::vector<ThreadPool*> pools, const std::string& what,
                             const AttnCpuTuning& tune = {}) {
  std::vector<float> first, out;
  for (ThreadPool* pool : pools) {
    AttentionCpuScratch scratch;
    const AttnArgs a = args(c, n_head, tk, q, out);
    attention_cpu(*pool, a, scratch, isa, tune);
    if (first.empty()) {
      first = out;
    } else {
      CHECK_MESSAGE(std::memcmp(first.data(), out.data(), out.size() * 4) == 0,
                    what << ": " << pool->size() << " threads differ from " << pools[0]->size());
    }
  }
  return first;
}

}  // namespace

TEST_CASE("cpu_attention: a row's blocks tile it, halves at its ends where tapered") {
  // 1,024 positions in blocks of 128, tapered: 64, 64, 6 x 128, 64, 64.
  std::vector<int> lens;
  for (int64_t b = 0; b < attention_cpu_blocks(1024); ++b)
    lens.push_back(attention_cpu_block(1024, b).n);
  CHECK(lens == std::vector<int>{64, 64, 128, 128, 128, 128, 128, 128, 64, 64});
  CHECK(attention_cpu_blocks(1024, 0, false) == 8);
  for (int block : {0, 16, 48, 64, 128, 256})
    for (bool taper : {false, true})
      for (int64_t n = 1; n <= 5000; n += n < 600 ? 1 : 37) {
        const int len = attention_cpu_block_len(n, block);
        const int64_t nb = attention_cpu_blocks(n, block, taper);
        const bool halves = taper && n > len && len % 32 == 0;
        int64_t at = 0;
        bool ok = true;
        for (int64_t b = 0; b < nb; ++b) {
          const AttnBlockRange r = attention_cpu_block(n, b, block, taper);
          // In order, no gap, no overlap; whole tiles but for the last.
          ok = ok && r.p0 == at && r.n >= 1 && r.n <= len && (b + 1 == nb || r.n % 16 == 0);
          if (halves && (b < 2 || b + 1 == nb)) ok = ok && r.n <= len / 2;
          at += r.n;
        }
        CHECK_MESSAGE((ok && at == n), "block " << block << " taper " << taper << " n " << n);
        if (block == 0) CHECK(nb <= attention_cpu_max_blocks(n));
      }
}

TEST_CASE("cpu_attention: one token at short and long contexts matches the f64 reference") {
  std::mt19937 rng(7);
  ThreadPool p1(1), p3(3), p16(16);
  double worst = 0;
  // Under the sanitizers (tests/unit/sanitizer_subset.h) groups 1 and 8, as
  // the mixed batches below (the three took 21 s under ASan); a group of 4
  // (its heads in one run of four) still runs there in the tests of
  // shorter blocks and of folding below, and of the paged cache.
  const bool subset = test::sanitizer_subset();
  for (bool tiled : {false, true})
    for (AttnKvType type : {AttnKvType::F16, AttnKvType::F32})
      for (int hd : {64, 128})
        for (int group : {1, 4, 8}) {
          if (subset && group == 4) continue;
          const int n_kv = 2, n_head = group * n_kv;
          const Cache c = make_cache(1, 4096, n_kv, hd, type, rng, false, tiled);
          for (int ctx : {1, 7, 33, 129, 257, 1000, 4096}) {
            const Tokens tk{{ctx - 1}, {0}};
            const auto q = make_q(1, n_head, hd, 1.0f, rng);
            std::vector<float> tmp;
            const AttnArgs a = args(c, n_head, tk, q, tmp);
            const Ref ref = reference(c, a, false);
            for (CpuIsa isa : supported_isas()) {
              const std::string what = name(isa, c, group, "ctx ") + std::to_string(ctx);
              const auto out = run_pools(c, n_head, tk, q, isa, {&p1, &p3, &p16}, what);
              worst = std::max(worst, check(a, out, ref, what));
            }
          }
        }
  MESSAGE("largest error / bound: " << worst);
}

TEST_CASE("cpu_attention: mixed batches and prefill-shaped batches match the f64 reference") {
  std::mt19937 rng(11);
  ThreadPool p1(1), p3(3), p16(16);
  double worst = 0;
  Tokens mixed;  // several sequences and positions, block edges included
  for (auto [s, p] : {std::pair{0, 0}, {2, 255}, {1, 256}, {2, 127}, {0, 1500}, {2, 2047}, {1, 33}})
    mixed.seq.push_back(s), mixed.pos.push_back(p);
  Tokens short_prefill, long_prefill;  // positions p0..p0+n-1 of one sequence
  for (int p = 0; p < 40; ++p) short_prefill.seq.push_back(1), short_prefill.pos.push_back(p);
  // Under the sanitizers (tests/unit/sanitizer_subset.h) the last 4 rows of
  // the long prompt and groups 1 and 8: the f64 reference of 16 rows at 1k
  // positions, at -O0 with ASan, was three quarters of this test's minute.
  const bool subset = test::sanitizer_subset();
  for (int p = subset ? 1028 : 1016; p < 1032; ++p)
    long_prefill.seq.push_back(2), long_prefill.pos.push_back(p);
  const std::pair<const char*, const Tokens*> shapes[] = {{"mixed batch", &mixed},
                                                          {"prefill 0..39", &short_prefill},
                                                          {"prefill 1016..1031", &long_prefill}};
  // Layouts: rows, head-major, tiled keys (the CPU cache's).
  for (int layout : {0, 1, 2})
    for (AttnKvType type : {AttnKvType::F16, AttnKvType::F32})
      for (int hd : {64, 128})
        for (int group : {1, 4, 8}) {
          if (subset && group == 4) continue;
          const int n_kv = 2, n_head = group * n_kv;
          // Head-major in the engine's own shape only: the layout changes
          // addresses, not arithmetic (CI time). Tiled keys change the
          // scores' arithmetic: every shape.
          if (layout == 1 && (type != AttnKvType::F16 || hd != 128)) continue;
          const Cache c = make_cache(3, 2048, n_kv, hd, type, rng, layout == 1, layout == 2);
          for (auto [shape_name, tk] : shapes) {
            const std::string shape = shape_name;
            const auto q = make_q(static_cast<int64_t>(tk->pos.size()), n_head, hd, 1.0f, rng);
            std::vector<float> tmp;
            const AttnArgs a = args(c, n_head, *tk, q, tmp);
            const Ref ref = reference(c, a, false);
            for (CpuIsa isa : supported_isas()) {
              const std::string what = name(isa, c, group, shape);
              const auto out = run_pools(c, n_head, *tk, q, isa, {&p1, &p3, &p16}, what);
              worst = std::max(worst, check(a, out, ref, what));
            }
          }
        }
  MESSAGE("largest error / bound: " << worst);
}

TEST_CASE("cpu_attention: shorter blocks and other prefetch distances match the f64 reference") {
  // AttnCpuTuning: the block changes the reduction (its own bound), the
  // prefetch distance and mode change nothing; all stay independent of threads.
  std::mt19937 rng(17);
  ThreadPool p1(1), p16(16);
  double worst = 0;
  // Under the sanitizers (tests/unit/sanitizer_subset.h) every (context,
  // block) is checked against the reference, and the settings that must
  // change nothing run at one block a context, in turn (16, 64, 128, 16):
  // each setting still meets each block and each context. They were 50 of
  // this test's 66 s under ASan.
  const bool subset = test::sanitizer_subset();
  int knob_rounds = 0;
  for (bool tiled : {false, true})
    for (int group : {4, 8}) {
      const int n_kv = 2, n_head = group * n_kv, hd = 128;
      const Cache c = make_cache(1, 2048, n_kv, hd, AttnKvType::F16, rng, true, tiled);
      const int ctxs[] = {1, 100, 1024, 2048}, blks[] = {16, 64, 128};
      for (int ci = 0; ci < 4; ++ci) {
        const int ctx = ctxs[ci];
        const Tokens tk{{ctx - 1}, {0}};
        const auto q = make_q(1, n_head, hd, 1.0f, rng);
        std::vector<float> tmp;
        const AttnArgs a = args(c, n_head, tk, q, tmp);
        for (int bi = 0; bi < 3; ++bi) {
          const int blk = blks[bi];
          const Ref ref = reference(c, a, false, blk);
          for (CpuIsa isa : supported_isas()) {
            const std::string what =
                name(isa, c, group, "ctx ") + std::to_string(ctx) + " block " + std::to_string(blk);
            const auto out = run_pools(c, n_head, tk, q, isa, {&p1, &p16}, what, {blk, 0});
            worst = std::max(worst, check(a, out, ref, what));
            if (subset && bi != ci % 3) continue;
            ++knob_rounds;
            // A knob's result on `pools` has the same bits as the default's.
            auto same = [&](const AttnCpuTuning& t, std::initializer_list<ThreadPool*> pools,
                            const std::string& knob) {
              const auto o = run_pools(c, n_head, tk, q, isa, pools, what, t);
              CHECK_MESSAGE(std::memcmp(o.data(), out.data(), out.size() * 4) == 0,
                            what << ": " << knob << " changed the result");
            };
            same({blk, 32}, {&p16}, "prefetch distance 32");
            // What is prefetched, and where, changes nothing either.
            for (int pf : {0, kAttnPfKeysL1, kAttnPfValues, kAttnPfKeysL2 | kAttnPfValues,
                           kAttnPfNextKeys, kAttnPfKeysL1 | kAttnPfValuesFirst})
              same({blk, 0, pf}, {&p16}, "prefetch mode " + std::to_string(pf));
            // Nor does when a thread claims its next block (split calls).
            for (int hold : {0, 3, 1000}) {
              AttnCpuTuning t{blk, 0};
              t.hold = hold;
              same(t, {&p16}, "claim-ahead hold " + std::to_string(hold));
            }
            // Nor the fold fetching its lines first, nor the first blocks
            // given by pool task rather than claimed.
            for (int k = 1; k < 4; ++k) {
              AttnCpuTuning t{blk, 0};
              t.fold_prefetch = k & 1;
              t.static_start = k & 2;
              same(t, {&p1, &p16},
                   "fold_prefetch " + std::to_string(k & 1) + " static_start " +
                       std::to_string(k >> 1));
            }
            // Nor a group's query heads as rows of their own.
            for (int gs : {2, 4}) {
              AttnCpuTuning t{blk, 0};
              t.group_split = gs;
              same(t, {&p1, &p16}, "group_split " + std::to_string(gs));
            }
            // Nor how far ahead a cold block fetches its keys.
            for (int cold : {16, 64}) {
              AttnCpuTuning t{blk, 0};
              t.cold_ahead = cold;
              same(t, {&p1, &p16}, "cold-block distance " + std::to_string(cold));
            }
            // Uniform blocks (no halves at a row's ends): their own
            // reduction, so their own reference; still one result whatever
            // the threads.
            {
              AttnCpuTuning t{blk, 0};
              t.taper = false;
              const Ref uref = reference(c, a, false, blk, false);
              const auto o = run_pools(c, n_head, tk, q, isa, {&p1, &p16}, what + " uniform", t);
              worst = std::max(worst, check(a, o, uref, what + " uniform"));
            }
            // Nor whether a row's partials are folded as its blocks finish
            // (the default, which p16 ran above) or all by its last one.
            AttnCpuTuning at_end{blk, 0};
            at_end.fold_as_done = false;
            const auto e = run_pools(c, n_head, tk, q, isa, {&p16}, what, at_end);
            CHECK_MESSAGE(std::memcmp(e.data(), out.data(), out.size() * 4) == 0,
                          what << ": folding at the end changed the result");
          }
        }
      }
    }
  const int n_isas = static_cast<int>(supported_isas().size());
  CHECK(knob_rounds == (subset ? 16 : 48) * n_isas);
  MESSAGE("largest error / bound: " << worst << "; " << knob_rounds << " rounds of the settings"
                                    << std::string(subset ? " (the sanitizer subset)" : ""));
}

TEST_CASE(
    "cpu_attention: folding a row's partials as its blocks finish gives the same bits, call after "
    "call") {
  // The fold's lock, frontier and per-call done stamps (attention_cpu.cpp)
  // under contention, one scratch for every call as the engine keeps it:
  // blocks of 16 make many short tasks per row, 8 threads finish them
  // close together, and the context changes from call to call; each call
  // must give the single thread's bits (a lost block, a block folded twice
  // or out of order, a flag left from another call would change them).
  std::mt19937 rng(29);
  ThreadPool p1(1), p8(8);
  const int n_kv = 2, hd = 64, n_head = 8;
  const Cache c = make_cache(1, 1024, n_kv, hd, AttnKvType::F16, rng, false, true);
  const auto q = make_q(1, n_head, hd, 1.0f, rng);
  const AttnCpuTuning t{16, 0};
  // Under the sanitizers a quarter of the calls (a multiple of 6: both
  // settings at each context): 1000 took 16 s under ASan. For a long hunt
  // for races under TSan, LS_TEST_FULL_SWEEPS=1 keeps them all.
  const int kReps = test::sanitizer_subset() ? 252 : 1000;
  AttentionCpuScratch scratch;
  std::vector<std::vector<float>> one;
  for (int32_t pos : {1000, 700, 1023})
    one.push_back(run_pools(c, n_head, Tokens{{pos}, {0}}, q, CpuIsa::Portable, {&p1}, "one", t));
  int differ = 0;
  for (int rep = 0; rep < kReps; ++rep) {
    const int which = rep % 3;
    const Tokens tk{{std::array<int32_t, 3>{1000, 700, 1023}[which]}, {0}};
    std::vector<float> out;
    const AttnArgs a = args(c, n_head, tk, q, out);
    // Every other round of three with the first blocks given by pool task
    // and the fold's lines fetched first.
    AttnCpuTuning tr = t;
    tr.static_start = tr.fold_prefetch = (rep / 3) % 2 == 1;
    attention_cpu(p8, a, scratch, CpuIsa::Portable, tr);
    differ += std::memcmp(out.data(), one[which].data(), out.size() * 4) != 0;
  }
  CHECK_MESSAGE(differ == 0, differ << " of " << kReps << " calls differ from one thread");
}

TEST_CASE("cpu_attention: a token gives the same bits alone as in a batch") {
  std::mt19937 rng(13);
  ThreadPool pool(4);
  const int n_kv = 2, hd = 64, n_head = 8;
  for (bool tiled : {false, true})
    for (CpuIsa isa : supported_isas()) {
      const Cache c = make_cache(2, 2048, n_kv, hd, AttnKvType::F16, rng, false, tiled);
      Tokens batch;
      for (int p = 1500; p < 1508; ++p) batch.seq.push_back(0), batch.pos.push_back(p);
      batch.seq.push_back(1), batch.pos.push_back(2000);
      const int64_t n = static_cast<int64_t>(batch.pos.size());
      const auto q = make_q(n, n_head, hd, 1.0f, rng);
      const auto all = run_pools(c, n_head, batch, q, isa, {&pool}, "batch");
      const int64_t ld = int64_t{n_head} * hd + 16;
      for (int64_t t = 0; t < n; ++t) {
        const Tokens one{{batch.pos[t]}, {batch.seq[t]}};
        const std::vector<float> q1(q.begin() + t * ld, q.begin() + (t + 1) * ld);
        const auto alone = run_pools(c, n_head, one, q1, isa, {&pool}, "alone");
        CHECK_MESSAGE(std::memcmp(alone.data(), all.data() + t * ld, ld * 4) == 0,
                      cpu_isa_name(isa) << (tiled ? " tiled" : " rows") << ": token " << t
                                        << " alone differs from the batch");
      }
    }
}

TEST_CASE(
    "cpu_attention: tokens of one sequence share their common blocks: fewer tasks, the bits of "
    "each token alone") {
  // A verify step's or a prompt chunk's tokens (consecutive positions of one
  // sequence) read the blocks their rows have alike once for all of them
  // (AttnCpuTuning::share). Each token's result must be its bits alone and
  // with sharing off, for both the rows path (many units) and split calls
  // (AttnCpuTuning::task_ns counts the split tasks: with sharing a unit's
  // common blocks are one task a head, so fewer), whatever the threads, the
  // block length and the taper; windows that cross a block edge or the
  // short-row limit (1,024) share fewer blocks or none.
  std::mt19937 rng(41);
  ThreadPool p1(1), p3(3), p16(16);
  const int n_kv = 2, hd = 64;
  const bool subset = test::sanitizer_subset();
  int shared_calls = 0;
  for (bool tiled : {false, true})
    for (AttnKvType type : {AttnKvType::F16, AttnKvType::F32})
      for (int group : {1, 4, 8}) {
        // f32 caches change the loads, not the sharing: one group (CI time).
        // Under the sanitizers the engine's layout (tiled keys), groups 1
        // and 8, a window across the short-row limit and one past it, two
        // block settings: a sixth of the runs (38 s of ASan otherwise).
        if ((type == AttnKvType::F32 && group != 8) ||
            (subset && (group == 4 || !tiled || type == AttnKvType::F32)))
          continue;
        const int n_head = group * n_kv;
        const Cache c = make_cache(2, 2304, n_kv, hd, type, rng, false, tiled);
        for (int p0 : {40, 1018, 1500, 2290}) {
          if (subset && (p0 == 40 || p0 == 2290)) continue;
          Tokens tk;  // 8 tokens of sequence 1 from p0 (fewer where the cache ends), then one of 0
          for (int p = p0; p < std::min(p0 + 8, 2304); ++p) tk.seq.push_back(1), tk.pos.push_back(p);
          tk.seq.push_back(0), tk.pos.push_back(p0);
          const int64_t n = static_cast<int64_t>(tk.pos.size());
          const auto q = make_q(n, n_head, hd, 1.0f, rng);
          const int64_t ld = int64_t{n_head} * hd + 16;
          for (auto [blk, taper] : {std::pair{0, true}, {64, false}, {128, true}}) {
            if (subset && blk == 128) continue;
            for (CpuIsa isa : supported_isas()) {
              const std::string what = name(isa, c, group, "from ") + std::to_string(p0) +
                                       " block " + std::to_string(blk) +
                                       (taper ? "" : " uniform");
              AttnCpuTuning on;
              on.block = blk, on.taper = taper;
              AttnCpuTuning off = on;
              off.share = 1;
              const auto shared = run_pools(c, n_head, tk, q, isa, {&p3, &p16}, what, on);
              const auto alone_all = run_pools(c, n_head, tk, q, isa, {&p16}, what, off);
              CHECK_MESSAGE(std::memcmp(shared.data(), alone_all.data(), shared.size() * 4) == 0,
                            what << ": sharing changed the bits");
              for (int64_t t = 0; t < n; ++t) {
                if (subset && t % 3 != 0) continue;
                const Tokens one{{tk.pos[t]}, {tk.seq[t]}};
                const std::vector<float> q1(q.begin() + t * ld, q.begin() + (t + 1) * ld);
                const auto alone = run_pools(c, n_head, one, q1, isa, {&p1}, "alone", on);
                CHECK_MESSAGE(std::memcmp(alone.data(), shared.data() + t * ld, ld * 4) == 0,
                              what << ": token " << t << " alone differs from the batch");
              }
              // Split calls (16 threads, 2 units of 2 rows): count the tasks.
              auto tasks = [&](AttnCpuTuning t) {
                std::vector<int64_t> ns(4 * 4096, -1);
                t.task_ns = ns.data();
                AttentionCpuScratch scratch;
                std::vector<float> out;
                const AttnArgs a = args(c, n_head, tk, q, out);
                attention_cpu(p16, a, scratch, isa, t);
                int64_t k = 0;
                while (k < 4096 && ns[4 * k] >= 0) ++k;
                return k;
              };
              if (p0 < 1000) continue;  // rows of one block or two: no split
              int64_t expect_off = 0;
              for (int64_t t = 0; t < n; ++t)
                expect_off += attention_cpu_blocks(int64_t{tk.pos[t]} + 1, blk, taper) * n_kv;
              const int64_t with = tasks(on), without = tasks(off);
              CHECK_MESSAGE(without == expect_off, what << ": " << without << " tasks unshared");
              // From 1,500 every window of 8 shares the blocks below its first
              // token's last one or two.
              if (p0 >= 1500) {
                CHECK_MESSAGE(with < without / 2,
                              what << ": " << with << " tasks shared, " << without << " not");
                ++shared_calls;
              } else {
                CHECK_MESSAGE(with <= without, what << ": sharing added tasks");
              }
            }
          }
        }
      }
  CHECK(shared_calls > 0);
}

TEST_CASE("cpu_attention: the 70B shape (64 heads, 8 KV heads, head_dim 128) at 1k and 4k") {
  std::mt19937 rng(17);
  ThreadPool p1(1), p3(3), p16(16);
  double worst = 0;
  for (bool tiled : {false, true}) {
    const Cache c = make_cache(1, 4096, 8, 128, AttnKvType::F16, rng, false, tiled);
    for (int ctx : {1024, 4096}) {
      const Tokens tk{{ctx - 1}, {0}};
      const auto q = make_q(1, 64, 128, 1.0f, rng);
      std::vector<float> tmp;
      const AttnArgs a = args(c, 64, tk, q, tmp);
      const Ref ref = reference(c, a, false);
      for (CpuIsa isa : supported_isas()) {
        const std::string what = name(isa, c, 8, "70b ctx ") + std::to_string(ctx);
        worst = std::max(worst,
                         check(a, run_pools(c, 64, tk, q, isa, {&p1, &p3, &p16}, what), ref, what));
      }
    }
  }
  MESSAGE("largest error / bound: " << worst);
}

TEST_CASE("cpu_attention: odd groups and head dims, peaked softmax, take the fallbacks correctly") {
  // group 3 (runs of 2 + 1 heads), 64 (MQA: eight runs of 8); head_dim 40
  // (avx512 -> avx2), 6 (portable, one lane); queries ×8 so most weights
  // underflow the SIMD exp's range (exp(-87) -> 0).
  std::mt19937 rng(19);
  ThreadPool p1(1), p3(3), p16(16);
  double worst = 0;
  struct Shape {
    int n_kv, group, hd;
    float q_sd;
  };
  for (const Shape& s : {Shape{2, 3, 64, 1.0f}, Shape{1, 64, 64, 1.0f}, Shape{2, 4, 40, 1.0f},
                         Shape{3, 2, 6, 1.0f}, Shape{2, 4, 128, 8.0f}})
    for (AttnKvType type : {AttnKvType::F16, AttnKvType::F32})
      for (bool tiled : {false, true}) {
        // Tiled keys: whole tiles (1104 = 69 · 16).
        const Cache c = make_cache(2, tiled ? 1104 : 1100, s.n_kv, s.hd, type, rng, false, tiled);
        const int n_head = s.n_kv * s.group;
        Tokens tk{{0, 130, 1099, 500}, {0, 1, 1, 0}};
        const auto q = make_q(4, n_head, s.hd, s.q_sd, rng);
        std::vector<float> tmp;
        const AttnArgs a = args(c, n_head, tk, q, tmp);
        const Ref ref = reference(c, a, false);
        for (CpuIsa isa : supported_isas()) {
          const std::string what = name(isa, c, s.group, "odd shape");
          worst = std::max(
              worst, check(a, run_pools(c, n_head, tk, q, isa, {&p1, &p3, &p16}, what), ref, what));
        }
      }
  MESSAGE("largest error / bound: " << worst);
}

TEST_CASE("cpu_attention: attention_ref_f32 (the oracle, the backend's old path) matches f64") {
  std::mt19937 rng(23);
  double worst = 0;
  for (AttnKvType type : {AttnKvType::F16, AttnKvType::F32}) {
    const Cache c = make_cache(2, 2048, 2, 64, type, rng);
    const Tokens tk{{0, 200, 2047}, {1, 0, 1}};
    const auto q = make_q(3, 8, 64, 1.0f, rng);
    std::vector<float> out;
    const AttnArgs a = args(c, 8, tk, q, out);
    attention_ref_f32(a);
    worst = std::max(worst, check(a, out, reference(c, a, true), "attention_ref_f32"));
  }
  MESSAGE("largest error / bound: " << worst);
}
