// Matrix products of a quantized weight with a batch of f32 activations, on
// the CPU: y[t][o] = sum_i W[o][i] * x[t][i]. The weight is read in place
// (from the mapped file or a RAM buffer), once per batch: each weight row is
// dequantized into per-thread scratch and dotted with every token of the
// batch. Work is split by output rows, and each output is computed by one
// thread in a fixed order, so results are identical for any thread count.
// defines: WeightView, matmul_f32
#pragma once

#include <cstdint>
#include <vector>

#include "io/ggml_type.h"
#include "runtime/thread_pool.h"

namespace ls {

// A 2-D weight in ggml order: n_out rows of n_in elements, rows contiguous.
struct WeightView {
  GgmlType type = GgmlType::F32;
  const void* data = nullptr;
  int64_t n_in = 0;   // ne[0]
  int64_t n_out = 0;  // ne[1]
};

// x: (n_tok, n_in) row-major; y: (n_tok, n_out). scratch: one vector per pool thread.
void matmul_f32(ThreadPool& pool, const WeightView& w, const float* x, int64_t n_tok, float* y,
                std::vector<std::vector<float>>& scratch);

}  // namespace ls
