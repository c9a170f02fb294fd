// Reference for the 8-bit activation format (kernels/act_q8.h): quantize a
// row, and the matmul a kernel with int8 activations must match,
//     y[t][o] = sum_blocks d_x(t,b) * sum_{i in b} w[o][i] * q_x(t,i)
// with w dequantized by kernels/ref/quant (f32) and sums in double, so a
// fast kernel can be held to a tight tolerance against it, while this
// function's own distance from the f32 reference (matmul_f32) is the
// rounding of x that the format costs (tests/unit/kernels/test_act_q8.cpp
// states and checks it).
// defines: quantize_act_q8_ref(), matmul_act_q8_ref()
#pragma once

#include <cstdint>

#include "kernels/ref/matmul.h"

namespace ls {

// n a multiple of kActQ8Block; q: n values, d: n / kActQ8Block scales.
void quantize_act_q8_ref(const float* x, int64_t n, int8_t* q, float* d);

// x: (n_tok, n_in) f32, quantized here row by row; y: (n_tok, n_out). Single-threaded.
void matmul_act_q8_ref(const WeightView& w, const float* x, int64_t n_tok, float* y);

}  // namespace ls
