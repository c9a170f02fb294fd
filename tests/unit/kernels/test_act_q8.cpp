// The 8-bit activation format (kernels/act_q8.h) and its reference matmul
// (kernels/ref/act_q8.h): what the rounding of x costs, stated as bounds that
// the fast int8 kernels (CPU VNNI, CUDA dp4a) inherit.
//
//   per value:  |x - d q| <= d / 2, d = max|x| / 127 over its block of 32
//   per output: |y_q8 - y_f32| <= sum_b d_b / 2 * sum_{i in b} |w_i|  (+ f32 rounding)
//   overall:    NMSE(y_q8, y_f32) <= 1e-4 for normal activations (the
//               quantization step is ~1/60 of sigma: variance d^2/12 per value)
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "io/ggml_type.h"
#include "kernels/act_q8.h"
#include "kernels/ref/act_q8.h"
#include "kernels/ref/matmul.h"
#include "kernels/ref/quant.h"
#include "runtime/thread_pool.h"

using namespace ls;

TEST_CASE(
    "act_q8: each value is within half a step, the block's largest is +-127, zeros stay zero") {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  const int64_t n = 32 * 40;
  std::vector<float> x(n);
  for (auto& v : x) v = nd(rng);
  for (int i = 0; i < 32; ++i) x[5 * 32 + i] = 0.0f;  // an all-zero block
  x[7 * 32 + 3] = -1e30f;                             // a huge value: the rest round to 0
  std::vector<int8_t> q(n, 99);
  std::vector<float> d(n / 32, NAN);
  quantize_act_q8_ref(x.data(), n, q.data(), d.data());
  for (int64_t b = 0; b < n / 32; ++b) {
    CAPTURE(b);
    int amax_q = 0;
    for (int i = 0; i < 32; ++i) {
      const int64_t k = b * 32 + i;
      CHECK(std::abs(int(q[k])) <= 127);
      amax_q = std::max(amax_q, std::abs(int(q[k])));
      CHECK(std::fabs(x[k] - d[b] * q[k]) <= d[b] * 0.5f * (1 + 1e-6f));
    }
    if (b == 5) {
      CHECK(d[b] == 0.0f);
      CHECK(amax_q == 0);
    } else {
      CHECK(amax_q == 127);
    }
  }
  CHECK(q[7 * 32 + 3] == -127);
  CHECK(q[7 * 32 + 4] == 0);
}

TEST_CASE("act_q8: the reference matmul is within the stated bounds of the f32 one") {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  ThreadPool pool(1);
  std::vector<std::vector<float>> scratch(1);
  for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
                     GgmlType::F32}) {
    if (!can_quantize(t)) continue;
    const std::string type = ggml_type_name(t);
    CAPTURE(type);
    const int64_t n_in = 512, n_out = 37, n_tok = 3;
    const size_t rb = ggml_row_bytes(t, n_in);
    std::vector<uint8_t> w(rb * n_out);
    std::vector<float> row(n_in);
    for (int64_t o = 0; o < n_out; ++o) {
      for (auto& v : row) v = nd(rng) * 0.05f;
      quantize_row(t, row.data(), w.data() + o * rb, n_in);
    }
    std::vector<float> x(n_in * n_tok);
    for (auto& v : x) v = nd(rng);
    const WeightView wv{t, w.data(), n_in, n_out};
    std::vector<float> y32(n_tok * n_out, NAN), y8(n_tok * n_out, NAN);
    matmul_f32(pool, wv, x.data(), n_tok, y32.data(), scratch);
    matmul_act_q8_ref(wv, x.data(), n_tok, y8.data());
    double err2 = 0, ref2 = 0;
    std::vector<int8_t> q(n_in);
    std::vector<float> d(n_in / 32);
    for (int64_t tk = 0; tk < n_tok; ++tk) {
      quantize_act_q8_ref(x.data() + tk * n_in, n_in, q.data(), d.data());
      for (int64_t o = 0; o < n_out; ++o) {
        dequantize_row(t, w.data() + o * rb, row.data(), n_in);
        double bound = 0, absprod = 0;
        for (int64_t i = 0; i < n_in; ++i) {
          bound += d[i / 32] * 0.5 * std::fabs(row[i]);
          absprod += std::fabs(double(row[i]) * x[tk * n_in + i]);
        }
        bound += (n_in / 4.0 + 32) * 0x1p-24 * absprod;  // the f32 reference's own rounding
        const double e = double(y8[tk * n_out + o]) - y32[tk * n_out + o];
        CHECK(std::fabs(e) <= bound);
        err2 += e * e;
        ref2 += double(y32[tk * n_out + o]) * y32[tk * n_out + o];
      }
    }
    const double nmse = err2 / ref2;
    MESSAGE(type << ": NMSE of 8-bit activations against f32 = " << nmse);
    CHECK(nmse <= 1e-4);
  }
}
