// Tests of the chunk form (kernels/cpu/q8_chunks.h) of the CPU tier's int8
// matmuls for the K-quants:
//   - the chunk quantizer: portable and AVX2 give the same bytes, which are
//     the definition's (amax over 256, IEEE division and reciprocal, ties to
//     even), with exact 32-block sums;
//   - the portable dot against the exact value of the chunk form's product
//     (long double over the decoded integers and scales), within the bound
//     of kernels/cpu/dot_q8c.h, for weights at random and at their extremes;
//   - bits: every dot variant this CPU runs, at 1..8 tokens and odd token
//     offsets, memcmp against the portable dot; the AMX GEMM (emulated
//     everywhere, on the tile unit where the CPU has it) at 1..64 tokens;
//     matmul_cpu_q8_auto in the chunk form against a token computed alone.
// Outputs are poisoned with NaN first.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/act_q8.h"
#include "kernels/cpu/act_q8_cpu.h"
#include "kernels/cpu/dot_q8c.h"
#include "kernels/cpu/gemm_q8_amx.h"
#include "kernels/cpu/gemm_q8c.h"
#include "kernels/cpu/matmul_cpu.h"
#include "kernels/cpu/q8_chunks.h"
#include "runtime/thread_pool.h"
#include "tests/unit/kernels/random_quant.h"

using namespace ls;

namespace {

const GgmlType kKTypes[] = {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

std::string tn(GgmlType t) {
  return std::string(ggml_traits(t).name);
}

std::vector<float> nan_vec(size_t n) {
  return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN());
}

// The chunk form's quantization of n_tok tokens of n values.
ActQ8Buffer quantize_chunks(const std::vector<float>& x, int64_t n_tok, int64_t n, CpuIsa isa) {
  ActQ8Buffer buf;
  buf.set_chunks(true);
  buf.reserve(n_tok, n);
  quantize_act_q8_cpu(x.data(), n_tok, n, buf, isa);
  return buf;
}

// Weights at their extremes: every quant bit set, every 6-bit scale and min
// 63 (Q6_K: scales -128, quants 0 so that u - 32 = -32), where an int16 or
// int32 overflow in a kernel would show.
std::vector<uint8_t> extreme_weight(GgmlType t, int64_t n_in, int64_t n_out) {
  std::vector<uint8_t> w(ggml_row_bytes(t, n_in) * n_out, 0xFF);
  const size_t bb = ggml_traits(t).block_bytes;
  for (size_t off = 0; off < w.size(); off += bb) {
    const uint16_t h = fp32_to_fp16(0.01f);
    for (size_t f : test::half_fields(t)) std::memcpy(&w[off + f], &h, 2);
    if (t == GgmlType::Q6_K) {
      auto* b = reinterpret_cast<BlockQ6_K*>(&w[off]);
      std::memset(b->ql, 0, sizeof b->ql);
      std::memset(b->qh, 0, sizeof b->qh);
      std::memset(b->scales, 0x80, sizeof b->scales);
    }
  }
  return w;
}

// A case for the chunk form's kernels: n_out rows of type t over n inputs,
// random or at their extremes (x then +-1, every neg_every-th value -1, so
// q is at +-127), and n_tok tokens of x quantized; with_want: each token's
// product with each row by the portable dot, (n_tok, n_out).
struct ChunkCase {
  std::vector<uint8_t> w;
  ActQ8Buffer buf;
  uint64_t rb = 0;  // bytes a row
  std::vector<float> want;
};
ChunkCase chunk_case(GgmlType t, bool extreme, int neg_every, int64_t n, int64_t n_out,
                     int64_t n_tok, std::mt19937& rng, bool with_want) {
  ChunkCase c;
  c.w = extreme ? extreme_weight(t, n, n_out) : test::random_weight(t, n, n_out, rng);
  std::vector<float> x = test::random_x(n * n_tok, rng);
  if (extreme)
    for (size_t i = 0; i < x.size(); ++i) x[i] = i % neg_every == 0 ? -1.0f : 1.0f;
  c.buf = quantize_chunks(x, n_tok, n, CpuIsa::Portable);
  c.rb = ggml_row_bytes(t, n);
  if (with_want) {
    const ActQ8View xv = c.buf.view(n);
    c.want = nan_vec(n_out * n_tok);
    for (int64_t r = 0; r < n_out; ++r)
      for (int64_t k = 0; k < n_tok; ++k)
        dot_q8c_scalar(t, c.w.data() + r * c.rb, xv, k, 1, &c.want[k * n_out + r], 1, {});
  }
  return c;
}

// The chunk form's exact value (no rounding but the inputs') and its bound
// T of dot_q8c.h, for one row and one token.
void exact(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t tok, long double* value,
           long double* T) {
  const uint64_t cb = ggml_row_bytes(t, QK_K);
  Q8cChunkTerms w;
  *value = 0;
  *T = 0;
  for (int64_t c = 0; 256 * c < x.n; ++c) {
    q8c_chunk_terms(t, row + c * cb, w);
    const int8_t* q = x.qc_at(tok) + 256 * c;
    const long double dx = x.dc_at(tok)[c];
    long double a = 0, aa = 0, b = 0, ba = 0;
    for (int i = 0; i < 256; ++i) {
      a += static_cast<long double>(w.sc[i]) * w.u[i] * q[i];
      aa += std::fabs(static_cast<long double>(w.sc[i]) * w.u[i] * q[i]);
    }
    for (int j = 0; j < 8; ++j) {
      b += static_cast<long double>(w.mn[j]) * x.bsc_at(tok)[8 * c + j];
      ba += std::fabs(static_cast<long double>(w.mn[j]) * x.bsc_at(tok)[8 * c + j]);
    }
    *value += dx * (w.d * a - w.dmin * b);
    *T += std::fabs(dx) * (std::fabs(w.d) * aa + std::fabs(w.dmin) * ba);
  }
}

}  // namespace

TEST_CASE("cpu_q8_chunks: the chunk quantizer, portable and AVX2 the same bytes, exact sums") {
  std::mt19937 rng(31);
  const int64_t n = 1024, n_tok = 3;
  std::vector<float> x = test::random_x(n * n_tok, rng);
  for (int i = 0; i < 256; ++i) x[256 + i] = 0.0f;  // an all-zero chunk: d = 0, q = 0
  x[600] = 1e4f;                                    // an outlier in one chunk
  const ActQ8Buffer a = quantize_chunks(x, n_tok, n, CpuIsa::Portable);
  const ActQ8View va = a.view(n);
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t c = 0; c < n / 256; ++c) {
      const float* xc = x.data() + t * n + 256 * c;
      float amax = 0;
      for (int i = 0; i < 256; ++i) amax = std::fmax(amax, std::fabs(xc[i]));
      const float d = act_q8_scale(amax), id = act_q8_inv(d);
      CHECK(va.dc_at(t)[c] == d);
      for (int j = 0; j < 8; ++j) {
        int s = 0;
        for (int i = 0; i < 32; ++i) {
          const int8_t q = act_q8_round(xc[32 * j + i], id);
          CHECK(va.qc_at(t)[256 * c + 32 * j + i] == q);
          s += q;
        }
        CHECK(va.bsc_at(t)[8 * c + j] == s);
      }
    }
  if (!cpu_isa_supported(CpuIsa::Avx2)) {
    MESSAGE("SKIPPED: the AVX2 chunk quantizer (no AVX2 on this CPU)");
    return;
  }
  const ActQ8Buffer b = quantize_chunks(x, n_tok, n, CpuIsa::Avx2);
  const ActQ8View vb = b.view(n);
  CHECK(std::memcmp(va.qc, vb.qc, n * n_tok) == 0);
  CHECK(std::memcmp(va.dc, vb.dc, sizeof(float) * n * n_tok / 256) == 0);
  CHECK(std::memcmp(va.bsc, vb.bsc, sizeof(int16_t) * n * n_tok / 32) == 0);
}

TEST_CASE("cpu_q8_chunks: the portable dot is the chunk form's exact value within the bound") {
  std::mt19937 rng(32);
  for (GgmlType t : kKTypes)
    for (bool extreme : {false, true}) {
      CAPTURE(tn(t));
      CAPTURE(extreme);
      const int64_t n = 2048, n_out = 24, n_tok = 5;
      const ChunkCase c = chunk_case(t, extreme, 3, n, n_out, n_tok, rng, false);
      const std::vector<uint8_t>& w = c.w;
      const ActQ8View xv = c.buf.view(n);
      const uint64_t rb = c.rb;
      double worst = 0;
      for (int64_t r = 0; r < n_out; ++r) {
        std::vector<float> y = nan_vec(n_tok);
        dot_q8c_scalar(t, w.data() + r * rb, xv, 0, static_cast<int>(n_tok), y.data(), 1, {});
        for (int64_t k = 0; k < n_tok; ++k) {
          long double v, T;
          exact(t, w.data() + r * rb, xv, k, &v, &T);
          const long double bound = (2.0L * n / 256 + 6) * 0x1p-24L * T;
          const long double err = std::fabs(static_cast<long double>(y[k]) - v);
          CHECK(err <= bound);
          if (bound > 0) worst = std::max(worst, static_cast<double>(err / bound));
        }
      }
      const std::string what = tn(t) + (extreme ? " extreme" : " random");
      MESSAGE(what << ": largest error / bound " << worst);
    }
}

TEST_CASE("cpu_q8_chunks: every dot variant gives the portable dot's bits, 1-8 tokens") {
  std::mt19937 rng(33);
  std::vector<DotQ8Fn> fns;
  std::vector<std::string> names;
  for (CpuIsa isa : {CpuIsa::Avx2, CpuIsa::Avx512}) {
    if (!cpu_isa_supported(isa) || (isa == CpuIsa::Avx512 && !cpu_has_avx512_vnni())) {
      MESSAGE("SKIPPED: the " << std::string(cpu_isa_name(isa)) << " chunk dot (not on this CPU)");
      continue;
    }
    fns.push_back(dot_q8c_fn(isa));
    names.push_back(dot_q8c_name(isa));
  }
  for (GgmlType t : kKTypes)
    for (bool extreme : {false, true})
      for (int64_t n : {1536, 2304}) {  // 6 and 9 chunks: the one-token dot works 8 at a time
        const int64_t n_out = 9, n_tok = 11;
        const ChunkCase c = chunk_case(t, extreme, 5, n, n_out, n_tok, rng, true);
        const std::vector<uint8_t>& w = c.w;
        const ActQ8View xv = c.buf.view(n);
        const uint64_t rb = c.rb;
        const std::vector<float>& want = c.want;
        for (size_t f = 0; f < fns.size(); ++f)
          for (int width = 1; width <= kDotMaxTokens; ++width)
            for (int64_t t0 : {int64_t{0}, n_tok - width}) {
              CAPTURE(names[f]);
              CAPTURE(tn(t));
              CAPTURE(extreme);
              CAPTURE(width);
              CAPTURE(t0);
              std::vector<float> y = nan_vec(n_out * n_tok);
              for (int64_t r = 0; r < n_out; ++r) {
                // The last row has no next one: no prefetch, as the engine's.
                const RowPrefetch pf = r + 1 < n_out ? RowPrefetch{w.data() + (r + 1) * rb,
                                                                   static_cast<int64_t>(rb), 0}
                                                     : RowPrefetch{};
                fns[f](t, w.data() + r * rb, xv, t0, width, &y[t0 * n_out + r], n_out, pf);
              }
              CHECK(std::memcmp(&y[t0 * n_out], &want[t0 * n_out], sizeof(float) * n_out * width) ==
                    0);
            }
      }
}

TEST_CASE("cpu_q8_chunks: the AMX GEMM gives each token its dot's bits, 1-64 tokens") {
  std::mt19937 rng(34);
  std::vector<std::pair<std::string, GemmQ8cTileFn>> kernels{{"emulated", gemm_q8c_amx_tile_emu}};
  if (cpu_amx_usable())
    kernels.push_back({"tile unit", gemm_q8c_amx_tile_hw});
  else
    MESSAGE("SKIPPED: the chunk GEMM on the tile unit (no AMX on this CPU; emulated instead)");
  ThreadPool pool(3);
  for (GgmlType t : kKTypes)
    for (bool extreme : {false, true}) {
      // Rows not a multiple of 16, chunks not a multiple of 2.
      const int64_t n = 768, n_out = 37, n_tok = 64;
      const ChunkCase c = chunk_case(t, extreme, 7, n, n_out, n_tok, rng, true);
      const ActQ8View xv = c.buf.view(n);
      const std::vector<float>& want = c.want;
      const WeightView wv{t, c.w.data(), n, n_out};
      for (const auto& named : kernels)
        for (int64_t width : {1, 7, 16, 17, 32, 33, 64}) {
          const auto& name = named.first;
          const auto& kernel = named.second;
          CAPTURE(name);
          CAPTURE(tn(t));
          CAPTURE(extreme);
          CAPTURE(width);
          std::vector<float> y = nan_vec(n_out * width);
          GemmQ8cScratch scratch;
          const MatmulQ8Part part{wv, y.data()};
          gemm_q8c_parts(pool, &part, 1, xv, width, scratch, kernel);
          CHECK(std::memcmp(y.data(), want.data(), sizeof(float) * n_out * width) == 0);
        }
    }
}

TEST_CASE("cpu_q8_chunks: the packers give the same planes") {
  std::mt19937 rng(35);
  for (GgmlType t : kKTypes) {
    const int64_t n = 512;
    const std::vector<uint8_t> w = test::random_weight(t, n, 1, rng);
    std::vector<GemmQ8cW> a(2), b(2);
    std::memset(static_cast<void*>(a.data()), 0x55, sizeof(GemmQ8cW) * 2);
    std::memset(static_cast<void*>(b.data()), 0x55, sizeof(GemmQ8cW) * 2);
    for (int r : {0, 5, 15}) {  // places of the tile; the others keep their bytes
      gemm_q8c_pack_w(t, w.data(), n, a.data(), r);
      gemm_q8c_pack_w_fast(t, w.data(), n, b.data(), r);
    }
    CAPTURE(tn(t));
    CHECK(std::memcmp(a.data(), b.data(), sizeof(GemmQ8cW) * 2) == 0);
    // The planes hold v: 64 hi + lo = sc(i) u'(i).
    Q8cChunkTerms terms;
    q8c_chunk_terms(t, w.data(), terms);
    bool same = true;
    for (int i = 0; i < 256; ++i)
      same = same && 64 * a[0].hi[i / 64][5][i % 64] + a[0].lo[i / 64][5][i % 64] ==
                         terms.sc[i] * terms.u[i];
    CHECK(same);
    // More rows, and one of all-ones bytes (every scale and quant at its
    // largest: Q4_K's sc 63 and u 15, v = 945), into every place.
    const std::vector<uint8_t> many = test::random_weight(t, n, 15, rng);
    const uint64_t rb = ggml_row_bytes(t, n);
    const std::vector<uint8_t> ones(rb, 0xFF);
    for (int r = 0; r < 16; ++r) {
      const uint8_t* row = r < 15 ? many.data() + r * rb : ones.data();
      gemm_q8c_pack_w(t, row, n, a.data(), r);
      gemm_q8c_pack_w_fast(t, row, n, b.data(), r);
    }
    CHECK(std::memcmp(a.data(), b.data(), sizeof(GemmQ8cW) * 2) == 0);
  }
}

TEST_CASE("cpu_q8_chunks: matmul_cpu_q8_auto in the chunk form, batch against alone") {
  std::mt19937 rng(36);
  ThreadPool pool(2);
  const int64_t n = 512, n_tok = 40;
  // q/k/v-like parts sharing x, two types, and a lane-form type beside them.
  const GgmlType types[] = {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q8_0};
  const int64_t outs[] = {33, 16, 20};
  std::vector<std::vector<uint8_t>> ws;
  for (int p = 0; p < 3; ++p) ws.push_back(test::random_weight(types[p], n, outs[p], rng));
  const std::vector<float> x = test::random_x(n * n_tok, rng);
  auto run = [&](int64_t t0, int64_t nt, std::vector<std::vector<float>>& ys) {
    CpuMatmulScratch scratch(pool.size(), n);
    scratch.act().set_chunks(true);
    const ActQ8View xv = matmul_cpu_quantize(x.data() + t0 * n, nt, n, scratch);
    MatmulQ8Part parts[3];
    for (int p = 0; p < 3; ++p)
      parts[p] = {WeightView{types[p], ws[p].data(), n, outs[p]}, ys[p].data() + t0 * outs[p]};
    matmul_cpu_q8_auto(pool, parts, 3, xv, nt, scratch);
  };
  std::vector<std::vector<float>> batch, alone;
  for (int p = 0; p < 3; ++p) {
    batch.push_back(nan_vec(outs[p] * n_tok));
    alone.push_back(nan_vec(outs[p] * n_tok));
  }
  run(0, n_tok, batch);
  for (int64_t t = 0; t < n_tok; ++t) run(t, 1, alone);
  for (int p = 0; p < 3; ++p) {
    CAPTURE(p);
    CHECK(std::memcmp(batch[p].data(), alone[p].data(), sizeof(float) * outs[p] * n_tok) == 0);
  }
}
