// Argmax over rows of logits on the GPU, so greedy sampling moves one int
// per row to the host instead of n_vocab floats. The rule of greedy_argmax
// (model/sampler.h): ties keep the lowest id, a NaN never wins over a
// number, +inf counts as the largest float (so it ties FLT_MAX).
// Layout: x (n_rows, n) f32; out (n_rows) int32.
// Grid: one block of 256 threads per row; each thread scans a strided slice,
// then a shared-memory tree reduction on (value, index).
// Versions: v1; v2 (this): +inf clamped to the largest float, as the CPU's rule.
// defines: ArgmaxParams, argmax_f32_cuda
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/status.h"

namespace ls {

struct ArgmaxParams {
  const float* x = nullptr;  // (n_rows, n)
  int32_t* out = nullptr;    // (n_rows) device
  int64_t n_rows = 0;
  int64_t n = 0;
};

Status argmax_f32_cuda(const ArgmaxParams& p, cudaStream_t stream);

}  // namespace ls
