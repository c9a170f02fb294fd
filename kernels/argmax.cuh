// Argmax over rows of logits on the GPU, so greedy sampling moves one int
// per row to the host instead of n_vocab floats. The rule of greedy_argmax
// (model/sampler.h): ties keep the lowest id, a NaN never wins over a
// number, +inf counts as the largest float (so it ties FLT_MAX), and a row
// with nothing above -inf (all NaN, say) gives id 0.
// Layout: x (n_rows, n) f32; out (n_rows) int32.
// Grid (sm_90): a cluster of 8 blocks of 1024 threads per row, grid
// (8, n_rows); block b scans the b-th eighth of the row, each thread with
// 8 float4 loads (16 floats when a row is not 16-byte aligned: n % 4 != 0)
// in flight before it compares; (value, index) is reduced by warp shuffles,
// then across warps in shared memory, then each block stores its best into
// block 0's shared memory (distributed shared memory) and block 0 writes
// out[row]. One kernel, no scratch and no atomics: graph-capturable.
// Below sm_90: one block of 1024 threads per row, the same scan. Both
// launch with programmatic dependent launch inside a PdlScope (pdl.cuh).
// Versions: v1; v2: +inf clamped to the largest float, as the CPU's rule;
// v3 (this): clusters and loads in flight. v2's one block of 256 threads
// a row, one float a thread per iteration, took 73.6 us for a 128,256-wide
// row on an H200 (ncu): latency-bound on one SM; v3 takes 4.5 us (session
// 13, bench/results/2026-12-02-h200-s13.md). v3 also gives 0 for a row
// whose best is -inf (v2 gave the first non-NaN id), as the CPU does.
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
