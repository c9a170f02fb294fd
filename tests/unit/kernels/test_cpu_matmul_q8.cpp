// Tests of the CPU tier's 8-bit activation path (kernels/cpu/act_q8_cpu.h,
// kernels/cpu/dot_q8.h, matmul_cpu_q8): the quantizer bit for bit against
// quantize_act_q8_ref, and every type × every dot variant this CPU runs
// (portable, avx2, avx512vnni) × odd shapes (n_out 1, 7, 37, 133; several
// n_in, including 32-multiples for Q4_0 / Q8_0 that leave a tail past the
// 256-value chunks; n_tok 1..9, 9 crossing the 8-token tile) against
// matmul_act_q8_ref, within the bound stated in dot_q8.h (q8_bound.h has
// it). The largest ratio to the bound seen is printed. Outputs
// are poisoned with NaN first; results must not depend on the thread count.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/act_q8.h"
#include "kernels/cpu/act_q8_cpu.h"
#include "kernels/cpu/dot_q8.h"
#include "kernels/cpu/matmul_cpu.h"
#include "kernels/cpu/unpack.h"
#include "kernels/half.h"
#include "kernels/quant_blocks.h"
#include "kernels/ref/act_q8.h"
#include "kernels/ref/quant.h"
#include "runtime/thread_pool.h"
#include "tests/unit/kernels/q8_bound.h"
#include "tests/unit/kernels/q8_variants.h"
#include "tests/unit/kernels/random_quant.h"

using namespace ls;

namespace {

using test::kQ8Types;
using test::q8_isas;

using test::random_weight;
using test::random_x;

}  // namespace

TEST_CASE(
    "cpu_matmul_q8: quantize_act_q8_cpu is quantize_act_q8_ref bit for bit, with exact sums") {
  std::mt19937 rng(99);
  for (int64_t n : {32, 96, 4096}) {
    for (int64_t n_tok : {1, 3}) {
      auto x = random_x(n * n_tok, rng);
      for (auto& v : x) v *= 3.0f;
      for (int i = 0; i < 32; ++i) x[i] = 0.0f;  // a zero block
      if (n > 32) {
        // Ties: amax 127 gives d = 1, id = 1, and k + 0.5 rounds to even.
        x[32] = 127.0f;
        for (int i = 1; i < 32; ++i) x[32 + i] = -63.5f + 4.0f * i;
      }
      for (CpuIsa isa : {CpuIsa::Portable, CpuIsa::Avx2, CpuIsa::Avx512}) {
        if (!cpu_isa_supported(isa)) continue;
        CAPTURE(n);
        CAPTURE(n_tok);
        const std::string isa_name = cpu_isa_name(isa);
        CAPTURE(isa_name);
        ActQ8Buffer buf;
        buf.reserve(n_tok, n);
        std::fill(buf.q(), buf.q() + n * n_tok, int8_t(99));
        quantize_act_q8_cpu(x.data(), n_tok, n, buf, isa);
        const ActQ8View v = buf.view(n);
        std::vector<int8_t> q(n);
        std::vector<float> d(n / 32);
        for (int64_t t = 0; t < n_tok; ++t) {
          quantize_act_q8_ref(x.data() + t * n, n, q.data(), d.data());
          CHECK(std::memcmp(q.data(), v.q_at(t), n) == 0);
          CHECK(std::memcmp(d.data(), v.d_at(t), 4 * (n / 32)) == 0);
          for (int64_t b = 0; b < n / 32; ++b) {
            int s0 = 0, s1 = 0;
            for (int i = 0; i < 16; ++i) s0 += q[32 * b + i], s1 += q[32 * b + 16 + i];
            CHECK(v.ds_at(t)[b] == d[b] * float(s0 + s1));
            CHECK(v.ds16_at(t)[2 * b] == d[b] * float(s0));
            CHECK(v.ds16_at(t)[2 * b + 1] == d[b] * float(s1));
          }
          // qk4: each whole chunk of 256 with its blocks in kActQ8K4Order.
          for (int64_t c = 0; c < n / 256; ++c)
            for (int p = 0; p < 8; ++p)
              CHECK(std::memcmp(v.qk4_at(t) + 256 * c + 32 * p,
                                q.data() + 256 * c + 32 * kActQ8K4Order[p], 32) == 0);
          // qil: each whole chunk's blocks interleaved by 4-byte groups.
          for (int64_t c = 0; c < n / 256; ++c)
            for (int g = 0; g < 8; ++g)
              for (int j = 0; j < 8; ++j)
                CHECK(std::memcmp(v.qil_at(t) + 256 * c + 32 * g + 4 * j,
                                  q.data() + 256 * c + 32 * j + 4 * g, 4) == 0);
        }
      }
    }
  }
}

TEST_CASE("cpu_matmul_q8: every type and variant matches matmul_act_q8_ref within the bound") {
  std::mt19937 rng(4321);
  ThreadPool pool(3), pool1(1);
  const auto isas = q8_isas();
  double worst = 0;
  for (GgmlType t : kQ8Types) {
    const bool legacy = t == GgmlType::Q4_0 || t == GgmlType::Q8_0;
    std::vector<int64_t> n_ins = {256, 768, 2048};
    if (legacy) n_ins = {32, 96, 288, 800};
    for (int64_t n_in : n_ins) {
      for (int64_t n_out : {1, 7, 37, 133}) {
        const auto wbytes = random_weight(t, n_in, n_out, rng);
        const WeightView w{t, wbytes.data(), n_in, n_out};
        const uint64_t row_bytes = ggml_row_bytes(t, n_in);
        for (int64_t n_tok = 1; n_tok <= 9; ++n_tok) {
          // All token counts at one n_out; the tile edges (1, 8, 9) elsewhere.
          if (n_out != 37 && n_tok != 1 && n_tok != 8 && n_tok != 9) continue;
          const auto x = random_x(n_in * n_tok, rng);
          std::vector<float> ref(n_out * n_tok);
          matmul_act_q8_ref(w, x.data(), n_tok, ref.data());
          // T per (token, output), from the reference's quantized x.
          std::vector<int8_t> q(n_in * n_tok);
          std::vector<float> d(n_in / 32 * n_tok);
          for (int64_t k = 0; k < n_tok; ++k)
            quantize_act_q8_ref(x.data() + k * n_in, n_in, q.data() + k * n_in,
                                d.data() + k * (n_in / 32));
          ActQ8Buffer buf;
          buf.reserve(n_tok, n_in);
          quantize_act_q8_cpu(x.data(), n_tok, n_in, buf);
          const ActQ8View xv = buf.view(n_in);
          for (CpuIsa isa : isas) {
            const std::string type = ggml_type_name(t), variant = dot_q8_name(isa);
            CAPTURE(type);
            CAPTURE(variant);
            CAPTURE(n_in);
            CAPTURE(n_out);
            CAPTURE(n_tok);
            std::vector<float> y(n_out * n_tok, std::numeric_limits<float>::quiet_NaN());
            matmul_cpu_q8(pool, w, xv, n_tok, y.data(), isa);
            int bad = 0;
            for (int64_t k = 0; k < n_tok; ++k)
              for (int64_t o = 0; o < n_out; ++o) {
                const double tb = test::q8_bound_t(t, wbytes.data() + o * row_bytes, n_in,
                                                   q.data() + k * n_in, d.data() + k * (n_in / 32));
                const double bound = test::q8_bound(n_in, tb);
                const double err = std::fabs(double(y[k * n_out + o]) - ref[k * n_out + o]);
                if (!(err <= bound)) ++bad;  // NaN (unwritten) fails too
                if (bound > 0) worst = std::max(worst, err / bound);
              }
            CHECK(bad == 0);
            // The same bits on one thread: rows are computed in a fixed order.
            std::vector<float> y1(n_out * n_tok, std::numeric_limits<float>::quiet_NaN());
            matmul_cpu_q8(pool1, w, xv, n_tok, y1.data(), isa, {1, 2});
            CHECK(std::memcmp(y.data(), y1.data(), 4 * y.size()) == 0);
          }
        }
      }
    }
  }
  MESSAGE("cpu_matmul_q8: largest |y - y_ref| / bound = " << worst);
  CHECK(worst > 0);  // the comparison ran
}

TEST_CASE("cpu_matmul_q8: close to the f32 product (the rounding of x only)") {
  // act_q8's own cost (tests/unit/kernels/test_act_q8.cpp): NMSE against the
  // exact f32 product <= 1e-4 for normal activations; here through the fast path.
  std::mt19937 rng(77);
  ThreadPool pool(2);
  for (GgmlType t : kQ8Types) {
    const int64_t n_in = 1024, n_out = 64, n_tok = 2;
    const auto wbytes = random_weight(t, n_in, n_out, rng);
    const WeightView w{t, wbytes.data(), n_in, n_out};
    const auto x = random_x(n_in * n_tok, rng);
    std::vector<float> ref(n_out * n_tok), y(n_out * n_tok);
    std::vector<std::vector<float>> f32_scratch(pool.size(), std::vector<float>(n_in));
    matmul_f32(pool, w, x.data(), n_tok, ref.data(), f32_scratch);
    CpuMatmulScratch scratch(pool.size(), n_in);
    const ActQ8View xv = matmul_cpu_quantize(x.data(), n_tok, n_in, scratch);
    matmul_cpu_q8(pool, w, xv, n_tok, y.data());
    double num = 0, den = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      num += (double(y[i]) - ref[i]) * (double(y[i]) - ref[i]);
      den += double(ref[i]) * ref[i];
    }
    const std::string type = ggml_type_name(t);
    CAPTURE(type);
    CHECK(num / den <= 1e-4);
  }
}

TEST_CASE("cpu_matmul_q8_parts: one job over several weights = each on its own, bit for bit") {
  // q/k/v and gate/up run as the parts of one job, ranges claimed across the
  // parts' boundaries; every row must still be the same fixed-order dot.
  // Mixed types (Q4_K_M's q/k are Q4_K, v Q6_K), row counts that do not
  // divide the claims, thread counts 1..4, split divisors 1..16, prefetch
  // 0..3 rows ahead, n_tok 1, 3 and 9 (a tile and a remainder).
  std::mt19937 rng(99);
  const int64_t n_in = 512;
  const GgmlType types[3] = {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q8_0};
  const int64_t n_outs[3] = {203, 9, 64};
  std::vector<std::vector<uint8_t>> wb;
  for (int p = 0; p < 3; ++p) wb.push_back(random_weight(types[p], n_in, n_outs[p], rng));
  for (int64_t n_tok : {1, 3, 9}) {
    const auto x = random_x(n_in * n_tok, rng);
    ActQ8Buffer buf;
    buf.reserve(n_tok, n_in);
    quantize_act_q8_cpu(x.data(), n_tok, n_in, buf);
    const ActQ8View xv = buf.view(n_in);
    ThreadPool pool1(1);
    std::vector<std::vector<float>> want(3);
    for (int p = 0; p < 3; ++p) {
      want[p].assign(n_outs[p] * n_tok, 0.0f);
      matmul_cpu_q8(pool1, {types[p], wb[p].data(), n_in, n_outs[p]}, xv, n_tok, want[p].data());
    }
    for (int threads : {1, 2, 4})
      for (int tasks : {1, 3, 16})
        for (int pf : {0, 1, 3}) {
          ThreadPool pool(threads);
          std::vector<std::vector<float>> got(3);
          MatmulQ8Part parts[3];
          for (int p = 0; p < 3; ++p) {
            got[p].assign(n_outs[p] * n_tok, std::numeric_limits<float>::quiet_NaN());
            parts[p] = {{types[p], wb[p].data(), n_in, n_outs[p]}, got[p].data()};
          }
          matmul_cpu_q8_parts(pool, parts, 3, xv, n_tok, cpu_isa_active(), {tasks, pf});
          CAPTURE(n_tok);
          CAPTURE(threads);
          CAPTURE(tasks);
          CAPTURE(pf);
          for (int p = 0; p < 3; ++p)
            CHECK(std::memcmp(got[p].data(), want[p].data(), 4 * want[p].size()) == 0);
        }
  }
}

TEST_CASE("parse_cpu_tuning: NAME=VALUE overrides, and a clear error for anything else") {
  const CpuMatmulTuning d;
  auto empty = parse_cpu_tuning("");
  REQUIRE(empty.has_value());
  CHECK(empty->tasks_per_thread == d.tasks_per_thread);
  CHECK(empty->prefetch_rows == d.prefetch_rows);
  CHECK(empty->prefetch_hint == d.prefetch_hint);
  auto t = parse_cpu_tuning("tasks=8,hint=1,pf=0");
  REQUIRE(t.has_value());
  CHECK(t->tasks_per_thread == 8);
  CHECK(t->prefetch_rows == 0);
  CHECK(t->prefetch_hint == 1);
  for (const char* bad : {"pf", "pf=", "pf=x", "hint=4", "tasks=0", "speed=1", "pf=1x"}) {
    CAPTURE(std::string(bad));
    auto r = parse_cpu_tuning(bad);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message.find(std::string(bad)) != std::string::npos);
  }
}
