// RMSNorm over token rows, optionally fused with the residual add before it:
//   [h[r] += add[r]]  then  y[m] = h[r] / sqrt(mean(h[r]^2) + eps) * w,  r = rows ? rows[m] : m.
// The fusion saves a pass over the residual stream: a layer's closing
// "h += ffn_out" is done by the next layer's (or the head's) norm kernel.
// The rows map lets the head normalise only the entries that want logits.
// Layout: h, add: (n_rows, n) row-major f32; y: (n_out, n); w: (n).
// Grid: one block of 256 threads per output row; the sum of squares is a
// block reduction in f32 (the CPU reference sums in f64: differences are
// rounding, ~1e-7 relative).
// Versions: v1 (this), one read of h for the sum and one for the scale (the
// second hits L1/L2: a row is at most 32 KiB).
// defines: RmsNormParams, rmsnorm_f32_cuda
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/status.h"

namespace ls {

struct RmsNormParams {
  float* h = nullptr;               // (n_rows, n): input; updated when add is set
  const float* add = nullptr;       // (n_rows, n) or nullptr: h[r] += add[r] first
  const float* w = nullptr;         // (n) norm weight
  float* y = nullptr;               // (n_out, n)
  const int32_t* rows = nullptr;    // (n_out) device; nullptr: row m of y from row m of h
  int64_t n = 0;                    // row width
  int64_t n_out = 0;                // rows written to y
  float eps = 1e-5f;
};

Status rmsnorm_f32_cuda(const RmsNormParams& p, cudaStream_t stream);

}  // namespace ls
