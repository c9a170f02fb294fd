// RMSNorm over token rows, optionally fused with the residual add before it:
//   [h[r] += add[r]]  then  y[m] = h[r] / sqrt(mean(h[r]^2) + eps) * w,  r = rows ? rows[m] : m.
// The fusion saves a pass over the residual stream: a layer's closing
// "h += ffn_out" is done by the next layer's (or the head's) norm kernel.
// The rows map lets the head normalise only the entries that want logits.
// Layout: h, add: (n_rows, n) row-major f32; y: (n_out, n); w: (n).
// Grid: one block per output row (and, with pf set, up to 128 in all that
// only issue the prefetch: kernels/l2_prefetch.cuh); the sum of squares is a block reduction in
// f32 (the CPU reference sums in f64: differences are rounding, ~1e-7
// relative).
// Versions: v1, 256 threads, one read of h for the sum and one for the scale
// (the second hits L1/L2: a row is at most 32 KiB). v3 (rows of up to 16384
// values, n % 32 == 0, 16-byte aligned): the row in registers, one to four
// float4 a thread of up to 1024, every load issued before any is used; v1's
// loop waited for each load in turn (15 us a 4096 row on the H200, the
// slowest kernel of a decode layer; bench/results/2026-12-02-h200-decode.md).
// v1 stays for other rows. v2: optionally also
// quantizes y to the 8-bit format of the decode GEMV (q8 set; n a multiple
// of 32): a warp of the last loop holds 32 consecutive values, one
// activation block, so the quantization needs no other pass and gives the
// bits quantize_act_q8_cuda gives for y (kernels/act_q8.h). It saves a
// launch and a read of y before every GEMV group of a decode layer.
// Programmatic dependent launch (kernels/pdl.cuh): waits before reading h.
// defines: RmsNormParams, rmsnorm_f32_cuda
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/l2_prefetch.cuh"
#include "kernels/quantize_act.cuh"
#include "runtime/status.h"

namespace ls {

struct RmsNormParams {
  float* h = nullptr;             // (n_rows, n): input; updated when add is set
  const float* add = nullptr;     // (n_rows, n) or nullptr: h[r] += add[r] first
  const float* w = nullptr;       // (n) norm weight
  float* y = nullptr;             // (n_out, n)
  const int32_t* rows = nullptr;  // (n_out) device; nullptr: row m of y from row m of h
  int64_t n = 0;                  // row width
  int64_t n_out = 0;              // rows written to y
  float eps = 1e-5f;
  // Also y quantized (n_out, n) into q8 (kernels/quantize_act.cuh); needs n % 32 == 0.
  ActQ8Device q8{nullptr, nullptr};
  // The next GEMV's weights, asked of the L2 before the wait (kernels/l2_prefetch.cuh).
  L2Prefetch pf{};
};

Status rmsnorm_f32_cuda(const RmsNormParams& p, cudaStream_t stream);

}  // namespace ls
