// The decode layer's fused kernels against what they replace, bit for bit:
//   rmsnorm + 8-bit output   q and {d, sum q} = quantize_act_q8_ref of its own y,
//                            y = the plain rmsnorm's y
//   swiglu + 8-bit output    the same, for silu(gate) · up
//   rope + KV store          q, k and both caches = rope_f32_cuda twice, then
//                            kv_store_cuda (f16 and f32 caches, paged and not,
//                            partial rotation)
//   attention + RoPE + KV store (one token): out and both caches = rope_kv,
//                            then attention (splits of 256 and of the row's length)
//   GEMV of several matrices one launch = one launch each (Q4_K, Q6_K, Q8_0;
//                            and v7 over Q4_K and Q6_K rows together)
//   programmatic dependent launch: a captured chain of those kernels inside a
//                            PdlScope = the same chain launched plainly
// (Each op's accuracy against the f64/f32 CPU reference is in test_ops.cpp
// and test_matmul.cpp; these show the fused forms change nothing.)
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "io/ggml_type.h"
#include "kernels/attention.cuh"
#include "kernels/attention_decode_row.cuh"
#include "kernels/gemv_q8.cuh"
#include "kernels/half.h"
#include "kernels/kv_store.cuh"
#include "kernels/pdl.cuh"
#include "kernels/quantize_act.cuh"
#include "kernels/ref/act_q8.h"
#include "kernels/ref/quant.h"
#include "kernels/rmsnorm.cuh"
#include "kernels/rope.cuh"
#include "kernels/rope_kv.cuh"
#include "kernels/swiglu.cuh"
#include "tests/gpu/gpu_test_util.h"

using namespace ls;
using namespace ls::gpu_test;

namespace {

#define CUDA_OK(call) REQUIRE_MESSAGE((call) == cudaSuccess, #call)

struct Q8Buf {
  DevBuf<int8_t> q;
  DevBuf<float2> ds;
  explicit Q8Buf(int64_t n) : q(static_cast<size_t>(n)), ds(static_cast<size_t>(n / 32)) {}
  ActQ8Device dev() const { return {q.p, ds.p}; }
};

// The q8 form of y made on the device is quantize_act_q8_ref of y, bit for bit.
void check_q8_of(const std::vector<float>& y, int64_t n_in, const Q8Buf& got) {
  const int64_t n = static_cast<int64_t>(y.size());
  std::vector<int8_t> qr(static_cast<size_t>(n));
  std::vector<float> dr(static_cast<size_t>(n / 32));
  for (int64_t t = 0; t < n / n_in; ++t)
    quantize_act_q8_ref(y.data() + t * n_in, n_in, qr.data() + t * n_in, dr.data() + t * n_in / 32);
  const Q8Mismatches bad = q8_mismatches(got.q.download(), got.ds.download(), qr, dr);
  CHECK(bad.q == 0);
  CHECK(bad.d == 0);
  CHECK(bad.sum == 0);
}

// The rotation both RoPE tests use: Llama 3's base, no scaling.
RopeCudaParams test_rope(const int32_t* pos, const float* freq_factors, int64_t n_tok,
                         int32_t head_dim, int32_t n_rot) {
  RopeCudaParams rp;
  rp.pos = pos;
  rp.freq_factors = freq_factors;
  rp.n_tok = n_tok;
  rp.head_dim = head_dim;
  rp.n_rot = n_rot;
  rp.freq_base = 500000.0f;
  rp.freq_scale = 1.0f;
  return rp;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("decode fused: rmsnorm with its 8-bit output (add, row map)") {
  LS_GPU_TEST_GUARD();
  std::mt19937 rng(7);
  for (int64_t n : {32, 96, 4096, 8192})
    for (int variant = 0; variant < 3; ++variant) {  // 0 plain, 1 add, 2 add + rows map
      INFO("n ", n, " variant ", variant);
      const int64_t n_rows = 5, n_out = variant == 2 ? 3 : n_rows;
      auto h = rand_floats(rng, n_rows * n, -3, 3), add = rand_floats(rng, n_rows * n);
      auto w = rand_floats(rng, n, 0.5f, 1.5f);
      h[7 % n] = 0;  // a zero and a tie-prone block are in the data anyway
      DevBuf<float> dh(h), dh2(h), dadd(add), dw(w), dy(n_out * n), dy2(n_out * n);
      DevBuf<int32_t> drows(std::vector<int32_t>{4, 1, 2});
      Q8Buf q8(n_out * n);
      q8.q.poison();
      q8.ds.poison();
      RmsNormParams p;
      p.h = dh.p;
      p.add = variant ? dadd.p : nullptr;
      p.w = dw.p;
      p.y = dy.p;
      p.rows = variant == 2 ? drows.p : nullptr;
      p.n = n;
      p.n_out = n_out;
      p.q8 = q8.dev();
      REQUIRE(rmsnorm_f32_cuda(p, nullptr).ok());
      RmsNormParams plain = p;
      plain.h = dh2.p;
      plain.y = dy2.p;
      plain.q8 = {nullptr, nullptr};
      REQUIRE(rmsnorm_f32_cuda(plain, nullptr).ok());
      const auto y = dy.download();
      CHECK(same_bits(y, dy2.download()));
      CHECK(same_bits(dh.download(), dh2.download()));
      check_q8_of(y, n, q8);
    }
  RmsNormParams bad;
  bad.n = 33;
  bad.n_out = 1;
  Q8Buf q8(64);
  bad.q8 = q8.dev();
  CHECK_FALSE(rmsnorm_f32_cuda(bad, nullptr).ok());  // n not a multiple of 32
}

TEST_CASE("decode fused: swiglu with its 8-bit output") {
  LS_GPU_TEST_GUARD();
  std::mt19937 rng(8);
  for (int64_t n : {32, 14336, 3 * 14336, 4096 * 300}) {  // the last: grid-stride passes
    INFO("n ", n);
    auto g = rand_floats(rng, n, -6, 6), u = rand_floats(rng, n, -2, 2);
    DevBuf<float> dg(g), du(u), dout(n), dout2(n);
    Q8Buf q8(n);
    q8.q.poison();
    q8.ds.poison();
    SwigluParams p;
    p.gate = dg.p;
    p.up = du.p;
    p.out = dout.p;
    p.n = n;
    p.q8 = q8.dev();
    REQUIRE(swiglu_f32_cuda(p, nullptr).ok());
    SwigluParams plain = p;
    plain.out = dout2.p;
    plain.q8 = {nullptr, nullptr};
    REQUIRE(swiglu_f32_cuda(plain, nullptr).ok());
    const auto y = dout.download();
    CHECK(same_bits(y, dout2.download()));
    check_q8_of(y, n, q8);  // blocks of 32 do not depend on the rows
  }
}

TEST_CASE("decode fused: rope + KV store equals rope twice and kv_store") {
  LS_GPU_TEST_GUARD();
  std::mt19937 rng(9);
  struct Case {
    int32_t n_head, n_head_kv, head_dim, n_rot;
    bool factors, f32, paged;
  };
  for (Case cs :
       {Case{8, 2, 64, 64, false, false, false}, Case{8, 2, 64, 64, true, true, true},
        Case{6, 3, 96, 64, true, false, true}, Case{32, 8, 128, 128, true, false, true}}) {
    INFO("heads ", cs.n_head, "/", cs.n_head_kv, " dim ", cs.head_dim, " rot ", cs.n_rot, " f32 ",
         cs.f32, " paged ", cs.paged);
    const int64_t n_tok = 5;
    const int32_t n_ctx = 64, n_seq = 2, KV = cs.n_head_kv * cs.head_dim;
    const int64_t QW = static_cast<int64_t>(cs.n_head) * cs.head_dim;
    auto q = rand_floats(rng, n_tok * QW), k = rand_floats(rng, n_tok * KV),
         v = rand_floats(rng, n_tok * KV);
    std::vector<float> ff(cs.n_rot / 2);
    for (auto& f : ff) f = std::uniform_real_distribution<float>(1.0f, 8.0f)(rng);
    const std::vector<int32_t> pos = {0, 17, 63, 5, 40}, seq = {0, 0, 1, 1, 0};
    // Paged: 4 blocks of 16 positions per slot, slots' blocks interleaved in the pool.
    std::vector<int32_t> table(static_cast<size_t>(n_seq) * 4);
    for (int s = 0; s < n_seq; ++s)
      for (int b = 0; b < 4; ++b) table[s * 4 + b] = b * n_seq + (n_seq - 1 - s);
    DevBuf<int32_t> dpos(pos), dseq(seq), dtable(table);
    DevBuf<float> dff(ff);
    const size_t cache_vals = static_cast<size_t>(n_seq) * n_ctx * KV;
    const size_t elem = cs.f32 ? 4 : 2;
    auto run = [&](bool fused, std::vector<float>& q_out, std::vector<float>& k_out,
                   std::vector<uint8_t>& kc, std::vector<uint8_t>& vc) {
      DevBuf<float> dq(q), dk(k), dv(v);
      DevBuf<uint8_t> dkc(cache_vals * elem), dvc(cache_vals * elem);
      CUDA_OK(cudaMemset(dkc.p, 0x3C, cache_vals * elem));
      CUDA_OK(cudaMemset(dvc.p, 0x3C, cache_vals * elem));
      RopeCudaParams rp =
          test_rope(dpos.p, cs.factors ? dff.p : nullptr, n_tok, cs.head_dim, cs.n_rot);
      KvStoreParams kp;
      kp.k = dk.p;
      kp.v = dv.p;
      kp.pos = dpos.p;
      kp.seq = dseq.p;
      kp.k_cache = dkc.p;
      kp.v_cache = dvc.p;
      if (cs.paged) {
        kp.pages.table = dtable.p;
        kp.pages.max_blocks = 4;
      }
      kp.f32 = cs.f32;
      kp.n_tok = n_tok;
      kp.n_embd_kv = KV;
      kp.n_ctx = n_ctx;
      if (fused) {
        RopeKvParams rk;
        rk.rope = rp;
        // The step's table (rope_table_cuda), as decode runs it: the same bits.
        DevBuf<float2> table_cs(static_cast<size_t>(n_tok * cs.n_rot / 2));
        REQUIRE(rope_table_cuda(rp, table_cs.p, nullptr).ok());
        rk.rope.cs = table_cs.p;
        rk.q = dq.p;
        rk.n_head = cs.n_head;
        rk.kv = kp;
        REQUIRE(rope_kv_store_cuda(rk, nullptr).ok());
      } else {
        rp.x = dq.p;
        rp.n_head = cs.n_head;
        rp.row_stride = QW;
        REQUIRE(rope_f32_cuda(rp, nullptr).ok());
        rp.x = dk.p;
        rp.n_head = cs.n_head_kv;
        rp.row_stride = KV;
        REQUIRE(rope_f32_cuda(rp, nullptr).ok());
        REQUIRE(kv_store_cuda(kp, nullptr).ok());
      }
      q_out = dq.download();
      k_out = dk.download();
      kc = dkc.download();
      vc = dvc.download();
    };
    std::vector<float> q1, k1, q2, k2;
    std::vector<uint8_t> kc1, vc1, kc2, vc2;
    run(true, q1, k1, kc1, vc1);
    run(false, q2, k2, kc2, vc2);
    CHECK(same_bits(q1, q2));
    CHECK(same_bits(k1, k2));
    CHECK(kc1 == kc2);
    CHECK(vc1 == vc2);
    CHECK_FALSE(q1 == q);  // it did rotate
  }
}

TEST_CASE(
    "decode fused: attention with RoPE and the KV store inside equals rope_kv, then attention") {
  LS_GPU_TEST_GUARD();
  std::mt19937 rng(10);
  struct Case {
    int32_t n_head, n_head_kv, head_dim, n_rot;
    bool factors, f32, paged;
  };
  for (Case cs : {Case{32, 8, 128, 128, true, false, true}, Case{8, 2, 64, 64, false, true, false},
                  Case{8, 8, 128, 64, true, false, true}, Case{16, 2, 64, 32, false, false, false}})
    // pos 63 with 16 splits of the row's length (chunks of 8): the split
    // holding pos is not the last.
    for (int32_t pos : {0, 63, 700, 1999})
      for (int32_t chunk : {0, 256}) {
        INFO("heads ", cs.n_head, "/", cs.n_head_kv, " dim ", cs.head_dim, " rot ", cs.n_rot,
             " f32 ", cs.f32, " paged ", cs.paged, " pos ", pos, " chunk ", chunk);
        const int32_t n_ctx = 2048, KV = cs.n_head_kv * cs.head_dim;
        const int64_t QW = static_cast<int64_t>(cs.n_head) * cs.head_dim;
        auto q = rand_floats(rng, QW), k = rand_floats(rng, KV), v = rand_floats(rng, KV);
        std::vector<float> ff(cs.n_rot / 2);
        for (auto& f : ff) f = std::uniform_real_distribution<float>(1.0f, 8.0f)(rng);
        // Paged: blocks of 16 positions in reverse order in the pool.
        const int32_t n_blocks = n_ctx / 16;
        std::vector<int32_t> table(n_blocks);
        for (int32_t b = 0; b < n_blocks; ++b) table[b] = n_blocks - 1 - b;
        DevBuf<int32_t> dpos(std::vector<int32_t>{pos}), dseq(std::vector<int32_t>{0}),
            dtable(table);
        DevBuf<float> dff(ff);
        // The cache's earlier rows: random values in the cache's type.
        const size_t cache_vals = static_cast<size_t>(n_ctx) * KV, elem = cs.f32 ? 4 : 2;
        std::vector<uint8_t> cache0(cache_vals * elem);
        {
          const auto r = rand_floats(rng, static_cast<int64_t>(cache_vals));
          for (size_t i = 0; i < cache_vals; ++i) {
            if (cs.f32) {
              std::memcpy(cache0.data() + 4 * i, &r[i], 4);
            } else {
              const uint16_t h = fp32_to_fp16(r[i]);
              std::memcpy(cache0.data() + 2 * i, &h, 2);
            }
          }
        }
        const int32_t n_split =
            chunk ? attention_splits(1, cs.n_head, pos)
                  : (pos == 63 ? 16 : attention_splits_dynamic(1, cs.n_head, pos));
        DevBuf<float> part(
            std::max<int64_t>(1, attention_partial_floats(1, cs.n_head, cs.head_dim, n_split)));
        // The fused runs take the step's cos and sin table (rope_table_cuda)
        // or compute them; rope_kv computes: all the same bits. Run 3 is run
        // 0 with a short split's rows read from the cache instead of staged
        // in shared memory (AttentionParams::no_stage): the same bits too.
        DevBuf<float2> table_cs(static_cast<size_t>(cs.n_rot / 2));
        auto run = [&](int fused, std::vector<float>& out, std::vector<uint8_t>& kc,
                       std::vector<uint8_t>& vc, int32_t tc = 0, bool row = false) {
          DevBuf<float> dq(q), dk(k), dv(v), dout(QW);
          DevBuf<uint8_t> dkc(cache0), dvc(cache0);
          const RopeCudaParams rp =
              test_rope(dpos.p, cs.factors ? dff.p : nullptr, 1, cs.head_dim, cs.n_rot);
          AttentionParams ap;
          ap.q = dq.p;
          ap.k_cache = dkc.p;
          ap.v_cache = dvc.p;
          if (cs.paged) {
            ap.pages.table = dtable.p;
            ap.pages.max_blocks = n_blocks;
          }
          ap.kv_f32 = cs.f32;
          ap.pos = dpos.p;
          ap.seq = dseq.p;
          ap.out = dout.p;
          ap.partial = part.p;
          ap.n_tok = 1;
          ap.n_head = cs.n_head;
          ap.n_head_kv = cs.n_head_kv;
          ap.head_dim = cs.head_dim;
          ap.n_ctx = n_ctx;
          ap.scale = 1.0f / std::sqrt(static_cast<float>(cs.head_dim));
          ap.chunk = chunk;
          ap.n_split = n_split;
          ap.no_stage = fused == 3;
          ap.tc = tc;  // 0: the grouped kernel; 1: the tensor-core one (f16 caches)
          ap.row = 0;
          if (row) {  // the row kernel: one split, the row's length known
            ap.row = 1;
            ap.n_split = 1;
            ap.max_pos = pos;
            REQUIRE(attention_decode_row_applies(ap));
          }
          REQUIRE(attention_fuses_rope(ap));
          if (fused == 1 || fused == 2) {
            ap.k_new = dk.p;
            ap.v_new = dv.p;
            ap.rope = rp;
            if (fused == 2) {
              REQUIRE(rope_table_cuda(rp, table_cs.p, nullptr).ok());
              ap.rope.cs = table_cs.p;
            }
          } else {
            RopeKvParams rk;
            rk.rope = rp;
            rk.q = dq.p;
            rk.n_head = cs.n_head;
            rk.kv.k = dk.p;
            rk.kv.v = dv.p;
            rk.kv.pos = dpos.p;
            rk.kv.seq = dseq.p;
            rk.kv.k_cache = dkc.p;
            rk.kv.v_cache = dvc.p;
            rk.kv.pages = ap.pages;
            rk.kv.f32 = cs.f32;
            rk.kv.n_tok = 1;
            rk.kv.n_embd_kv = KV;
            rk.kv.n_ctx = n_ctx;
            REQUIRE(rope_kv_store_cuda(rk, nullptr).ok());
          }
          part.poison();
          REQUIRE(attention_cuda(ap, nullptr).ok());
          out = dout.download();
          kc = dkc.download();
          vc = dvc.download();
        };
        std::vector<float> o1, o2, o3, o4;
        std::vector<uint8_t> kc1, vc1, kc2, vc2, kc3, vc3, kc4, vc4;
        run(1, o1, kc1, vc1);
        run(0, o2, kc2, vc2);
        run(2, o3, kc3, vc3);
        run(3, o4, kc4, vc4);
        CHECK(same_bits(o4, o2));
        CHECK(same_bits(o1, o2));
        CHECK(kc1 == kc2);
        CHECK(vc1 == vc2);
        CHECK(same_bits(o3, o2));
        CHECK(kc3 == kc2);
        CHECK(vc3 == vc2);
        CHECK_FALSE(kc1 == cache0);  // it stored the key
        // The tensor-core kernel (an f16 cache; kernels/attention_decode_tc.cuh):
        // fused or not, with the table or not, the same bits, the same rows
        // stored as the grouped kernel's, and its attention within f32
        // rounding of the grouped kernel's.
        if (!cs.f32) {
          std::vector<float> t1, t2, t3;
          std::vector<uint8_t> kt1, vt1, kt2, vt2, kt3, vt3;
          run(1, t1, kt1, vt1, 1);
          run(0, t2, kt2, vt2, 1);
          run(2, t3, kt3, vt3, 1);
          CHECK(same_bits(t1, t2));
          CHECK(same_bits(t3, t2));
          CHECK(kt1 == kc2);
          CHECK(vt1 == vc2);
          CHECK(kt3 == kc2);
          CHECK(vt2 == vc2);
          double num = 0, den = 0;
          for (size_t i = 0; i < t1.size(); ++i) {
            num += (double(t1[i]) - o2[i]) * (double(t1[i]) - o2[i]);
            den += double(o2[i]) * o2[i];
          }
          CHECK(num <= 1e-9 * den);
        }
        // The row kernel (an f16 cache, rows of up to kAttentionRowMax
        // positions; kernels/attention_decode_row.cuh): the same checks.
        if (!cs.f32 && pos < kAttentionRowMax) {
          std::vector<float> r1, r2, r3;
          std::vector<uint8_t> kr1, vr1, kr2, vr2, kr3, vr3;
          run(1, r1, kr1, vr1, 0, true);
          run(0, r2, kr2, vr2, 0, true);
          run(2, r3, kr3, vr3, 0, true);
          CHECK(same_bits(r1, r2));
          CHECK(same_bits(r3, r2));
          CHECK(kr1 == kc2);
          CHECK(vr1 == vc2);
          CHECK(kr3 == kc2);
          CHECK(vr2 == vc2);
          double num = 0, den = 0;
          for (size_t i = 0; i < r1.size(); ++i) {
            num += (double(r1[i]) - o2[i]) * (double(r1[i]) - o2[i]);
            den += double(o2[i]) * o2[i];
          }
          CHECK(num <= 1e-9 * den);
        }
      }
  // Fused where it cannot be: two tokens.
  AttentionParams two;
  two.n_tok = 2;
  two.n_head = 8;
  two.n_head_kv = 2;
  two.head_dim = 64;
  std::vector<float> z(2 * 128);
  DevBuf<float> dz(z);
  two.k_new = dz.p;
  two.v_new = dz.p;
  CHECK_FALSE(attention_fuses_rope(two));
  CHECK_FALSE(attention_cuda(two, nullptr).ok());
}

namespace {

std::vector<uint8_t> random_rows(std::mt19937& rng, GgmlType t, int64_t n_in, int64_t n_out) {
  const int64_t rb = static_cast<int64_t>(ggml_row_bytes(t, n_in));
  std::vector<uint8_t> w(static_cast<size_t>(rb * n_out));
  for (int64_t r = 0; r < n_out; ++r) {
    const std::vector<float> f = rand_floats(rng, n_in);
    quantize_row(t, f.data(), w.data() + r * rb, n_in);
  }
  return w;
}

}  // namespace

TEST_CASE("decode fused: a GEMV launch over several matrices equals one launch each") {
  LS_GPU_TEST_GUARD();
  std::mt19937 rng(10);
  for (GgmlType t : {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q8_0})
    for (int n_tok : {1, 2, 5}) {
      const int64_t n_in = 512;
      const int64_t n_out[3] = {333, 64, 7};
      INFO(ggml_type_name(t), " n_tok ", n_tok);
      auto x = rand_floats(rng, n_tok * n_in);
      DevBuf<float> dx(x);
      Q8Buf xq(n_tok * n_in);
      REQUIRE(quantize_act_q8_cuda(dx.p, n_tok, n_in, xq.dev(), nullptr).ok());
      std::vector<std::unique_ptr<DevBuf<uint8_t>>> dw;
      std::vector<std::unique_ptr<DevBuf<float>>> y1, y3;
      for (int i = 0; i < 3; ++i) {
        dw.push_back(std::make_unique<DevBuf<uint8_t>>(random_rows(rng, t, n_in, n_out[i])));
        y1.push_back(std::make_unique<DevBuf<float>>(n_tok * n_out[i]));
        y3.push_back(std::make_unique<DevBuf<float>>(n_tok * n_out[i]));
        y1.back()->poison();
        y3.back()->poison();
      }
      const int64_t rb = static_cast<int64_t>(ggml_row_bytes(t, n_in));
      for (int i = 0; i < 3; ++i) {
        GemvQ8Params p{dw[i]->p, xq.dev(), y1[i]->p, n_in, n_out[i], rb, n_tok};
        REQUIRE(gemv_q8_launch(t, p, nullptr).ok());
      }
      GemvQ8Params p{dw[0]->p, xq.dev(), y3[0]->p, n_in, n_out[0], rb, n_tok};
      for (int i = 1; i < 3; ++i) p.more[i - 1] = {dw[i]->p, y3[i]->p, n_out[i]};
      p.n_more = 2;
      REQUIRE(gemv_q8_launch(t, p, nullptr).ok());
      for (int i = 0; i < 3; ++i) {
        const auto a = y1[i]->download();
        CHECK(same_bits(a, y3[i]->download()));
        CHECK(nmse(a, a) == 0);  // no NaN: every output was written
      }
      p.n_more = 3;
      CHECK_FALSE(gemv_q8_launch(t, p, nullptr).ok());
    }
}

TEST_CASE("decode fused: one v7 launch over Q4_K and Q6_K (or Q5_K) rows equals a launch each") {
  LS_GPU_TEST_GUARD();
  std::mt19937 rng(12);
  for (GgmlType v_type : {GgmlType::Q6_K, GgmlType::Q5_K})
    for (int64_t n_in : {512, 4096})
      for (int n_tok : {1, 2}) {
        INFO("v ", ggml_type_name(v_type), " n_in ", n_in, " n_tok ", n_tok);
        const GgmlType types[3] = {GgmlType::Q4_K, GgmlType::Q4_K, v_type};  // q, k, v
        const int64_t n_out[3] = {333, 64, 7};
        auto x = rand_floats(rng, n_tok * n_in);
        DevBuf<float> dx(x);
        Q8Buf xq(n_tok * n_in);
        REQUIRE(quantize_act_q8_cuda(dx.p, n_tok, n_in, xq.dev(), nullptr).ok());
        std::vector<std::unique_ptr<DevBuf<uint8_t>>> dw;
        std::vector<std::unique_ptr<DevBuf<float>>> y1, y3;
        int64_t rb[3];
        for (int i = 0; i < 3; ++i) {
          dw.push_back(
              std::make_unique<DevBuf<uint8_t>>(random_rows(rng, types[i], n_in, n_out[i])));
          y1.push_back(std::make_unique<DevBuf<float>>(n_tok * n_out[i]));
          y3.push_back(std::make_unique<DevBuf<float>>(n_tok * n_out[i]));
          y1.back()->poison();
          y3.back()->poison();
          rb[i] = static_cast<int64_t>(ggml_row_bytes(types[i], n_in));
          GemvQ8Params one{dw[i]->p, xq.dev(), y1[i]->p, n_in, n_out[i], rb[i], n_tok};
          one.version = 7;
          REQUIRE(gemv_q8_launch(types[i], one, nullptr).ok());
        }
        GemvQ8Params p{dw[0]->p, xq.dev(), y3[0]->p, n_in, n_out[0], rb[0], n_tok};
        p.version = 7;
        p.more[0] = {dw[1]->p, y3[1]->p, n_out[1]};
        p.more[1] = {dw[2]->p, y3[2]->p, n_out[2], true, rb[2]};
        p.alt_type = v_type;
        p.n_more = 2;
        REQUIRE(gemv_q8_launch(GgmlType::Q4_K, p, nullptr).ok());
        for (int i = 0; i < 3; ++i) {
          const auto a = y1[i]->download();
          CHECK(same_bits(a, y3[i]->download()));
          CHECK(nmse(a, a) == 0);  // no NaN: every output was written
        }
        GemvQ8Params bad = p;  // the staged form takes one format a launch
        bad.version = 0;
        CHECK_FALSE(gemv_q8_launch(GgmlType::Q4_K, bad, nullptr).ok());
        bad = p;  // a pair with no kernel
        bad.alt_type = GgmlType::Q8_0;
        CHECK_FALSE(gemv_q8_launch(GgmlType::Q4_K, bad, nullptr).ok());
        bad = p;  // rows of the wrong size
        bad.more[1].row_bytes = rb[0];
        CHECK_FALSE(gemv_q8_launch(GgmlType::Q4_K, bad, nullptr).ok());
      }
  CHECK(gemv_q8_mixes(GgmlType::Q4_K, GgmlType::Q6_K));
  CHECK(gemv_q8_mixes(GgmlType::Q4_K, GgmlType::Q5_K));
  CHECK_FALSE(gemv_q8_mixes(GgmlType::Q6_K, GgmlType::Q4_K));
  CHECK_FALSE(gemv_q8_mixes(GgmlType::Q4_K, GgmlType::Q8_0));
}

TEST_CASE(
    "decode fused: a captured chain with programmatic dependent launch equals plain launches") {
  LS_GPU_TEST_GUARD();
  std::mt19937 rng(11);
  const int64_t E = 1024, F = 2816, n_tok = 1;
  const GgmlType t = GgmlType::Q4_K;
  auto h0 = rand_floats(rng, E, -3, 3), wn = rand_floats(rng, E, 0.5f, 1.5f);
  DevBuf<float> dwn(wn);
  DevBuf<uint8_t> wg(random_rows(rng, t, E, F)), wu(random_rows(rng, t, E, F)),
      wd(random_rows(rng, t, F, E));
  const int64_t rbe = static_cast<int64_t>(ggml_row_bytes(t, E)),
                rbf = static_cast<int64_t>(ggml_row_bytes(t, F));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // h -> norm (8-bit out) -> gate|up (one launch) -> swiglu (8-bit out) -> down -> o, 8 times
  // (o feeds the next round's norm as its residual add).
  auto chain = [&](DevBuf<float>& h, DevBuf<float>& xn, DevBuf<float>& g, DevBuf<float>& u,
                   DevBuf<float>& o, Q8Buf& xe, Q8Buf& xf) {
    for (int round = 0; round < 8; ++round) {
      RmsNormParams np;
      np.h = h.p;
      np.add = round ? o.p : nullptr;
      np.w = dwn.p;
      np.y = xn.p;
      np.n = E;
      np.n_out = n_tok;
      np.q8 = xe.dev();
      REQUIRE(rmsnorm_f32_cuda(np, s).ok());
      GemvQ8Params gp{wg.p, xe.dev(), g.p, E, F, rbe, static_cast<int>(n_tok)};
      gp.more[0] = {wu.p, u.p, F};
      gp.n_more = 1;
      REQUIRE(gemv_q8_launch(t, gp, s).ok());
      SwigluParams sp;
      sp.gate = g.p;
      sp.up = u.p;
      sp.out = g.p;
      sp.n = n_tok * F;
      sp.q8 = xf.dev();
      REQUIRE(swiglu_f32_cuda(sp, s).ok());
      GemvQ8Params dp{wd.p, xf.dev(), o.p, F, E, rbf, static_cast<int>(n_tok)};
      REQUIRE(gemv_q8_launch(t, dp, s).ok());
    }
  };
  std::vector<float> results[2];
  for (int pdl = 0; pdl < 2; ++pdl) {
    DevBuf<float> h(h0), xn(E), g(F), u(F), o(E);
    Q8Buf xe(E), xf(F);
    if (pdl) {
      cudaGraph_t graph = nullptr;
      cudaGraphExec_t exec = nullptr;
      CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
      {
        const PdlScope scope;
        chain(h, xn, g, u, o, xe, xf);
      }
      CUDA_OK(cudaStreamEndCapture(s, &graph));
      CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
      CUDA_OK(cudaGraphLaunch(exec, s));
      CUDA_OK(cudaStreamSynchronize(s));
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
      MESSAGE("programmatic dependent launch "
              << (pdl_enabled() ? "on" : "off")
              << " outside the scope; "
                 "inside it on where the GPU is sm_90+ and LS_PDL is not 0");
    } else {
      chain(h, xn, g, u, o, xe, xf);
      CUDA_OK(cudaStreamSynchronize(s));
    }
    results[pdl] = o.download();
    const auto hh = h.download();
    results[pdl].insert(results[pdl].end(), hh.begin(), hh.end());
  }
  CHECK(same_bits(results[0], results[1]));
  CHECK(nmse(results[0], results[0]) == 0);
  CUDA_OK(cudaStreamDestroy(s));
}
