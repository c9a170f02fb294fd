// The prefill path's f16 operands against their CPU references, bit for bit:
//   dequant_f16_launch, both kernels (Rows v2, Tile v3), every decodable
//     type: out == fp32_to_fp16(dequantize_row(W)) for every element (the
//     products are exact in f32, so there is no tolerance: kernels/dequant.cu
//     says why). Shapes: odd row counts (1, 3, 37, 333), n_in of 1, 3 and
//     more blocks, tiles that end mid-tile and mid-row, a weight whose byte
//     count is not a multiple of 16 (Q6_K, Q3_K, Q8_0 with odd rows: the
//     tile kernel's byte tail), and one that is exactly two tiles. The
//     output is poisoned (0xFFFF, an f16 NaN) with a guard past its end that
//     must stay poisoned.
//   convert_f32_f16_launch, vector and scalar, aligned and not (x + 1 takes
//     the scalar kernel), odd n: == fp32_to_fp16 on finite values, infs,
//     signed zeros, f16 subnormals and values that overflow to inf.
//   matmul_cuda_shared_x on each PrefillPath (legacy, tile, overlap) and
//     on the GEMV: y == the y of one matmul_cuda call per weight on the
//     legacy path, bitwise (the same f16 operands and the same GEMMs).
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "io/ggml_type.h"
#include "kernels/dequant.cuh"
#include "kernels/half.h"
#include "kernels/matmul.cuh"
#include "kernels/ref/quant.h"
#include "tests/gpu/gpu_test_util.h"

namespace {

using ls::DequantKernel;
using ls::GgmlType;
using ls::gpu_test::DevBuf;

constexpr GgmlType kTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q8_0,
                               GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                               GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K,
                               GgmlType::Q6_K};

std::mt19937& rng() {
  static std::mt19937 r(12345);
  return r;
}

std::vector<uint8_t> random_weight(GgmlType t, int64_t n_in, int64_t n_out) {
  const int64_t rb = static_cast<int64_t>(ls::ggml_row_bytes(t, n_in));
  std::vector<uint8_t> w(static_cast<size_t>(rb * n_out));
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> f(static_cast<size_t>(n_in));
  for (int64_t r = 0; r < n_out; ++r) {
    for (float& v : f) v = nd(rng());
    ls::quantize_row(t, f.data(), w.data() + r * rb, n_in);
  }
  return w;
}

// The reference: each row dequantized to f32 on the CPU, rounded to f16.
std::vector<uint16_t> reference(GgmlType t, const std::vector<uint8_t>& w, int64_t n_in,
                                int64_t n_out) {
  const int64_t rb = static_cast<int64_t>(ls::ggml_row_bytes(t, n_in));
  std::vector<float> row(static_cast<size_t>(n_in));
  std::vector<uint16_t> out(static_cast<size_t>(n_in * n_out));
  for (int64_t r = 0; r < n_out; ++r) {
    ls::dequantize_row(t, w.data() + r * rb, row.data(), n_in);
    for (int64_t i = 0; i < n_in; ++i) out[r * n_in + i] = ls::fp32_to_fp16(row[i]);
  }
  return out;
}

constexpr size_t kGuard = 4096;  // halves past the output that must stay poisoned

void check_dequant(GgmlType t, int64_t n_in, int64_t n_out) {
  const std::vector<uint8_t> w = random_weight(t, n_in, n_out);
  const std::vector<uint16_t> ref = reference(t, w, n_in, n_out);
  DevBuf<uint8_t> dw(w);  // exactly w.size() bytes: a tail not a multiple of 16 stays a tail
  DevBuf<uint16_t> out(ref.size() + kGuard);
  for (DequantKernel k : {DequantKernel::Rows, DequantKernel::Tile}) {
    out.poison();
    const ls::Status st = ls::dequant_f16_launch(t, dw.p, n_in, n_out, out.p, nullptr, k);
    REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().message));
    const std::vector<uint16_t> got = out.download();
    int64_t bad = 0, first = -1, guard_bad = 0;
    for (size_t i = 0; i < ref.size(); ++i)
      if (got[i] != ref[i]) {
        if (first < 0) first = static_cast<int64_t>(i);
        ++bad;
      }
    for (size_t i = ref.size(); i < got.size(); ++i) guard_bad += got[i] != 0xFFFF;
    INFO(ls::ggml_type_name(t), " kernel ", k == DequantKernel::Rows ? "rows" : "tile", " n_in ",
         n_in, " n_out ", n_out, " bytes ", w.size(), " first mismatch ", first, " got ",
         first >= 0 ? got[first] : 0, " want ", first >= 0 ? ref[first] : 0);
    CHECK(bad == 0);
    CHECK(guard_bad == 0);
  }
}

}  // namespace

TEST_CASE("cuda dequant f16: every type, both kernels, bitwise against the CPU reference") {
  for (GgmlType t : kTypes) {
    const int64_t be = ls::ggml_traits(t).block_elems;
    // Blocks per row: 1, 3 and 33 (legacy, floats: 8-value chunks) or 1, 3, 9 (K-quants).
    std::vector<int64_t> n_ins;
    if (be == 256)
      n_ins = {256, 768, 2304};
    else if (be == 32)
      n_ins = {32, 96, 1056};
    else
      n_ins = {8, 72, 1064};
    for (int64_t n_in : n_ins)
      for (int64_t n_out : {1, 3, 37, 333}) check_dequant(t, n_in, n_out);
  }
}

TEST_CASE("cuda dequant f16: tile edges (exactly two tiles, many tiles and a byte tail)") {
  for (GgmlType t :
       {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q8_0, GgmlType::Q3_K, GgmlType::Q5_0}) {
    check_dequant(t, 8192, 2);   // 2 tiles of 8192 values, no partial one
    check_dequant(t, 4096, 67);  // 34 tiles, the last half full; odd rows: a byte tail
    check_dequant(t, 14336, 5);  // rows of 1.75 tiles
  }
}

TEST_CASE("cuda convert f32 -> f16: vector and scalar, aligned and not, bitwise") {
  std::vector<float> base = ls::gpu_test::rand_floats(rng(), 100011, -4.f, 4.f);
  const float specials[] = {0.f,       -0.f,     INFINITY, -INFINITY, 65504.f, 65519.f,  65520.f,
                            1e6f,      -1e6f,    6e-8f,    3e-8f,     1e-5f,   -2.5e-6f, 1e-40f,
                            0.333333f, 1.00049f, 1.00048f, 2049.f,    -2051.f};
  for (size_t i = 0; i < sizeof(specials) / sizeof(float); ++i) base[i * 7] = specials[i];
  DevBuf<float> x(base);
  DevBuf<uint16_t> out(base.size() + kGuard);
  for (int64_t n : {1, 3, 4, 5, 8, 1023, 100003})
    for (int off : {0, 1})
      for (bool vec : {true, false}) {
        out.poison();
        const ls::Status st = ls::convert_f32_f16_launch(x.p + off, n, out.p, nullptr, vec);
        REQUIRE(st.ok());
        const std::vector<uint16_t> got = out.download();
        int64_t bad = 0, guard_bad = 0;
        for (int64_t i = 0; i < n; ++i) bad += got[i] != ls::fp32_to_fp16(base[i + off]);
        for (size_t i = static_cast<size_t>(n); i < got.size(); ++i) guard_bad += got[i] != 0xFFFF;
        INFO("n ", n, " offset ", off, " vector ", vec);
        CHECK(bad == 0);
        CHECK(guard_bad == 0);
      }
}

TEST_CASE("cuda matmul_cuda_shared_x: every prefill path gives the bits of single calls") {
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);  // blocking: ordered after the poisoning memsets
  const int64_t n_in = 2048;
  struct Spec {
    GgmlType t;
    int64_t n_out;
  };
  // Two groups, run back to back: the second's first dequantization reuses
  // the scratch the first group's last GEMM read.
  const Spec groups[2][3] = {{{GgmlType::Q4_K, 1536}, {GgmlType::Q6_K, 256}, {GgmlType::Q8_0, 37}},
                             {{GgmlType::Q6_K, 2048}, {GgmlType::Q4_K, 1024}, {GgmlType::F16, 40}}};
  std::vector<std::unique_ptr<DevBuf<uint8_t>>> wbufs;
  std::vector<ls::WeightView> ws;
  for (const auto& g : groups)
    for (const Spec& sp : g) {
      wbufs.push_back(std::make_unique<DevBuf<uint8_t>>(random_weight(sp.t, n_in, sp.n_out)));
      ws.push_back({sp.t, wbufs.back()->p, n_in, sp.n_out});
    }
  auto ctx_or = ls::MatmulContext::create(s, n_in * 2048);
  REQUIRE(ctx_or.has_value());
  ls::MatmulContext& ctx = **ctx_or;
  for (int64_t n_tok : {3, 9, 130}) {
    DevBuf<float> x(ls::gpu_test::rand_floats(rng(), static_cast<size_t>(n_tok * n_in)));
    std::vector<std::unique_ptr<DevBuf<float>>> ys;
    for (const auto& w : ws) ys.push_back(std::make_unique<DevBuf<float>>(n_tok * w.n_out));
    // The oracle: one call per weight on the legacy path.
    ctx.set_prefill_path(ls::PrefillPath::Legacy);
    std::vector<std::vector<float>> want;
    for (size_t i = 0; i < ws.size(); ++i) {
      ys[i]->poison();
      REQUIRE(ls::matmul_cuda(ctx, ws[i], x.p, n_tok, ys[i]->p, s).ok());
      REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
      want.push_back(ys[i]->download());
    }
    for (ls::PrefillPath p :
         {ls::PrefillPath::Legacy, ls::PrefillPath::Tile, ls::PrefillPath::Overlap}) {
      ctx.set_prefill_path(p);
      for (auto& y : ys) y->poison();
      for (int g = 0; g < 2; ++g) {
        float* out[3] = {ys[3 * g]->p, ys[3 * g + 1]->p, ys[3 * g + 2]->p};
        const ls::Status st = ls::matmul_cuda_shared_x(ctx, &ws[3 * g], out, 3, x.p, n_tok, s);
        REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().message));
      }
      REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
      for (size_t i = 0; i < ws.size(); ++i) {
        const std::vector<float> got = ys[i]->download();
        INFO("path ", ls::MatmulContext::prefill_path_name(p), " n_tok ", n_tok, " weight ", i, " ",
             ls::ggml_type_name(ws[i].type));
        CHECK(std::memcmp(got.data(), want[i].data(), got.size() * sizeof(float)) == 0);
      }
    }
  }
  ctx_or = ls::Error{"released"};
  REQUIRE(cudaStreamDestroy(s) == cudaSuccess);
}
