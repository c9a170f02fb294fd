// Every op kernel of the CUDA backend (all but the matmul, which has its own
// tests) against its CPU reference, llama.cpp's test-backend-ops style:
// fresh random inputs per case, odd sizes, the output poisoned with NaN
// before each run, and a stated threshold per op:
//   rmsnorm (+ fused add)  NMSE < 1e-10   (f32 block sum vs the reference's f64 sum)
//   rope                   NMSE < 1e-12   (theta in double on both sides)
//   swiglu                 NMSE < 1e-12
//   embedding rows         max |diff| <= 1e-6 * max |ref| per type (same float ops: expect 0)
//   kv store (f16)         exact (round to nearest even on both sides)
//   attention (f16 KV)     NMSE < 1e-9 and max |diff| <= 1e-4 * max |ref|
//   argmax                 exact, ties to the lowest id
// Each case prints its measured error (MESSAGE), so a run's log is the table.
#include <doctest/doctest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "kernels/argmax.cuh"
#include "kernels/attention.cuh"
#include "kernels/attention_decode_row.cuh"
#include "kernels/attention_decode_tc.cuh"
#include "kernels/attention_decode.cuh"
#include "kernels/embed.cuh"
#include "kernels/host_read.cuh"
#include "kernels/half.h"
#include "kernels/kv_store.cuh"
#include "kernels/pdl.cuh"
#include "kernels/ref/ops.h"
#include "kernels/ref/quant.h"
#include "kernels/rmsnorm.cuh"
#include "kernels/rope.cuh"
#include "kernels/swiglu.cuh"
#include "model/kv_cache.h"
#include "model/sampler.h"
#include "tests/gpu/gpu_test_util.h"

using namespace ls;
using namespace ls::gpu_test;

TEST_CASE("cuda ops: rmsnorm and fused residual add + rmsnorm, odd widths, row map") {
  LS_GPU_TEST_GUARD();
  std::mt19937 rng(1234);
  for (int64_t n : {1, 7, 33, 257, 4099}) {
    for (int variant = 0; variant < 3; ++variant) {  // 0 plain, 1 add, 2 add + rows map
      const int64_t n_rows = 5;
      auto h = rand_floats(rng, n_rows * n, -3, 3);
      auto add = rand_floats(rng, n_rows * n);
      auto w = rand_floats(rng, n, 0.5f, 1.5f);
      std::vector<int32_t> rows = {4, 1, 2};
      const int64_t n_out = variant == 2 ? 3 : n_rows;
      DevBuf<float> dh(h), dadd(add), dw(w), dy(n_out * n);
      DevBuf<int32_t> drows(rows);
      dy.poison();
      RmsNormParams p;
      p.h = dh.p;
      p.add = variant ? dadd.p : nullptr;
      p.w = dw.p;
      p.y = dy.p;
      p.rows = variant == 2 ? drows.p : nullptr;
      p.n = n;
      p.n_out = n_out;
      p.eps = 1e-5f;
      REQUIRE(rmsnorm_f32_cuda(p, nullptr).ok());
      auto y = dy.download();
      auto h_out = dh.download();
      std::vector<float> ref(n_out * n), h_ref = h;
      for (int64_t m = 0; m < n_out; ++m) {
        const int64_t r = variant == 2 ? rows[m] : m;
        if (variant)
          for (int64_t i = 0; i < n; ++i) h_ref[r * n + i] = h[r * n + i] + add[r * n + i];
        rmsnorm_f32(h_ref.data() + r * n, w.data(), ref.data() + m * n, n, 1e-5f);
      }
      const double e = nmse(y, ref);
      MESSAGE("rmsnorm n=" << n << " variant=" << variant << " nmse=" << e);
      CHECK(e < 1e-10);
      if (variant) {  // the residual stream was updated in place, for the rows it touched
        for (int64_t m = 0; m < n_out; ++m) {
          const int64_t r = variant == 2 ? rows[m] : m;
          for (int64_t i = 0; i < n; ++i) REQUIRE(h_out[r * n + i] == h_ref[r * n + i]);
        }
      }
    }
  }
}

TEST_CASE("cuda ops: rope with and without freq factors, partial rotation, far positions") {
  LS_GPU_TEST_GUARD();
  std::mt19937 rng(99);
  struct Case {
    int32_t n_head, head_dim, n_rot;
    bool factors;
    float scale;
  };
  for (Case cs : {Case{3, 64, 64, false, 1.0f}, Case{5, 128, 128, true, 1.0f},
                  Case{2, 96, 64, true, 0.25f}, Case{1, 32, 32, false, 1.0f}}) {
    const int64_t n_tok = 7;
    const int64_t stride = static_cast<int64_t>(cs.n_head) * cs.head_dim;
    auto x = rand_floats(rng, n_tok * stride);
    std::vector<int32_t> pos = {0, 1, 17, 255, 4095, 65535, 131071};
    std::vector<float> ff(cs.n_rot / 2);
    for (auto& f : ff) f = std::uniform_real_distribution<float>(1.0f, 8.0f)(rng);
    DevBuf<float> dx(x), dff(ff);
    DevBuf<int32_t> dpos(pos);
    RopeCudaParams p;
    p.x = dx.p;
    p.pos = dpos.p;
    p.freq_factors = cs.factors ? dff.p : nullptr;
    p.n_tok = n_tok;
    p.n_head = cs.n_head;
    p.head_dim = cs.head_dim;
    p.row_stride = stride;
    p.n_rot = cs.n_rot;
    p.freq_base = 500000.0f;
    p.freq_scale = cs.scale;
    REQUIRE(rope_f32_cuda(p, nullptr).ok());  // in place: the input is the "poison" check below
    auto y = dx.download();
    RopeParams rp;
    rp.n_rot = cs.n_rot;
    rp.freq_base = 500000.0f;
    rp.freq_scale = cs.scale;
    rp.freq_factors = cs.factors ? ff.data() : nullptr;
    std::vector<float> ref = x;
    for (int64_t t = 0; t < n_tok; ++t)
      rope_f32(ref.data() + t * stride, cs.n_head, cs.head_dim, pos[t], rp);
    const double e = nmse(y, ref);
    MESSAGE("rope heads=" << cs.n_head << " hd=" << cs.head_dim << " n_rot=" << cs.n_rot
                          << " factors=" << cs.factors << " nmse=" << e
                          << " maxabs=" << max_abs_diff(y, ref));
    CHECK(e < 1e-12);
    // Pass-through dims untouched.
    for (int64_t t = 0; t < n_tok; ++t)
      for (int32_t hh = 0; hh < cs.n_head; ++hh)
        for (int32_t i = cs.n_rot; i < cs.head_dim; ++i)
          REQUIRE(y[t * stride + hh * cs.head_dim + i] == x[t * stride + hh * cs.head_dim + i]);
  }
}

TEST_CASE("cuda ops: swiglu") {
  LS_GPU_TEST_GUARD();
  std::mt19937 rng(5);
  for (int64_t n : {1, 31, 12345, 3 * 14336 + 5}) {
    auto g = rand_floats(rng, n, -8, 8), u = rand_floats(rng, n, -2, 2);
    DevBuf<float> dg(g), du(u), dy(n);
    dy.poison();
    SwigluParams p{dg.p, du.p, dy.p, n};
    REQUIRE(swiglu_f32_cuda(p, nullptr).ok());
    auto y = dy.download();
    std::vector<float> ref(n);
    silu_mul_f32(g.data(), u.data(), ref.data(), n);
    const double e = nmse(y, ref);
    MESSAGE("swiglu n=" << n << " nmse=" << e);
    CHECK(e < 1e-12);
  }
}

TEST_CASE("cuda ops: reads of mapped host memory equal memcpy, any length; misalignment refused") {
  LS_GPU_TEST_GUARD();
  std::mt19937 rng(11);
  for (uint64_t n : {uint64_t{1}, uint64_t{15}, uint64_t{16}, uint64_t{17}, uint64_t{4103},
                     uint64_t{1} << 20, (uint64_t{32} << 20) + 9}) {
    void* host = nullptr;
    void* view = nullptr;
    REQUIRE(cudaHostAlloc(&host, n, cudaHostAllocMapped) == cudaSuccess);
    REQUIRE(cudaHostGetDevicePointer(&view, host, 0) == cudaSuccess);
    std::vector<uint8_t> src(n);
    for (auto& b : src) b = static_cast<uint8_t>(rng());
    std::memcpy(host, src.data(), n);
    DevBuf<uint8_t> dst(n + 16);
    REQUIRE(cudaMemset(dst.p, 0xA5, n + 16) == cudaSuccess);
    REQUIRE(read_host_cuda(view, dst.p, n, nullptr).ok());
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    const auto got = dst.download();
    CHECK_MESSAGE(std::memcmp(got.data(), src.data(), n) == 0, "bytes " << n);
    // Nothing past the end is written.
    bool untouched = true;
    for (uint64_t i = n; i < n + 16; ++i) untouched &= got[i] == 0xA5;
    CHECK_MESSAGE(untouched, "bytes " << n << ": written past the end");
    CHECK_FALSE(read_host_cuda(static_cast<const uint8_t*>(view) + 4, dst.p, 8, nullptr).ok());
    cudaFreeHost(host);
  }
}

TEST_CASE("cuda ops: a step's int inputs read from mapped host memory equal memcpy") {
  LS_GPU_TEST_GUARD();
  std::mt19937 rng(12);
  // Segments of every size class (none, one int, less than a block, many
  // blocks, past the 64-block grid) at unaligned offsets of one staging.
  const int64_t lens[kHostI32Segs] = {0, 1, 1001, 70001};
  int64_t total = 0;
  for (int64_t n : lens) total += n;
  void* host = nullptr;
  void* view = nullptr;
  REQUIRE(cudaHostAlloc(&host, total * 4, cudaHostAllocMapped) == cudaSuccess);
  REQUIRE(cudaHostGetDevicePointer(&view, host, 0) == cudaSuccess);
  std::vector<int32_t> src(static_cast<size_t>(total));
  for (auto& x : src) x = static_cast<int32_t>(rng());
  std::memcpy(host, src.data(), src.size() * 4);
  std::vector<std::unique_ptr<DevBuf<int32_t>>> dst;
  HostI32Seg segs[kHostI32Segs];
  int64_t at = 0;
  for (int k = 0; k < kHostI32Segs; ++k) {
    dst.push_back(std::make_unique<DevBuf<int32_t>>(static_cast<size_t>(lens[k] + 4)));
    REQUIRE(cudaMemset(dst[k]->p, 0xA5, (lens[k] + 4) * 4) == cudaSuccess);
    segs[k] = {static_cast<const int32_t*>(view) + at, dst[k]->p, lens[k]};
    at += lens[k];
  }
  REQUIRE(read_host_i32_cuda(segs, kHostI32Segs, nullptr).ok());
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  at = 0;
  for (int k = 0; k < kHostI32Segs; ++k) {
    const auto got = dst[k]->download();
    CHECK_MESSAGE(std::memcmp(got.data(), src.data() + at, lens[k] * 4) == 0, "segment " << k);
    bool untouched = true;  // nothing past a segment's end
    for (int64_t i = lens[k]; i < lens[k] + 4; ++i) untouched &= got[i] == int32_t(0xA5A5A5A5);
    CHECK_MESSAGE(untouched, "segment " << k << ": written past the end");
    at += lens[k];
  }
  CHECK_FALSE(read_host_i32_cuda(segs, kHostI32Segs + 1, nullptr).ok());
  segs[1].n = -1;
  CHECK_FALSE(read_host_i32_cuda(segs, 2, nullptr).ok());
  cudaFreeHost(host);
}

TEST_CASE("cuda ops: embedding rows of every quant type") {
  LS_GPU_TEST_GUARD();
  std::mt19937 rng(7);
  const GgmlType types[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0,
                            GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0,
                            GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K,
                            GgmlType::Q6_K};
  for (GgmlType t : types) {
    REQUIRE(embed_type_supported(t));
    const int64_t n_embd = 768, n_vocab = 37, n_tok = 11;  // 3 super-blocks; odd vocab and batch
    const uint64_t rb = ggml_row_bytes(t, n_embd);
    std::vector<uint8_t> table(rb * n_vocab);
    for (int64_t r = 0; r < n_vocab; ++r) {
      auto x = rand_floats(rng, n_embd, -2, 2);
      REQUIRE(can_quantize(t));
      quantize_row(t, x.data(), table.data() + r * rb, n_embd);
    }
    std::vector<int32_t> tok(n_tok);
    for (auto& x : tok) x = std::uniform_int_distribution<int32_t>(0, n_vocab - 1)(rng);
    tok[0] = 0;
    tok[1] = n_vocab - 1;
    DevBuf<uint8_t> dtab(table);
    DevBuf<int32_t> dtok(tok);
    DevBuf<float> dy(n_tok * n_embd);
    dy.poison();
    EmbedParams p;
    p.table = dtab.p;
    p.type = t;
    p.n_embd = n_embd;
    p.row_bytes = rb;
    p.tokens = dtok.p;
    p.n_tok = n_tok;
    p.out = dy.p;
    REQUIRE(embed_rows_cuda(p, nullptr).ok());
    auto y = dy.download();
    std::vector<float> ref(n_tok * n_embd);
    for (int64_t i = 0; i < n_tok; ++i)
      dequantize_row(t, table.data() + tok[i] * rb, ref.data() + i * n_embd, n_embd);
    const double d = max_abs_diff(y, ref);
    MESSAGE("embed " << std::string(ggml_type_name(t)) << " max|diff|=" << d
                     << " max|ref|=" << max_abs(ref));
    CHECK(d <= 1e-6 * max_abs(ref));
  }
}

TEST_CASE("cuda ops: kv store to the f16 and f32 caches at (seq, pos)") {
  LS_GPU_TEST_GUARD();
  std::mt19937 rng(11);
  const uint32_t n_seq = 3, n_ctx = 50, kv = 96;
  const int64_t n_tok = 6;
  auto k = rand_floats(rng, n_tok * kv, -5, 5), v = rand_floats(rng, n_tok * kv, -5, 5);
  std::vector<int32_t> pos = {0, 49, 7, 8, 9, 0}, seq = {0, 0, 1, 1, 1, 2};
  DevBuf<float> dk(k), dv(v);
  DevBuf<int32_t> dpos(pos), dseq(seq);
  DevBuf<uint16_t> kc(n_seq * n_ctx * kv), vc(n_seq * n_ctx * kv);
  kc.poison();
  vc.poison();
  KvStoreParams p;
  p.k = dk.p;
  p.v = dv.p;
  p.pos = dpos.p;
  p.seq = dseq.p;
  p.k_cache = reinterpret_cast<__half*>(kc.p);
  p.v_cache = reinterpret_cast<__half*>(vc.p);
  p.n_tok = n_tok;
  p.n_embd_kv = kv;
  p.n_ctx = n_ctx;
  REQUIRE(kv_store_cuda(p, nullptr).ok());
  auto kh = kc.download(), vh = vc.download();
  KvCache ref(1, n_seq, n_ctx, 4, kv / 4, KvType::F16);
  std::vector<float> rk(kv), rv(kv);
  int64_t mismatches = 0, untouched_changed = 0;
  for (int64_t t = 0; t < n_tok; ++t) {
    ref.store(0, seq[t], pos[t], k.data() + t * kv, v.data() + t * kv);
    ref.load_k(0, seq[t], pos[t], rk.data());
    ref.load_v(0, seq[t], pos[t], rv.data());
    const uint64_t at = (static_cast<uint64_t>(seq[t]) * n_ctx + pos[t]) * kv;
    for (uint32_t i = 0; i < kv; ++i) {
      mismatches += fp16_to_fp32(kh[at + i]) != rk[i];
      mismatches += fp16_to_fp32(vh[at + i]) != rv[i];
    }
  }
  // A position nothing wrote keeps the poison.
  untouched_changed += kh[(1ull * n_ctx + 3) * kv] != 0xFFFF;
  MESSAGE("kv store mismatches=" << mismatches);
  CHECK(mismatches == 0);
  CHECK(untouched_changed == 0);

  // An f32 cache (--kv-type f32) keeps the rows' exact values.
  DevBuf<float> kf(n_seq * n_ctx * kv), vf(n_seq * n_ctx * kv);
  kf.poison();
  vf.poison();
  p.k_cache = kf.p;
  p.v_cache = vf.p;
  p.f32 = true;
  REQUIRE(kv_store_cuda(p, nullptr).ok());
  auto kfh = kf.download(), vfh = vf.download();
  int64_t f32_mismatches = 0;
  for (int64_t t = 0; t < n_tok; ++t) {
    const uint64_t at = (static_cast<uint64_t>(seq[t]) * n_ctx + pos[t]) * kv;
    for (uint32_t i = 0; i < kv; ++i) {
      f32_mismatches += std::memcmp(&kfh[at + i], &k[t * kv + i], 4) != 0;
      f32_mismatches += std::memcmp(&vfh[at + i], &v[t * kv + i], 4) != 0;
    }
  }
  MESSAGE("kv store f32 mismatches=" << f32_mismatches);
  CHECK(f32_mismatches == 0);
  CHECK(std::isnan(kfh[(1ull * n_ctx + 3) * kv]));  // still the poison
}

namespace {

// CPU reference attention over an f16 cache (n_seq, n_ctx, n_embd_kv), as CpuBackend does it.
std::vector<float> attention_ref(const std::vector<float>& q, const std::vector<uint16_t>& kc,
                                 const std::vector<uint16_t>& vc, const std::vector<int32_t>& pos,
                                 const std::vector<int32_t>& seq, int32_t n_head, int32_t n_head_kv,
                                 int32_t hd, int32_t n_ctx) {
  const int64_t n_tok = static_cast<int64_t>(pos.size());
  const int32_t kv = n_head_kv * hd, group = n_head / n_head_kv;
  std::vector<float> out(n_tok * n_head * hd, 0.0f), sc(n_ctx), kf(hd);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (int64_t t = 0; t < n_tok; ++t)
    for (int32_t h = 0; h < n_head; ++h) {
      const int32_t kvh = h / group;
      const float* qq = q.data() + (t * n_head + h) * hd;
      for (int32_t p = 0; p <= pos[t]; ++p) {
        const uint64_t at = (static_cast<uint64_t>(seq[t]) * n_ctx + p) * kv + kvh * hd;
        for (int32_t i = 0; i < hd; ++i) kf[i] = fp16_to_fp32(kc[at + i]);
        sc[p] = dot_f32(qq, kf.data(), hd) * scale;
      }
      softmax_f32(sc.data(), pos[t] + 1);
      float* o = out.data() + (t * n_head + h) * hd;
      for (int32_t p = 0; p <= pos[t]; ++p) {
        const uint64_t at = (static_cast<uint64_t>(seq[t]) * n_ctx + p) * kv + kvh * hd;
        for (int32_t i = 0; i < hd; ++i) o[i] += sc[p] * fp16_to_fp32(vc[at + i]);
      }
    }
  return out;
}

}  // namespace

// Where the grouped decode kernel's warps own heads by default: every split
// at most kAttentionDecodeSmall positions (host arithmetic, no device).
TEST_CASE("cuda ops: attention_decode_short at the edges of the short splits") {
  CHECK(attention_decode_short(0, 16, 8, 100));         // 16 splits of 8
  CHECK(attention_decode_short(0, 16, 8, 1023));        // of 64
  CHECK_FALSE(attention_decode_short(0, 16, 8, 1024));  // of 65
  CHECK(attention_decode_short(0, 1, 8, 63));           // one split of 64
  CHECK_FALSE(attention_decode_short(0, 1, 8, 64));
  CHECK(attention_decode_short(256, 1, 8, 40));  // fixed chunks: the row's 41 positions
  CHECK_FALSE(attention_decode_short(256, 1, 8, 100));
  CHECK_FALSE(attention_decode_short(0, 16, 8, -1));  // position not known
}

// Where the tensor-core decode kernel takes a batch by default: f16 cache,
// more than one split, the longest over kAttentionDecodeTcMin positions or
// not known (host arithmetic, no device).
TEST_CASE("cuda ops: the tensor-core decode kernel's default at its edges") {
  CHECK(attention_decode_longest(0, 16, 8, 100) == 8);
  CHECK(attention_decode_longest(0, 16, 8, 511) == 32);
  CHECK(attention_decode_longest(0, 16, 8, 512) == 33);
  CHECK(attention_decode_longest(0, 16, 8, 1023) == 64);
  CHECK(attention_decode_longest(256, 1, 8, 40) == 41);
  CHECK(attention_decode_longest(0, 16, 8, -1) == -1);
  float scratch = 0;
  AttentionParams p;
  p.n_head = 64;
  p.n_head_kv = 8;
  p.head_dim = 128;
  p.chunk = 0;
  p.n_split = 16;
  p.partial = &scratch;
  p.max_pos = 511;
  CHECK_FALSE(attention_decode_tc_applies(p));  // splits of 32
  p.max_pos = 512;
  CHECK(attention_decode_tc_applies(p));  // of 33
  p.max_pos = -1;
  CHECK(attention_decode_tc_applies(p));  // not known: the long form
  p.max_pos = 4000;
  AttentionParams q = p;
  q.kv_f32 = true;  // the exact oracle: never
  CHECK_FALSE(attention_decode_tc_applies(q));
  q = p;
  q.tc = 0;
  CHECK_FALSE(attention_decode_tc_applies(q));
  q = p;
  q.n_split = 1;  // one split: only when asked (tc 1)
  CHECK_FALSE(attention_decode_tc_applies(q));
  q.tc = 1;
  CHECK(attention_decode_tc_applies(q));
  q = p;
  q.head_dim = 96;
  q.tc = 1;
  CHECK_FALSE(attention_decode_tc_applies(q));
  q = p;
  q.partial = nullptr;  // splits without their scratch
  CHECK_FALSE(attention_decode_tc_applies(q));
}

TEST_CASE(
    "cuda ops: attention over the f16 and f32 caches, decode (split) and prefill (causal), GQA") {
  LS_GPU_TEST_GUARD();
  std::mt19937 rng(21);
  struct Case {
    const char* what;
    int32_t n_head, n_head_kv, hd, n_ctx, n_seq;
    std::vector<int32_t> pos, seq;
  };
  std::vector<Case> cases;
  cases.push_back({"decode 1 token, long context (splits)", 8, 2, 64, 3000, 1, {2999}, {0}});
  // The 8b's and the 70b's head groups (4 and 8 query heads a KV head) over
  // several sub-ranges and splits, the last one partial.
  cases.push_back({"decode 1 token, 8b heads, 5000 positions", 32, 8, 128, 5000, 1, {4999}, {0}});
  cases.push_back({"decode 2 tokens, 70b heads", 64, 8, 128, 1500, 2, {1333, 77}, {0, 1}});
  cases.push_back({"decode 3 sequences", 4, 4, 128, 1200, 3, {1100, 5, 700}, {0, 1, 2}});
  cases.push_back({"decode head_dim 256, pos 0", 2, 1, 256, 300, 1, {0}, {0}});
  // The 70b's heads at the contexts of a short chat: one split of 41
  // positions, or 8 of 32 (chunk 0), each staged before the PDL wait.
  cases.push_back({"decode 1 token, 70b heads, pos 40", 64, 8, 128, 300, 1, {40}, {0}});
  cases.push_back({"decode 1 token, 70b heads, pos 200", 64, 8, 128, 300, 1, {200}, {0}});
  // The row kernel's capacities (kernels/attention_decode_row.cuh: 32, 64
  // and 256 rows) at their last positions, head_dim 64 with G 1 and 2.
  cases.push_back({"decode 1 token, 8b heads, pos 31", 32, 8, 128, 300, 1, {31}, {0}});
  cases.push_back({"decode 1 token, 8b heads, pos 255", 32, 8, 128, 300, 1, {255}, {0}});
  cases.push_back({"decode 1 token, 70b heads, pos 383", 64, 8, 128, 400, 1, {383}, {0}});
  cases.push_back({"decode 1 token, head_dim 64, G 1, pos 63", 4, 4, 64, 100, 2, {63}, {1}});
  cases.push_back({"decode 1 token, head_dim 64, G 2, pos 100", 8, 4, 64, 200, 1, {100}, {0}});
  {
    Case c{"prefill 37 tokens causal", 8, 2, 64, 64, 1, {}, {}};
    for (int i = 0; i < 37; ++i) c.pos.push_back(i), c.seq.push_back(0);
    cases.push_back(c);
  }
  {
    Case c{"prefill 130 tokens at 600.. (one split per block)", 4, 2, 96, 800, 2, {}, {}};
    for (int i = 0; i < 130; ++i) c.pos.push_back(600 + i), c.seq.push_back(1);
    cases.push_back(c);
  }
  {  // head_dim 64, 100 tokens: the f16 run below is forced scalar, the f32 one must pick it
    Case c{"prefill 100 tokens head_dim 64", 8, 2, 64, 128, 1, {}, {}};
    for (int i = 0; i < 100; ++i) c.pos.push_back(i), c.seq.push_back(0);
    cases.push_back(c);
  }
  {  // GQA 8, one split (64 entries x 16 heads), each block over three
     // sub-ranges of the grouped decode kernel (kernels/attention_decode.cuh)
    Case c{"64 entries at 500.., 16 heads over 2, one split", 16, 2, 128, 600, 2, {}, {}};
    for (int i = 0; i < 64; ++i) c.pos.push_back(500 + i), c.seq.push_back(i & 1);
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
    auto q = rand_floats(rng, n_tok * cs.n_head * cs.hd, -2, 2);
    DevBuf<float> dq(q), dout(n_tok * cs.n_head * cs.hd);
    DevBuf<uint16_t> dk(kc), dv(vc);
    DevBuf<int32_t> dpos(cs.pos), dseq(cs.seq);
    const int32_t max_pos = *std::max_element(cs.pos.begin(), cs.pos.end());
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
    p.n_split = attention_splits(n_tok, cs.n_head, max_pos);
    DevBuf<float> part(
        std::max<int64_t>(1, attention_partial_floats(n_tok, cs.n_head, cs.hd, p.n_split)));
    part.poison();
    p.partial = part.p;
    dout.poison();
    p.scalar_only = true;  // the tensor-core prefill kernel has its own test
    p.tc = 0;              // and the tensor-core decode kernel its runs below
    REQUIRE(attention_cuda(p, nullptr).ok());
    auto y = dout.download();
    auto ref = attention_ref(q, kc, vc, cs.pos, cs.seq, cs.n_head, cs.n_head_kv, cs.hd, cs.n_ctx);
    const double e = nmse(y, ref), d = max_abs_diff(y, ref);
    MESSAGE("attention " << std::string(cs.what) << " splits=" << p.n_split << " nmse=" << e
                         << " max|diff|/max|ref|=" << d / max_abs(ref));
    CHECK(e < 1e-9);
    CHECK(d <= 1e-4 * max_abs(ref));

    // Each decode kernel (attention_split_kernel, the grouped kernel): the
    // same attention to f32 rounding. With q8 set, out's 8-bit form too,
    // bit for bit what quantize_act_q8 makes of out (written by the grouped
    // kernel with one split, the reduce with more, else a quantize launch).
    const int64_t width = static_cast<int64_t>(cs.n_head) * cs.hd;
    DevBuf<int8_t> q8q(n_tok * width), refq(n_tok * width);
    DevBuf<float2> q8ds(n_tok * width / 32), refds(n_tok * width / 32);
    auto check_q8 = [&](const AttentionParams& pq) {
      REQUIRE(quantize_act_q8_cuda(pq.out, n_tok, width, {refq.p, refds.p}, nullptr).ok());
      const auto gq = q8q.download(), rq = refq.download();
      const auto gd = q8ds.download(), rd = refds.download();
      CHECK(std::memcmp(gq.data(), rq.data(), gq.size()) == 0);
      CHECK(std::memcmp(gd.data(), rd.data(), gd.size() * sizeof(float2)) == 0);
    };
    // One run of pa into poisoned outputs, checked against the reference
    // (and out's 8-bit form where pa.q8 is set); returns out.
    auto run_checked = [&](const AttentionParams& pa) {
      dout.poison();
      q8q.poison();
      q8ds.poison();
      REQUIRE(attention_cuda(pa, nullptr).ok());
      auto ya = dout.download();
      CHECK(nmse(ya, ref) < 1e-9);
      CHECK(max_abs_diff(ya, ref) <= 1e-4 * max_abs(ref));
      if (pa.q8.q) check_q8(pa);
      return ya;
    };
    for (int32_t kern : {3, 5}) {
      AttentionParams pk = p;
      pk.kernel = kern;
      for (const bool with_q8 : {false, true}) {
        part.poison();
        pk.q8 = with_q8 ? ActQ8Device{q8q.p, q8ds.p} : ActQ8Device{nullptr, nullptr};
        CAPTURE(kern);
        CAPTURE(with_q8);
        run_checked(pk);
      }
    }

    // The row kernel (one token, rows of up to kAttentionRowMax positions, an
    // f16 cache): a block per query head, no splits; out and its 8-bit form.
    if (n_tok == 1 && max_pos < kAttentionRowMax && (cs.hd == 64 || cs.hd == 128)) {
      AttentionParams pr = p;
      pr.n_split = 1;
      pr.max_pos = max_pos;
      pr.row = 1;
      pr.q8 = {q8q.p, q8ds.p};
      REQUIRE(attention_decode_row_applies(pr));
      run_checked(pr);
      pr.row = 0;  // never, where it could
      CHECK_FALSE(attention_decode_row_applies(pr));
      pr.row = 1;
      pr.n_split = 2;  // it takes one split only
      CHECK_FALSE(attention_decode_row_applies(pr));
    }

    // Chunks from each row's own length (chunk 0): the count the rule gives,
    // and others, each split at least kAttentionMinChunk, those past a row's
    // end empty; splits of up to kAttentionDecodeSmall positions with their
    // rows staged in shared memory and read from the cache (no_stage).
    // Each form of the grouped kernel where G allows both (own 0: the warps'
    // sums meet in shared memory; 1: warps own heads), at every split length;
    // one split: the kernel writes out and its 8-bit form itself.
    for (int32_t ns : {attention_splits_dynamic(n_tok, cs.n_head, max_pos), 1, 2, 4, 16, 64})
      for (const bool no_stage : {false, true})
        for (const int32_t own : {0, 1}) {
          AttentionParams pd = p;
          pd.chunk = 0;
          pd.n_split = ns;
          pd.no_stage = no_stage;
          pd.own = own;
          DevBuf<float> partd(
              std::max<int64_t>(1, attention_partial_floats(n_tok, cs.n_head, cs.hd, ns)));
          partd.poison();
          pd.partial = partd.p;
          pd.q8 = {q8q.p, q8ds.p};
          CAPTURE(ns);
          CAPTURE(no_stage);
          CAPTURE(own);
          run_checked(pd);
        }

    // The tensor-core decode kernel (kernels/attention_decode_tc.cuh) at
    // split counts from one (it writes out and its 8-bit form itself) to 64,
    // its splits short or long, the last tile of each partial: the same
    // attention to the reference's bounds.
    for (int32_t ns : {attention_splits_dynamic(n_tok, cs.n_head, max_pos), 1, 2, 3, 16, 64}) {
      if (cs.hd != 64 && cs.hd != 128) continue;  // head_dim 96, 256: not its case
      AttentionParams pt = p;
      pt.chunk = 0;
      pt.n_split = ns;
      pt.tc = 1;
      DevBuf<float> partt(
          std::max<int64_t>(1, attention_partial_floats(n_tok, cs.n_head, cs.hd, ns)));
      partt.poison();
      pt.partial = partt.p;
      pt.q8 = {q8q.p, q8ds.p};
      REQUIRE(attention_decode_tc_applies(pt));
      CAPTURE(ns);
      run_checked(pt);
    }

    // The same values in an f32 cache: the same arithmetic, so the same bits,
    // and never the f16-only tensor-core kernel (scalar_only left off).
    std::vector<float> kc32(cache_n), vc32(cache_n);
    for (size_t i = 0; i < cache_n; ++i) {
      kc32[i] = fp16_to_fp32(kc[i]);
      vc32[i] = fp16_to_fp32(vc[i]);
    }
    DevBuf<float> dk32(kc32), dv32(vc32);
    p.k_cache = dk32.p;
    p.v_cache = dv32.p;
    p.kv_f32 = true;
    p.scalar_only = false;
    dout.poison();
    REQUIRE(attention_cuda(p, nullptr).ok());
    auto y32 = dout.download();
    CHECK(std::memcmp(y32.data(), y.data(), y.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("cuda ops: argmax over logits rows, ties to the lowest id") {
  LS_GPU_TEST_GUARD();
  std::mt19937 rng(31);
  const float nan = std::nanf("");
  // Vocabulary-sized rows with n % 4 == 0 (float4 loads) and not (scalar),
  // one past a cluster's single round of loads (300,000), and tiny ones.
  for (int64_t n : {1, 7, 255, 32000, 100003, 128256, 300000}) {
    CAPTURE(n);
    const int64_t rows = 8;
    auto x = rand_floats(rng, rows * n, -10, 10);
    float* r0 = x.data();
    // row 0: integers, so the maximum (10) repeats across threads, warps and
    // the blocks of a cluster; none in the first half, so the first is not at 0
    for (int64_t i = 0; i < n; ++i) r0[i] = std::min(std::round(r0[i]), i < n / 2 ? 9.0f : 10.0f);
    float* r1 = x.data() + n;  // +inf ties the largest float (the lower id wins), NaN never wins
    float* r2 = x.data() + 2 * n;
    const int64_t a = n / 3, b = 2 * n / 3 + 1;  // a < b once n >= 7
    if (n >= 7) {
      r1[0] = nan;
      r1[a] = FLT_MAX;
      r1[b] = INFINITY;
      r2[0] = nan;
      r2[a] = INFINITY;
      r2[b - 1] = nan;
      r2[b] = FLT_MAX;
    }
    // row 3: a tie of two in different eighths of the row (blocks 2 and 6 of a cluster)
    if (n > 300) x[3 * n + n / 4 + 3] = x[3 * n + 6 * n / 8 + 1] = 55.0f;
    x[4 * n + n - 1] = 60.0f;  // row 4: the maximum at the very end
    // row 5: all NaN gives 0
    std::fill(x.begin() + 5 * n, x.begin() + 6 * n, nan);
    // row 6: nothing above -inf gives 0, even behind a NaN
    std::fill(x.begin() + 6 * n, x.begin() + 7 * n, -INFINITY);
    x[6 * n] = nan;
    // row 7: -inf but the last, a very negative number
    std::fill(x.begin() + 7 * n, x.begin() + 8 * n, -INFINITY);
    x[7 * n + n - 1] = -1e30f;

    auto check = [&](const std::vector<int32_t>& got) {
      for (int64_t r = 0; r < rows; ++r) {
        CAPTURE(r);
        const float* row = x.data() + r * n;
        // The CPU's rule (the greedy sampler's); the plain first maximum where no NaN or inf is.
        CHECK(got[r] == greedy_argmax(row, static_cast<size_t>(n)));
        if (r == 0 || r == 3 || r == 4 || r == 7) {
          int32_t best = 0;
          for (int64_t i = 1; i < n; ++i)
            if (row[i] > row[best]) best = static_cast<int32_t>(i);
          CHECK(got[r] == best);
        }
      }
      if (n >= 7) CHECK(got[1] == a);
      if (n >= 7) CHECK(got[2] == a);
      if (n > 300) CHECK(got[3] == n / 4 + 3);
      CHECK(got[4] == n - 1);
      CHECK(got[5] == 0);
      CHECK(got[6] == 0);
      CHECK(got[7] == n - 1);
    };
    DevBuf<int32_t> dout(rows);
    {
      DevBuf<float> dx(x);
      dout.poison();
      ArgmaxParams p{dx.p, dout.p, rows, n};
      REQUIRE(argmax_f32_cuda(p, nullptr).ok());
      check(dout.download());
      // Captured into a graph as the backend's decode does: twice, inside a
      // PdlScope, so the second launch has the programmatic attribute beside
      // the cluster's and a kernel to overlap.
      cudaStream_t s = nullptr;
      REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
      cudaGraph_t graph = nullptr;
      cudaGraphExec_t exec = nullptr;
      dout.poison();
      REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
      {
        const PdlScope scope;
        REQUIRE(argmax_f32_cuda(p, s).ok());
        REQUIRE(argmax_f32_cuda(p, s).ok());
      }
      REQUIRE(cudaStreamEndCapture(s, &graph) == cudaSuccess);
      REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
      REQUIRE(cudaGraphLaunch(exec, s) == cudaSuccess);
      REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
      check(dout.download());
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
      cudaStreamDestroy(s);
    }
    // x one float past 16-byte alignment: the scalar loads even where n % 4 == 0.
    std::vector<float> padded(x.size() + 1, 0.0f);
    std::copy(x.begin(), x.end(), padded.begin() + 1);
    DevBuf<float> dpad(padded);
    dout.poison();
    ArgmaxParams p{dpad.p + 1, dout.p, rows, n};
    REQUIRE(argmax_f32_cuda(p, nullptr).ok());
    check(dout.download());
  }
}
