#include "kernels/ref/matmul.h"

#include <algorithm>

#include "kernels/ref/ops.h"
#include "kernels/ref/quant.h"

namespace ls {

void matmul_f32(ThreadPool& pool, const WeightView& w, const float* x, int64_t n_tok, float* y,
                std::vector<std::vector<float>>& scratch) {
  const int64_t row_bytes = static_cast<int64_t>(ggml_row_bytes(w.type, w.n_in));
  // Tasks of a few rows: enough of them to balance, few enough to be cheap.
  const int64_t rows_per_task = std::max<int64_t>(1, std::min<int64_t>(64, w.n_out / (pool.size() * 8)));
  const int64_t n_tasks = (w.n_out + rows_per_task - 1) / rows_per_task;
  pool.run(n_tasks, [&](int64_t task, int thread) {
    std::vector<float>& buf = scratch[thread];
    if (static_cast<int64_t>(buf.size()) < w.n_in) buf.resize(w.n_in);
    const int64_t r0 = task * rows_per_task, r1 = std::min(w.n_out, r0 + rows_per_task);
    for (int64_t r = r0; r < r1; ++r) {
      const uint8_t* src = static_cast<const uint8_t*>(w.data) + r * row_bytes;
      const float* row;
      if (w.type == GgmlType::F32) {
        row = reinterpret_cast<const float*>(src);
      } else {
        dequantize_row(w.type, src, buf.data(), w.n_in);
        row = buf.data();
      }
      for (int64_t t = 0; t < n_tok; ++t) y[t * w.n_out + r] = dot_f32(row, x + t * w.n_in, w.n_in);
    }
  });
}

}  // namespace ls
