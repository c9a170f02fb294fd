// GPU tests of the tensor-core prefill attention (kernels/attention_prefill.cu)
// against an f64 CPU reference over the same f16 cache:
//   shapes   head_dim 64 and 128; GQA ratios 1, 4, 8; batch sizes not a
//            multiple of the 64-row tile (1, 77, 200, 130, 512); a prompt
//            continuing a cache (positions from 300); two prompts in one
//            batch sharing a tile; random (seq, pos) entries in any order.
//   poison   out is NaN before each run; cache rows past each sequence's
//            largest position are NaN, so reading them (instead of the
//            kernel's zero fill) fails the test.
//   bound    NMSE < 1e-5 and max |diff| <= 1e-2 * max |ref|: Q and P are
//            rounded to f16 (2^-11 relative), which gives ~1e-7 NMSE on
//            these inputs; a wrong mask or fragment gives ~1.
// Plus: attention_cuda dispatches a >= 64-entry batch here (bitwise
// the same output).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention.cuh"
#include "kernels/attention_prefill.cuh"
#include "kernels/half.h"
#include "tests/gpu/gpu_test_util.h"

using namespace ls;
using namespace ls::gpu_test;

namespace {

// Softmax attention in f64 over the f16 cache (n_seq, n_ctx, n_head_kv * hd).
std::vector<float> attention_prefill_ref(const std::vector<float>& q,
                                         const std::vector<uint16_t>& kc,
                                         const std::vector<uint16_t>& vc,
                                         const std::vector<int32_t>& pos,
                                         const std::vector<int32_t>& seq, int32_t n_head,
                                         int32_t n_head_kv, int32_t hd, int32_t n_ctx) {
  const int64_t n_tok = static_cast<int64_t>(pos.size());
  const int32_t kv = n_head_kv * hd, group = n_head / n_head_kv;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  std::vector<float> out(n_tok * n_head * hd);
  std::vector<double> sc, acc(hd);
  for (int64_t t = 0; t < n_tok; ++t)
    for (int32_t h = 0; h < n_head; ++h) {
      const float* qq = q.data() + (t * n_head + h) * hd;
      const uint64_t row0 = static_cast<uint64_t>(seq[t]) * n_ctx * kv + (h / group) * hd;
      sc.assign(pos[t] + 1, 0.0);
      double mx = -INFINITY;
      for (int32_t p = 0; p <= pos[t]; ++p) {
        double d = 0;
        for (int32_t i = 0; i < hd; ++i)
          d += qq[i] * static_cast<double>(fp16_to_fp32(kc[row0 + p * kv + i]));
        sc[p] = d * scale;
        mx = std::max(mx, sc[p]);
      }
      double sum = 0;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int32_t p = 0; p <= pos[t]; ++p) {
        const double w = std::exp(sc[p] - mx);
        sum += w;
        for (int32_t i = 0; i < hd; ++i) acc[i] += w * fp16_to_fp32(vc[row0 + p * kv + i]);
      }
      for (int32_t i = 0; i < hd; ++i)
        out[(t * n_head + h) * hd + i] = static_cast<float>(acc[i] / sum);
    }
  return out;
}

struct Case {
  std::string what;
  int32_t n_head, n_head_kv, hd, n_ctx, n_seq;
  std::vector<int32_t> pos, seq;
};

void add_prompt(Case& c, int32_t seq, int32_t from, int32_t n) {
  for (int32_t i = 0; i < n; ++i) c.pos.push_back(from + i), c.seq.push_back(seq);
}

}  // namespace

TEST_CASE("cuda attention prefill: tensor-core flash kernel vs f64 reference, odd shapes, GQA") {
  LS_GPU_TEST_GUARD();
  std::mt19937 rng(4242);
  std::vector<Case> cases;
  {
    Case c{"8b shape: 512-token prompt, 32/8 heads, hd 128", 32, 8, 128, 512, 1, {}, {}};
    add_prompt(c, 0, 0, 512);
    cases.push_back(c);
  }
  {
    Case c{"77 tokens continuing a cache at 300, hd 64, GQA 1", 8, 8, 64, 400, 1, {}, {}};
    add_prompt(c, 0, 300, 77);
    cases.push_back(c);
  }
  {
    Case c{"two prompts sharing a tile (seq 1 then seq 0 from 50), hd 128, GQA 8",
           16,
           2,
           128,
           256,
           2,
           {},
           {}};
    add_prompt(c, 1, 0, 120);
    add_prompt(c, 0, 50, 80);
    cases.push_back(c);
  }
  {
    Case c{"130 random (seq, pos) entries of 3 sequences, hd 64, GQA 4", 8, 2, 64, 700, 3, {}, {}};
    std::uniform_int_distribution<int32_t> ds(0, 2), dp(0, 699);
    for (int i = 0; i < 130; ++i) c.seq.push_back(ds(rng)), c.pos.push_back(dp(rng));
    cases.push_back(c);
  }
  {
    Case c{"one token at pos 0, hd 128, GQA 4", 4, 1, 128, 8, 1, {0}, {0}};
    cases.push_back(c);
  }
  for (const Case& cs : cases) {
    const int64_t n_tok = static_cast<int64_t>(cs.pos.size());
    const int32_t kv = cs.n_head_kv * cs.hd;
    const size_t cache_n = static_cast<size_t>(cs.n_seq) * cs.n_ctx * kv;
    std::vector<uint16_t> kc(cache_n), vc(cache_n);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (size_t i = 0; i < cache_n; ++i) {
      kc[i] = fp32_to_fp16(nd(rng));
      vc[i] = fp32_to_fp16(nd(rng));
    }
    // NaN past each sequence's largest position in the batch.
    std::vector<int32_t> last(cs.n_seq, -1);
    for (int64_t t = 0; t < n_tok; ++t) last[cs.seq[t]] = std::max(last[cs.seq[t]], cs.pos[t]);
    for (int32_t s = 0; s < cs.n_seq; ++s)
      for (int32_t p = last[s] + 1; p < cs.n_ctx; ++p)
        for (int32_t i = 0; i < kv; ++i) {
          const size_t at = (static_cast<size_t>(s) * cs.n_ctx + p) * kv + i;
          kc[at] = vc[at] = 0xFFFF;
        }
    auto q = rand_floats(rng, n_tok * cs.n_head * cs.hd, -2, 2);
    DevBuf<float> dq(q), dout(n_tok * cs.n_head * cs.hd);
    DevBuf<uint16_t> dk(kc), dv(vc);
    DevBuf<int32_t> dpos(cs.pos), dseq(cs.seq);
    AttentionParams p;
    p.q = dq.p;
    p.k_cache = dk.p;
    p.v_cache = dv.p;
    p.pos = dpos.p;
    p.seq = dseq.p;
    p.out = dout.p;
    p.n_tok = n_tok;
    p.n_head = cs.n_head;
    p.n_head_kv = cs.n_head_kv;
    p.head_dim = cs.hd;
    p.n_ctx = cs.n_ctx;
    p.scale = 1.0f / std::sqrt(static_cast<float>(cs.hd));
    REQUIRE(attention_prefill_supported(p));
    dout.poison();
    REQUIRE(attention_prefill_f16kv_cuda(p, nullptr).ok());
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    auto y = dout.download();
    auto ref =
        attention_prefill_ref(q, kc, vc, cs.pos, cs.seq, cs.n_head, cs.n_head_kv, cs.hd, cs.n_ctx);
    const double e = nmse(y, ref), d = max_abs_diff(y, ref);
    MESSAGE("attention prefill " << cs.what << ": nmse=" << e
                                 << " max|diff|/max|ref|=" << d / max_abs(ref));
    CHECK(e < 1e-5);
    CHECK(d <= 1e-2 * max_abs(ref));

    if (n_tok >= kAttentionPrefillMinTok) {  // the generic entry point takes this kernel
      dout.poison();
      p.n_split = 1;
      REQUIRE(attention_cuda(p, nullptr).ok());
      auto y2 = dout.download();
      CHECK(std::memcmp(y.data(), y2.data(), y.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("cuda attention prefill: unsupported head_dim is an error, not a launch") {
  LS_GPU_TEST_GUARD();
  AttentionParams p;
  p.n_tok = 64;
  p.n_head = 4;
  p.n_head_kv = 2;
  p.head_dim = 96;
  CHECK_FALSE(attention_prefill_supported(p));
  CHECK_FALSE(attention_prefill_f16kv_cuda(p, nullptr).ok());
}
