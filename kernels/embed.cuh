// Embedding lookup on the GPU: out[t] = dequantize(table row tokens[t]), for
// a token_embd table of any type in quant_blocks.h (f32, f16, bf16, Q4_0,
// Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K). Only the selected
// rows are read and dequantized; the table stays quantized in device memory.
// Layout: table (n_vocab rows of row_bytes, GGUF layout); out (n_tok, n_embd) f32.
// Grid: one block of 256 threads per token; each thread decodes elements
// i = threadIdx.x + k*256 of the row straight from their block (one element
// per thread per step: the row is small, the kernel is latency-bound).
// The arithmetic is the CPU dequantizer's (kernels/ref/quant.cpp), in the
// same order and without FMA contraction, so results are bit-identical.
// Versions: v1 (this).
// defines: EmbedParams, embed_rows_cuda, embed_type_supported
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "io/ggml_type.h"
#include "runtime/status.h"

namespace ls {

struct EmbedParams {
  const void* table = nullptr;      // device, n_vocab rows
  GgmlType type = GgmlType::F32;
  int64_t n_embd = 0;               // elements per row (a multiple of the type's block)
  uint64_t row_bytes = 0;
  const int32_t* tokens = nullptr;  // (n_tok) device, each < n_vocab (checked by the caller)
  int64_t n_tok = 0;
  float* out = nullptr;             // (n_tok, n_embd)
};

bool embed_type_supported(GgmlType t);
Status embed_rows_cuda(const EmbedParams& p, cudaStream_t stream);

}  // namespace ls
