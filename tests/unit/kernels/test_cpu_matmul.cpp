// Tests of the CPU compute tier's matmul (kernels/cpu/) against the
// reference matmul_f32 (kernels/ref/matmul.h), for every type it handles ×
// every ISA variant this CPU runs (each forced in turn) × odd shapes: n_out
// not a multiple of the rows per task (1, 7, 37, 133), n_in = 256·k and, for
// the 32-blocks, 32·k, n_tok 1..8 and past the 8-token tile (9, 17).
//
// Weights are random bytes (every bit pattern of quants, high bits and packed
// scales) with finite random fp16 scales; activations fresh normal floats;
// outputs poisoned with NaN, so an unwritten element fails.
//
// Tolerance: the weights are rebuilt bit for bit (checked on its own below),
// so only the summation order differs; matmul_cpu_bound (kernels/cpu/
// matmul_cpu.h) is the worst-case f32 bound (n_in/4 + 32) · 2^-24 · Σ|w·x|,
// with Σ|w·x| computed here in double from the reference's weights.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cpu/dot.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/matmul_cpu.h"
#include "kernels/cpu/unpack.h"
#include "kernels/half.h"
#include "kernels/quant_blocks.h"
#include "kernels/ref/matmul.h"
#include "kernels/ref/quant.h"
#include "runtime/thread_pool.h"
#include "tests/unit/kernels/random_quant.h"

using namespace ls;

namespace {

const GgmlType kTypes[] = {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q5_K,
                           GgmlType::Q6_K};

std::vector<CpuIsa> supported_isas() {
  std::vector<CpuIsa> v;
  for (CpuIsa i : {CpuIsa::Portable, CpuIsa::Avx2, CpuIsa::Avx512})
    if (cpu_isa_supported(i)) v.push_back(i);
  return v;
}

using test::random_weight;
using test::random_x;

struct Unpacked {
  std::vector<int8_t> q;
  std::vector<float> s, m;
  G16Row row() { return {q.data(), s.data(), m.data()}; }
};

}  // namespace

TEST_CASE("cpu_matmul: unpacked rows rebuild the reference's weights bit for bit") {
  std::mt19937 rng(1234);
  for (GgmlType t : kTypes) {
    for (int64_t n : {256, 768, 2048}) {
      const std::string type = ggml_type_name(t);  // a string: doctest prints a char* as a pointer
      CAPTURE(type);
      CAPTURE(n);
      const auto w = random_weight(t, n, 1, rng);
      std::vector<float> ref(n);
      dequantize_row(t, w.data(), ref.data(), n);
      for (bool simd : {false, true}) {
        if (simd && !cpu_isa_supported(CpuIsa::Avx2)) {
          MESSAGE("SKIPPED: unpack_g16_avx2 (no AVX2 on this CPU)");
          continue;
        }
        CAPTURE(simd);
        Unpacked u{std::vector<int8_t>(n, 99), std::vector<float>(n / 16, NAN),
                   std::vector<float>(n / 16, NAN)};
        (simd ? unpack_g16_avx2 : unpack_g16_scalar)(t, w.data(), n, u.row());
        int bad = 0;
        for (int64_t i = 0; i < n && bad < 5; ++i) {
          const float m = g16_has_min(t) ? u.m[i / 16] : 0.0f;
          const float got = u.s[i / 16] * static_cast<float>(u.q[i]) - m;
          if (std::memcmp(&got, &ref[i], 4) != 0) {
            ++bad;
            CAPTURE(i);
            CHECK(got == ref[i]);
          }
        }
        CHECK(bad == 0);
      }
    }
  }
}

TEST_CASE("cpu_matmul: every type and ISA variant matches the reference within the f32 bound") {
  std::mt19937 rng(42);
  ThreadPool pool(3);
  std::vector<std::vector<float>> ref_scratch(pool.size());
  CpuMatmulScratch scratch(pool.size(), 2048);
  struct Shape {
    int64_t n_in, n_out;
  };
  const Shape shapes[] = {{256, 1}, {256, 7}, {512, 37}, {768, 133}, {2048, 19}};
  const Shape legacy_shapes[] = {{32, 5}, {96, 37}};  // 32-blocks: n_in = 32·k only
  double worst_ratio = 0;  // error / bound over every output, printed at the end
  for (GgmlType t : kTypes) {
    std::vector<Shape> all(std::begin(shapes), std::end(shapes));
    if (t == GgmlType::Q4_0 || t == GgmlType::Q8_0)
      all.insert(all.end(), std::begin(legacy_shapes), std::end(legacy_shapes));
    for (const Shape& sh : all) {
      const auto wbytes = random_weight(t, sh.n_in, sh.n_out, rng);
      const WeightView w{t, wbytes.data(), sh.n_in, sh.n_out};
      REQUIRE(matmul_cpu_supports(w));
      std::vector<float> wf(sh.n_in * sh.n_out);  // the reference's weights, for Σ|w·x|
      dequantize_row(t, wbytes.data(), wf.data(), sh.n_in * sh.n_out);
      for (int64_t n_tok : {1, 2, 3, 4, 5, 6, 7, 8, 9, 17}) {
        const auto x = random_x(n_tok * sh.n_in, rng);
        std::vector<float> ref(n_tok * sh.n_out);
        matmul_f32(pool, w, x.data(), n_tok, ref.data(), ref_scratch);
        for (CpuIsa isa : supported_isas()) {
          const std::string type = ggml_type_name(t), variant = cpu_isa_name(isa);
          CAPTURE(type);
          CAPTURE(variant);
          CAPTURE(sh.n_in);
          CAPTURE(sh.n_out);
          CAPTURE(n_tok);
          std::vector<float> y(n_tok * sh.n_out, std::numeric_limits<float>::quiet_NaN());
          matmul_cpu(pool, w, x.data(), n_tok, y.data(), scratch, isa);
          int bad = 0;
          for (int64_t tk = 0; tk < n_tok; ++tk)
            for (int64_t o = 0; o < sh.n_out; ++o) {
              double abs_sum = 0;
              for (int64_t i = 0; i < sh.n_in; ++i)
                abs_sum += std::fabs(double(wf[o * sh.n_in + i]) * x[tk * sh.n_in + i]);
              const double bound = matmul_cpu_bound(sh.n_in, abs_sum);
              const double err = std::fabs(double(y[tk * sh.n_out + o]) - ref[tk * sh.n_out + o]);
              if (!(err <= bound)) {  // NaN fails too
                if (++bad <= 3) {
                  CAPTURE(tk);
                  CAPTURE(o);
                  CHECK(y[tk * sh.n_out + o] == doctest::Approx(ref[tk * sh.n_out + o]));
                }
              } else if (bound > 0) {
                worst_ratio = std::max(worst_ratio, err / bound);
              }
            }
          CHECK(bad == 0);
        }
      }
    }
  }
  MESSAGE("worst |y - ref| / bound over all outputs: " << worst_ratio);
}

TEST_CASE("cpu_matmul: results do not depend on the thread count") {
  std::mt19937 rng(7);
  const int64_t n_in = 1024, n_out = 301, n_tok = 3;
  const auto wbytes = random_weight(GgmlType::Q4_K, n_in, n_out, rng);
  const WeightView w{GgmlType::Q4_K, wbytes.data(), n_in, n_out};
  const auto x = random_x(n_tok * n_in, rng);
  ThreadPool one(1), three(3);
  CpuMatmulScratch s1(1, n_in), s3(3, n_in);
  for (CpuIsa isa : supported_isas()) {
    const std::string variant = cpu_isa_name(isa);
    CAPTURE(variant);
    std::vector<float> a(n_tok * n_out, NAN), b(n_tok * n_out, NAN);
    matmul_cpu(one, w, x.data(), n_tok, a.data(), s1, isa);
    matmul_cpu(three, w, x.data(), n_tok, b.data(), s3, isa);
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("cpu_matmul: a token's bits do not depend on how many tokens share the call") {
  // The f32 path is the oracle of the batched-equals-alone checks (issue 17):
  // 13 tokens (passes of 8 and 5, and AVX2's 4 + 4 and 4 + 1) against each
  // token alone, bit for bit, on every variant.
  std::mt19937 rng(13);
  const int64_t n_in = 512, n_out = 21, n_tok = 13;
  ThreadPool pool(2);
  CpuMatmulScratch scratch(2, n_in);
  for (GgmlType t : {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q8_0}) {
    const auto wbytes = random_weight(t, n_in, n_out, rng);
    const WeightView w{t, wbytes.data(), n_in, n_out};
    const auto x = random_x(n_tok * n_in, rng);
    for (CpuIsa isa : supported_isas()) {
      const std::string type = ggml_type_name(t), variant = cpu_isa_name(isa);
      CAPTURE(type);
      CAPTURE(variant);
      std::vector<float> all(n_tok * n_out, NAN), one(n_tok * n_out, NAN);
      matmul_cpu(pool, w, x.data(), n_tok, all.data(), scratch, isa);
      for (int64_t k = 0; k < n_tok; ++k)
        matmul_cpu(pool, w, x.data() + k * n_in, 1, one.data() + k * n_out, scratch, isa);
      CHECK(std::memcmp(all.data(), one.data(), all.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("cpu_matmul: types and shapes it does not handle go to the reference") {
  CHECK_FALSE(matmul_cpu_supports({GgmlType::F32, nullptr, 256, 4}));
  CHECK_FALSE(matmul_cpu_supports({GgmlType::F16, nullptr, 256, 4}));
  CHECK_FALSE(matmul_cpu_supports({GgmlType::Q2_K, nullptr, 256, 4}));
  CHECK_FALSE(matmul_cpu_supports({GgmlType::Q4_K, nullptr, 0, 4}));
  CHECK(matmul_cpu_supports({GgmlType::Q4_0, nullptr, 96, 4}));
  CHECK(matmul_cpu_supports({GgmlType::Q6_K, nullptr, 8192, 4}));
}

TEST_CASE("cpu_matmul: the dispatcher picks the widest variant the CPU supports") {
  // The CPU's own account, read independently of __builtin_cpu_supports.
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  while (std::getline(f, line))
    if (line.rfind("flags", 0) == 0) {
      std::istringstream ss(line.substr(line.find(':') + 1));
      for (std::string w; ss >> w;) flags.insert(w);
      break;
    }
  if (flags.empty()) {
    MESSAGE("SKIPPED: no flags line in /proc/cpuinfo");
  } else {
#if defined(__x86_64__) || defined(__i386__)
    const bool avx2 = flags.count("avx2") && flags.count("fma") && flags.count("f16c");
    const bool avx512 = avx2 && flags.count("avx512f");
#else
    const bool avx2 = false, avx512 = false;
#endif
    CHECK(cpu_isa_supported(CpuIsa::Avx2) == avx2);
    CHECK(cpu_isa_supported(CpuIsa::Avx512) == avx512);
    CHECK(cpu_isa_best() == (avx512 ? CpuIsa::Avx512 : avx2 ? CpuIsa::Avx2 : CpuIsa::Portable));
    MESSAGE("this CPU: best matmul variant " << std::string(cpu_isa_name(cpu_isa_best())));
  }
  CHECK(cpu_isa_supported(CpuIsa::Portable));
  // The override forces a supported variant, refuses an unsupported one, and clears.
  for (CpuIsa i : {CpuIsa::Portable, CpuIsa::Avx2, CpuIsa::Avx512}) {
    CHECK(cpu_isa_override(i) == cpu_isa_supported(i));
    if (cpu_isa_supported(i)) CHECK(cpu_isa_active() == i);
  }
  CHECK(cpu_isa_override(std::nullopt));
  for (CpuIsa i : {CpuIsa::Portable, CpuIsa::Avx2, CpuIsa::Avx512})
    CHECK(cpu_isa_from_name(cpu_isa_name(i)) == i);
  CHECK_FALSE(cpu_isa_from_name("sse9"));
}
