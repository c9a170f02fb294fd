// Tests of the CPU tier's GEMM (kernels/cpu/gemm_q8.h) and of the lane form
// it shares with the row-by-row dot (kernels/cpu/q8_lanes.h):
//   - bits: a token computed alone (width 1, the dot, portable) has the same
//     bits as the same token inside a batch, through the dot in 8-token
//     passes and through the GEMM with several blockings and thread counts,
//     on every variant this CPU runs (memcmp), for every type, with tails
//     (Q4_0 / Q8_0 rows that end inside a chunk), odd row counts and a
//     512-token batch;
//   - sums: weights and activations at their largest magnitudes (every
//     nibble 15, every 6-bit value 63, Q8_0 -128; x at ±127), where an int16
//     overflow in a kernel would show;
//   - the reference: every output of the GEMM within the bound of dot_q8.h
//     against matmul_act_q8_ref.
// Outputs are poisoned with NaN first.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/act_q8_cpu.h"
#include "kernels/cpu/dot_q8.h"
#include "kernels/cpu/gemm_q8.h"
#include "kernels/cpu/gemm_q8_amx.h"
#include "kernels/cpu/matmul_cpu.h"
#include "kernels/ref/act_q8.h"
#include "runtime/thread_pool.h"
#include "tests/unit/kernels/q8_bound.h"
#include "tests/unit/kernels/q8_variants.h"
#include "tests/unit/kernels/random_quant.h"

using namespace ls;

namespace {

using test::kQ8Types;
using test::q8_isas;

std::vector<float> nan_vec(size_t n) {
  return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN());
}

// Each token on its own: quantized alone, one row-by-row dot of width 1.
std::vector<float> alone(const WeightView& w, const std::vector<float>& x, int64_t n_tok,
                         CpuIsa isa) {
  ThreadPool pool(1);
  std::vector<float> y = nan_vec(n_tok * w.n_out);
  for (int64_t t = 0; t < n_tok; ++t) {
    ActQ8Buffer buf;
    buf.reserve(1, w.n_in);
    quantize_act_q8_cpu(x.data() + t * w.n_in, 1, w.n_in, buf, isa);
    matmul_cpu_q8(pool, w, buf.view(w.n_in), 1, y.data() + t * w.n_out, isa);
  }
  return y;
}

std::vector<float> gemm(const WeightView& w, const ActQ8View& xv, int64_t n_tok, CpuIsa isa,
                        ThreadPool& pool, const GemmQ8Tuning& tune) {
  std::vector<float> y = nan_vec(n_tok * w.n_out);
  GemmQ8Scratch scratch;
  const MatmulQ8Part part{w, y.data()};
  gemm_q8_parts(pool, &part, 1, xv, n_tok, scratch, isa, tune);
  return y;
}

// The AMX path: emulated on every CPU, and the tile unit where this one has it.
std::vector<GemmQ8Amx> amx_modes() {
  std::vector<GemmQ8Amx> v{GemmQ8Amx::Emulated};
  if (cpu_amx_usable())
    v.push_back(GemmQ8Amx::On);
  else
    MESSAGE("SKIPPED: amx on the tile unit (no AMX on this CPU; emulated instead)");
  return v;
}

GemmQ8Tuning with_amx(GemmQ8Tuning t, GemmQ8Amx a) {
  t.amx = a;
  return t;
}

// The AVX-512 VNNI tile over token pairs (the default where this CPU runs it).
bool pairs_here() {
  static const bool ok = [] {
    if (!gemm_q8_pairs_supported())
      MESSAGE("SKIPPED: avx512vnni-pairs (no AVX-512 VNNI and DQ on this CPU)");
    return gemm_q8_pairs_supported();
  }();
  return ok;
}

// The AVX2 tile with AVX-VNNI.
bool avx_vnni_here() {
  static const bool ok = [] {
    if (!cpu_has_avx_vnni()) MESSAGE("SKIPPED: avx2-vnni (no AVX-VNNI on this CPU)");
    return cpu_has_avx_vnni();
  }();
  return ok;
}

GemmQ8Tuning with_pairs(GemmQ8Tuning t, int pairs = 1) {
  t.pairs = pairs;
  t.amx = GemmQ8Amx::Off;
  return t;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), 4 * a.size()) == 0;
}

// Rows of the largest magnitudes the type holds (see the top).
std::vector<uint8_t> extreme_weight(GgmlType t, int64_t n_in, int64_t n_out, std::mt19937& rng) {
  std::vector<uint8_t> w = test::random_weight(t, n_in, n_out, rng);  // finite scales
  const GgmlTypeTraits tr = ggml_traits(t);
  const auto halves = test::half_fields(t);
  for (size_t off = 0; off < w.size(); off += tr.block_bytes)
    for (size_t i = 0; i < tr.block_bytes; ++i) {
      bool half = false;
      for (size_t f : halves) half |= i == f || i == f + 1;
      if (!half) w[off + i] = t == GgmlType::Q8_0 ? 0x80 : 0xFF;
    }
  return w;
}

}  // namespace

TEST_CASE("cpu_gemm_q8: a token's bits are the same alone, in a batch, on every variant") {
  std::mt19937 rng(2024);
  ThreadPool pool1(1), pool3(3);
  const auto vs = q8_isas();
  struct Shape {
    int64_t n_in, n_out, n_tok;
  };
  for (GgmlType t : kQ8Types) {
    const bool legacy = t == GgmlType::Q4_0 || t == GgmlType::Q8_0;
    // Q4_0 / Q8_0: rows of 96 and 800 end inside a chunk.
    std::vector<Shape> shapes = {{512, 37, 19}, {1024, 5, 70}};
    if (legacy) shapes = {{96, 37, 19}, {800, 5, 70}, {512, 9, 11}};
    for (const Shape& s : shapes) {
      for (bool extreme : {false, true}) {
        const auto wb = extreme ? extreme_weight(t, s.n_in, s.n_out, rng)
                                : test::random_weight(t, s.n_in, s.n_out, rng);
        const WeightView w{t, wb.data(), s.n_in, s.n_out};
        auto x = test::random_x(s.n_in * s.n_tok, rng);
        if (extreme)  // every block's largest value 127 after quantizing, signs mixed
          for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 7 == 3) ? -8.0f : 8.0f;
        const std::string type = ggml_type_name(t);
        CAPTURE(type);
        CAPTURE(s.n_in);
        CAPTURE(s.n_out);
        CAPTURE(s.n_tok);
        CAPTURE(extreme);
        const std::vector<float> want = alone(w, x, s.n_tok, CpuIsa::Portable);
        for (CpuIsa isa : vs) {
          const std::string variant = gemm_q8_kernel(isa).name;
          CAPTURE(variant);
          CHECK(same_bits(alone(w, x, s.n_tok, isa), want));
          ActQ8Buffer buf;
          buf.reserve(s.n_tok, s.n_in);
          quantize_act_q8_cpu(x.data(), s.n_tok, s.n_in, buf, isa);
          const ActQ8View xv = buf.view(s.n_in);
          // The dot in passes of 8 tokens.
          std::vector<float> y = nan_vec(s.n_tok * s.n_out);
          matmul_cpu_q8(pool3, w, xv, s.n_tok, y.data(), isa);
          CHECK(same_bits(y, want));
          // The GEMM: one token block or several (a panel budget of one
          // tile's tokens), rows in one range or many, 1 or 3 threads.
          CHECK(same_bits(gemm(w, xv, s.n_tok, isa, pool1, {}), want));
          CHECK(same_bits(gemm(w, xv, s.n_tok, isa, pool3, {1, 1}), want));
          CHECK(same_bits(gemm(w, xv, s.n_tok, isa, pool3, {3 * 416 * 4, 4}), want));
          if (isa == CpuIsa::Avx512 && pairs_here())
            for (int p : {0, 1}) {  // the one-token tile and the pairs tile
              const std::string pairs = p ? "avx512vnni-pairs" : "avx512vnni";
              CAPTURE(pairs);
              CHECK(same_bits(gemm(w, xv, s.n_tok, isa, pool1, with_pairs({}, p)), want));
              CHECK(same_bits(gemm(w, xv, s.n_tok, isa, pool3, with_pairs({1, 1}, p)), want));
              CHECK(same_bits(gemm(w, xv, s.n_tok, isa, pool3, with_pairs({3 * 416 * 4, 4}, p)),
                              want));
            }
          if (isa == CpuIsa::Avx2) {
            // The AVX2 tile with and without AVX-VNNI (the default where the
            // CPU has it).
            GemmQ8Tuning plain, vnni;
            plain.avx_vnni = 0;
            vnni.avx_vnni = 1;
            CHECK(same_bits(gemm(w, xv, s.n_tok, isa, pool1, plain), want));
            CHECK(same_bits(gemm(w, xv, s.n_tok, isa, pool3, plain), want));
            if (avx_vnni_here()) {
              CHECK(same_bits(gemm(w, xv, s.n_tok, isa, pool1, vnni), want));
              GemmQ8Tuning small = vnni;  // several token blocks and row ranges
              small.panel_bytes = 3 * 416 * 4;
              small.rows_per_task = 4;
              CHECK(same_bits(gemm(w, xv, s.n_tok, isa, pool3, small), want));
            }
          }
          for (GemmQ8Amx a : amx_modes()) {
            const std::string amx = a == GemmQ8Amx::On ? "amx" : "amx emulated";
            CAPTURE(amx);
            CHECK(same_bits(gemm(w, xv, s.n_tok, isa, pool1, with_amx({}, a)), want));
            CHECK(same_bits(gemm(w, xv, s.n_tok, isa, pool3, with_amx({1, 1}, a)), want));
            CHECK(same_bits(gemm(w, xv, s.n_tok, isa, pool3, with_amx({3 * 416 * 4, 4}, a)), want));
            // Every form of the AMX path's steps (GemmQ8AmxForm): the tile unit
            // one or two steps ahead of the float step, chunk-major or lane-major.
            for (int ahead : {1, 2})
              for (int lanes : {0, 1}) {
                CAPTURE(ahead);
                CAPTURE(lanes);
                GemmQ8Tuning f = with_amx({}, a), f_small = with_amx({1, 1}, a);
                f.amx_ahead = f_small.amx_ahead = ahead;
                f.amx_lanes = f_small.amx_lanes = lanes;
                CHECK(same_bits(gemm(w, xv, s.n_tok, isa, pool1, f), want));
                CHECK(same_bits(gemm(w, xv, s.n_tok, isa, pool3, f_small), want));
              }
          }
        }
      }
    }
  }
}

TEST_CASE("cpu_gemm_q8: the AVX2 dot with AVX-VNNI has the plain AVX2 dot's bits, 1-8 tokens") {
  if (!cpu_isa_supported(CpuIsa::Avx2)) {
    MESSAGE("SKIPPED: the AVX2 dot (no AVX2 on this CPU)");
    return;
  }
  if (!avx_vnni_here()) return;
  std::mt19937 rng(2026);
  for (GgmlType t : kQ8Types) {
    const bool legacy = t == GgmlType::Q4_0 || t == GgmlType::Q8_0;
    for (int64_t n : legacy ? std::vector<int64_t>{96, 800, 1024} : std::vector<int64_t>{256, 1536})
      for (bool extreme : {false, true}) {
        const int64_t n_out = 5, n_tok = 11;
        const auto wb =
            extreme ? extreme_weight(t, n, n_out, rng) : test::random_weight(t, n, n_out, rng);
        auto x = test::random_x(n * n_tok, rng);
        if (extreme)
          for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 7 == 3) ? -8.0f : 8.0f;
        ActQ8Buffer buf;
        buf.reserve(n_tok, n);
        quantize_act_q8_cpu(x.data(), n_tok, n, buf, CpuIsa::Avx2);
        const ActQ8View xv = buf.view(n);
        const uint64_t rb = ggml_row_bytes(t, n);
        const std::string type = ggml_type_name(t);
        CAPTURE(type);
        CAPTURE(n);
        CAPTURE(extreme);
        for (int width = 1; width <= kDotMaxTokens; ++width) {
          CAPTURE(width);
          std::vector<float> plain = nan_vec(n_out * n_tok), vnni = nan_vec(n_out * n_tok),
                             port = nan_vec(n_out * n_tok);
          const int64_t t0 = n_tok - width;
          for (int64_t r = 0; r < n_out; ++r) {
            // The last row has no next one: no prefetch, as the engine's.
            const RowPrefetch pf =
                r + 1 < n_out ? RowPrefetch{wb.data() + (r + 1) * rb, static_cast<int64_t>(rb), 0}
                              : RowPrefetch{};
            const uint8_t* row = wb.data() + r * rb;
            dot_q8_avx2_plain(t, row, xv, t0, width, &plain[t0 * n_out + r], n_out, pf);
            dot_q8_avx2_vnni(t, row, xv, t0, width, &vnni[t0 * n_out + r], n_out, pf);
            dot_q8_scalar(t, row, xv, t0, width, &port[t0 * n_out + r], n_out, pf);
          }
          CHECK(same_bits(vnni, plain));
          CHECK(same_bits(vnni, port));
        }
      }
  }
}

TEST_CASE("cpu_gemm_q8: the direct tile has the bits of a token alone, 1-8 tokens, both forms") {
  const GgmlType kDirect[] = {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q8_0};
  bool all = cpu_isa_supported(CpuIsa::Avx512);
  for (GgmlType t : kDirect) all = all && gemm_q8_direct_supported(t, 256);
  if (!all) {
    MESSAGE("SKIPPED: the direct tile (no AVX-512 VNNI and DQ on this CPU)");
    return;
  }
  std::mt19937 rng(88);
  ThreadPool pool1(1), pool3(3);
  // pairs_min 2: the pairs form from 2 tokens, 9: the rows form at every
  // width (one token is the rows form in both).
  auto direct = [](GemmQ8Tuning t, int pairs_min) {
    t.direct = 1;
    t.pairs = 1;
    t.amx = GemmQ8Amx::Off;
    t.direct_pairs_min = pairs_min;
    return t;
  };
  // Rows odd and even (a last row alone), 1-8 tokens (odd ones: the pairs
  // panel's repeated token), ranges of 1, 4 or all rows.
  // Q8_0 rows of 800 values end inside a chunk: packed (direct refused), the same bits.
  CHECK_FALSE(gemm_q8_direct_supported(GgmlType::Q8_0, 800));
  for (GgmlType t : kDirect)
    for (int64_t n_in : {256, 1024, 800})
      for (int64_t n_out : {1, 2, 37})
        for (bool extreme : {false, true}) {
          if (n_in == 800 && t != GgmlType::Q8_0) continue;
          const std::string type = ggml_type_name(t);
          CAPTURE(type);
          const auto wb = extreme ? extreme_weight(t, n_in, n_out, rng)
                                  : test::random_weight(t, n_in, n_out, rng);
          const WeightView w{t, wb.data(), n_in, n_out};
          for (int64_t n_tok = 1; n_tok <= kGemmQ8DirectToks; ++n_tok) {
            auto x = test::random_x(n_in * n_tok, rng);
            if (extreme)
              for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 5 == 1) ? -8.0f : 8.0f;
            CAPTURE(n_in);
            CAPTURE(n_out);
            CAPTURE(n_tok);
            CAPTURE(extreme);
            const std::vector<float> want = alone(w, x, n_tok, CpuIsa::Portable);
            ActQ8Buffer buf;
            buf.reserve(n_tok, n_in);
            quantize_act_q8_cpu(x.data(), n_tok, n_in, buf, CpuIsa::Avx512);
            const ActQ8View xv = buf.view(n_in);
            for (int pairs_min : {2, 9}) {
              CAPTURE(pairs_min);
              CHECK(same_bits(gemm(w, xv, n_tok, CpuIsa::Avx512, pool1, direct({}, pairs_min)),
                              want));
              CHECK(same_bits(gemm(w, xv, n_tok, CpuIsa::Avx512, pool3, direct({0, 1}, pairs_min)),
                              want));
              CHECK(same_bits(gemm(w, xv, n_tok, CpuIsa::Avx512, pool3, direct({0, 4}, pairs_min)),
                              want));
            }
          }
        }
  // Parts of types it takes and does not in one call.
  const int64_t n_in = 512, n_tok = 7;
  const GgmlType types[3] = {GgmlType::Q4_K, GgmlType::Q4_0, GgmlType::Q6_K};
  const int64_t n_outs[3] = {33, 8, 17};
  std::vector<std::vector<uint8_t>> wb;
  for (int p = 0; p < 3; ++p) wb.push_back(test::random_weight(types[p], n_in, n_outs[p], rng));
  const auto x = test::random_x(n_in * n_tok, rng);
  ActQ8Buffer buf;
  buf.reserve(n_tok, n_in);
  quantize_act_q8_cpu(x.data(), n_tok, n_in, buf, CpuIsa::Avx512);
  std::vector<std::vector<float>> got(3);
  MatmulQ8Part parts[3];
  for (int p = 0; p < 3; ++p) {
    got[p] = nan_vec(n_outs[p] * n_tok);
    parts[p] = {{types[p], wb[p].data(), n_in, n_outs[p]}, got[p].data()};
  }
  GemmQ8Scratch scratch;
  gemm_q8_parts(pool3, parts, 3, buf.view(n_in), n_tok, scratch, CpuIsa::Avx512, direct({0, 6}, 0));
  for (int p = 0; p < 3; ++p) {
    CAPTURE(p);
    CHECK(same_bits(got[p], alone(parts[p].w, x, n_tok, CpuIsa::Portable)));
  }
}

TEST_CASE("cpu_gemm_q8: matmul_cpu_q8_auto takes each part by its own threshold, same bits") {
  // Q4_K (the direct tile from 4 tokens where it runs) beside Q4_0 (the
  // dot below 8) in one call: at every width from 1 to 9 each part equals
  // the part computed alone, token by token.
  std::mt19937 rng(404);
  ThreadPool pool(2);
  const int64_t n_in = 512;
  const GgmlType types[2] = {GgmlType::Q4_K, GgmlType::Q4_0};
  const int64_t n_outs[2] = {13, 6};
  std::vector<std::vector<uint8_t>> wb;
  for (int p = 0; p < 2; ++p) wb.push_back(test::random_weight(types[p], n_in, n_outs[p], rng));
  for (int64_t n_tok = 1; n_tok <= 9; ++n_tok) {
    CAPTURE(n_tok);
    const auto x = test::random_x(n_in * n_tok, rng);
    CpuMatmulScratch scratch(pool.size(), n_in);
    scratch.act().reserve(n_tok, n_in);
    quantize_act_q8_cpu(x.data(), n_tok, n_in, scratch.act(), cpu_isa_active());
    std::vector<std::vector<float>> got(2);
    MatmulQ8Part parts[2];
    for (int p = 0; p < 2; ++p) {
      got[p] = nan_vec(n_outs[p] * n_tok);
      parts[p] = {{types[p], wb[p].data(), n_in, n_outs[p]}, got[p].data()};
    }
    matmul_cpu_q8_auto(pool, parts, 2, scratch.act().view(n_in), n_tok, scratch);
    for (int p = 0; p < 2; ++p) {
      CAPTURE(p);
      CHECK(same_bits(got[p], alone(parts[p].w, x, n_tok, CpuIsa::Portable)));
    }
  }
}

TEST_CASE("cpu_gemm_q8: a 512-token batch has each token's bits alone") {
  std::mt19937 rng(512);
  ThreadPool pool(2);
  const int64_t n_in = 256, n_out = 6, n_tok = 512;
  for (GgmlType t : {GgmlType::Q4_K, GgmlType::Q6_K}) {
    const auto wb = test::random_weight(t, n_in, n_out, rng);
    const WeightView w{t, wb.data(), n_in, n_out};
    const auto x = test::random_x(n_in * n_tok, rng);
    const std::vector<float> want = alone(w, x, n_tok, CpuIsa::Portable);
    for (CpuIsa isa : q8_isas()) {
      const std::string type = ggml_type_name(t), variant = gemm_q8_kernel(isa).name;
      CAPTURE(type);
      CAPTURE(variant);
      ActQ8Buffer buf;
      buf.reserve(n_tok, n_in);
      quantize_act_q8_cpu(x.data(), n_tok, n_in, buf, isa);
      CHECK(same_bits(gemm(w, buf.view(n_in), n_tok, isa, pool, {}), want));
      for (GemmQ8Amx a : amx_modes())
        CHECK(same_bits(gemm(w, buf.view(n_in), n_tok, isa, pool, with_amx({}, a)), want));
    }
  }
}

TEST_CASE("cpu_gemm_q8: every type and variant matches matmul_act_q8_ref within the bound") {
  std::mt19937 rng(77);
  ThreadPool pool(2);
  double worst = 0;
  for (GgmlType t : kQ8Types) {
    const bool legacy = t == GgmlType::Q4_0 || t == GgmlType::Q8_0;
    const int64_t n_in = legacy ? 800 : 768, n_out = 11, n_tok = 13;
    const auto wb = test::random_weight(t, n_in, n_out, rng);
    const WeightView w{t, wb.data(), n_in, n_out};
    const uint64_t row_bytes = ggml_row_bytes(t, n_in);
    const auto x = test::random_x(n_in * n_tok, rng);
    std::vector<float> ref(n_out * n_tok);
    matmul_act_q8_ref(w, x.data(), n_tok, ref.data());
    std::vector<int8_t> q(n_in * n_tok);
    std::vector<float> d(n_in / 32 * n_tok);
    for (int64_t k = 0; k < n_tok; ++k)
      quantize_act_q8_ref(x.data() + k * n_in, n_in, q.data() + k * n_in,
                          d.data() + k * (n_in / 32));
    for (CpuIsa isa : q8_isas()) {
      const std::string type = ggml_type_name(t), variant = gemm_q8_kernel(isa).name;
      CAPTURE(type);
      CAPTURE(variant);
      ActQ8Buffer buf;
      buf.reserve(n_tok, n_in);
      quantize_act_q8_cpu(x.data(), n_tok, n_in, buf, isa);
      const std::vector<float> y = gemm(w, buf.view(n_in), n_tok, isa, pool, {});
      int bad = 0;
      for (int64_t k = 0; k < n_tok; ++k)
        for (int64_t o = 0; o < n_out; ++o) {
          const double bound = test::q8_bound(
              n_in, test::q8_bound_t(t, wb.data() + o * row_bytes, n_in, q.data() + k * n_in,
                                     d.data() + k * (n_in / 32)));
          const double err = std::fabs(double(y[k * n_out + o]) - ref[k * n_out + o]);
          if (!(err <= bound)) ++bad;  // NaN (unwritten) fails too
          if (bound > 0) worst = std::max(worst, err / bound);
        }
      CHECK(bad == 0);
    }
  }
  MESSAGE("cpu_gemm_q8: largest |y - y_ref| / bound = " << worst);
  CHECK(worst > 0);  // the comparison ran
}

TEST_CASE("cpu_gemm_q8: parts sharing x are each the part alone") {
  // q/k/v in Q4_K_M: Q4_K, Q4_K, Q6_K; rows that do not divide the ranges.
  std::mt19937 rng(5);
  ThreadPool pool(2);
  const int64_t n_in = 512, n_tok = 10;
  const GgmlType types[3] = {GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q6_K};
  const int64_t n_outs[3] = {33, 8, 17};
  std::vector<std::vector<uint8_t>> wb;
  for (int p = 0; p < 3; ++p) wb.push_back(test::random_weight(types[p], n_in, n_outs[p], rng));
  const auto x = test::random_x(n_in * n_tok, rng);
  for (CpuIsa isa : q8_isas()) {
    ActQ8Buffer buf;
    buf.reserve(n_tok, n_in);
    quantize_act_q8_cpu(x.data(), n_tok, n_in, buf, isa);
    const ActQ8View xv = buf.view(n_in);
    std::vector<std::vector<float>> got(3);
    MatmulQ8Part parts[3];
    for (int p = 0; p < 3; ++p) {
      got[p] = nan_vec(n_outs[p] * n_tok);
      parts[p] = {{types[p], wb[p].data(), n_in, n_outs[p]}, got[p].data()};
    }
    GemmQ8Scratch scratch;
    gemm_q8_parts(pool, parts, 3, xv, n_tok, scratch, isa, {0, 6});
    const std::string variant = gemm_q8_kernel(isa).name;
    CAPTURE(variant);
    for (int p = 0; p < 3; ++p)
      CHECK(same_bits(got[p], gemm(parts[p].w, xv, n_tok, isa, pool, {})));
  }
}

TEST_CASE("cpu_gemm_q8: the AVX2 packers give the portable packers' bytes") {
  if (!cpu_isa_supported(CpuIsa::Avx2)) {
    MESSAGE("SKIPPED: avx2 (not on this CPU)");
    return;
  }
  std::mt19937 rng(8);
  for (GgmlType t : kQ8Types) {
    const bool legacy = t == GgmlType::Q4_0 || t == GgmlType::Q8_0;
    for (int64_t n : legacy ? std::vector<int64_t>{512, 800} : std::vector<int64_t>{768}) {
      const int64_t nc = gemm_q8_chunks(n), n_tok = 3;
      const auto wb = test::random_weight(t, n, 1, rng);
      const std::string type = ggml_type_name(t);
      CAPTURE(type);
      CAPTURE(n);
      // Interleaved (the AVX2 / AVX-512 tiles) and natural order (AMX).
      for (bool natural : {false, true}) {
        CAPTURE(natural);
        std::vector<GemmQ8WChunk> a(nc), b(nc);
        std::memset(a.data(), 0x5A, a.size() * sizeof(GemmQ8WChunk));
        std::memset(b.data(), 0xA5, b.size() * sizeof(GemmQ8WChunk));
        gemm_q8_pack_w(t, wb.data(), n, a.data(), CpuIsa::Portable, natural);
        gemm_q8_pack_w(t, wb.data(), n, b.data(), CpuIsa::Avx2, natural);
        CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(GemmQ8WChunk)) == 0);
      }
      if (t != GgmlType::Q4_0) continue;  // x does not depend on the type
      const auto x = test::random_x(n * n_tok, rng);
      ActQ8Buffer buf;
      buf.reserve(n_tok, n);
      quantize_act_q8_cpu(x.data(), n_tok, n, buf);
      std::vector<GemmQ8XChunk> xa(nc * n_tok), xb(nc * n_tok);
      std::memset(xa.data(), 0x5A, xa.size() * sizeof(GemmQ8XChunk));
      std::memset(xb.data(), 0xA5, xb.size() * sizeof(GemmQ8XChunk));
      gemm_q8_pack_x(buf.view(n), 0, n_tok, xa.data(), CpuIsa::Portable);
      gemm_q8_pack_x(buf.view(n), 0, n_tok, xb.data(), CpuIsa::Avx2);
      CHECK(std::memcmp(xa.data(), xb.data(), xa.size() * sizeof(GemmQ8XChunk)) == 0);
    }
  }
}
