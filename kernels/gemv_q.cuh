// Fused dequantize + matrix-vector products for decode batches (n_tok <= 8):
// see kernels/gemv_q.cu.
// defines: GemvParams, kGemvMaxTok, gemv_q_f32_launch, gemv_env_version
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include "io/ggml_type.h"
#include "runtime/status.h"

namespace ls {

inline constexpr int kGemvMaxTok = 8;

struct GemvParams {
  const uint8_t* w;  // (n_out, row_bytes) GGUF rows, 16-byte aligned base
  const float* x;    // (n_tok, n_in), 16-byte aligned
  float* y;          // (n_tok, n_out)
  int64_t n_in;      // a multiple of 8 (and of the type's block size)
  int64_t n_out;
  int64_t row_bytes;  // ggml_row_bytes(type, n_in)
  int n_tok;          // 1 .. kGemvMaxTok
  int version = 0;    // kernel version (kernels/gemv_q.cu): 0 = the default, 2 or 3 to pin one
};

Status gemv_q_f32_launch(GgmlType type, const GemvParams& p, cudaStream_t stream);

// LS_GEMV_VERSION from the environment (read once; 0 when unset): 2 pins
// v2 for every decode GEMV, including the types whose default is the int8
// GEMV (kernels/gemv_q8.cu, dispatched by matmul_cuda), for A/B runs; 5 pins
// its one x-block per lane (GemvQ8Params::lane_blocks 1) where the default
// takes two (the K-quants at n_tok <= 2); 6 keeps the shared-memory stage
// (two x-blocks a lane) where the default (0 or 7) decodes the K-quants at
// n_tok <= 2 straight from global memory (GemvQ8Params::version 7).
int gemv_env_version();

}  // namespace ls
