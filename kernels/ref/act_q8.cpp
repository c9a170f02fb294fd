#include "kernels/ref/act_q8.h"

#include <cmath>
#include <vector>

#include "kernels/act_q8.h"
#include "kernels/ref/quant.h"

namespace ls {

void quantize_act_q8_ref(const float* x, int64_t n, int8_t* q, float* d) {
  for (int64_t b = 0; b < n / kActQ8Block; ++b) {
    const float* xb = x + b * kActQ8Block;
    float amax = 0;
    for (int i = 0; i < kActQ8Block; ++i) amax = std::fmax(amax, std::fabs(xb[i]));
    d[b] = act_q8_scale(amax);
    const float id = act_q8_inv(d[b]);
    for (int i = 0; i < kActQ8Block; ++i) q[b * kActQ8Block + i] = act_q8_round(xb[i], id);
  }
}

void matmul_act_q8_ref(const WeightView& w, const float* x, int64_t n_tok, float* y) {
  const int64_t n = w.n_in, nb = n / kActQ8Block;
  const size_t row_bytes = ggml_row_bytes(w.type, n);
  std::vector<int8_t> q(n);
  std::vector<float> d(nb), wr(n);
  for (int64_t t = 0; t < n_tok; ++t) {
    quantize_act_q8_ref(x + t * n, n, q.data(), d.data());
    for (int64_t o = 0; o < w.n_out; ++o) {
      dequantize_row(w.type, static_cast<const uint8_t*>(w.data) + o * row_bytes, wr.data(), n);
      double acc = 0;
      for (int64_t b = 0; b < nb; ++b) {
        double s = 0;
        for (int i = 0; i < kActQ8Block; ++i)
          s += static_cast<double>(wr[b * kActQ8Block + i]) * q[b * kActQ8Block + i];
        acc += static_cast<double>(d[b]) * s;
      }
      y[t * w.n_out + o] = static_cast<float>(acc);
    }
  }
}

}  // namespace ls
