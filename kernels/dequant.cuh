// Dequantize a GGUF weight to f16 on the GPU (the first half of the prefill
// GEMM path): see kernels/dequant.cu.
// defines: dequant_f16_launch
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels/ggml_type.h"
#include "runtime/status.h"

namespace ls {

// w: (n_out, row_bytes) GGUF rows -> out: (n_out, n_in) f16 bits, row-major.
// n_in a multiple of 8; w and out 16-byte aligned.
Status dequant_f16_launch(GgmlType type, const void* w, int64_t n_in, int64_t n_out, uint16_t* out,
                          cudaStream_t stream);

// x: (n) f32 -> out: (n) f16 bits, round to nearest.
Status convert_f32_f16_launch(const float* x, int64_t n, uint16_t* out, cudaStream_t stream);

}  // namespace ls
