// Dequantize a GGUF weight to f16 on the GPU (the first half of the prefill
// GEMM path), and convert activations f32 -> f16: see kernels/dequant.cu.
// defines: DequantKernel, dequant_f16_launch, convert_f32_f16_launch
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include "io/ggml_type.h"
#include "runtime/status.h"

namespace ls {

// Which dequantization kernel runs; both write the same f16 bits.
//   Rows (v2): one 8-value chunk per thread, decoding straight from global
//              memory with the GEMV's loads (2-byte ones for 210-byte Q6_K
//              blocks). Kept for A/B runs (LS_PREFILL_PATH=legacy).
//   Tile (v3): a CTA stages 8192 values' worth of blocks in shared memory
//              with 16-byte loads, then decodes them (the default; float
//              types F32 / F16 / BF16 run Rows).
enum class DequantKernel { Rows, Tile };

// w: (n_out, row_bytes) GGUF rows -> out: (n_out, n_in) f16 bits, row-major.
// n_in a multiple of 8 and of the type's block; w and out 16-byte aligned.
Status dequant_f16_launch(GgmlType type, const void* w, int64_t n_in, int64_t n_out, uint16_t* out,
                          cudaStream_t stream, DequantKernel kernel = DequantKernel::Tile);

// x: (n) f32 -> out: (n) f16 bits, round to nearest even. Four values per
// thread (16-byte loads, 8-byte stores) when x is 16-byte and out 8-byte
// aligned, else (or with vector = false, the old kernel) one per thread.
Status convert_f32_f16_launch(const float* x, int64_t n, uint16_t* out, cudaStream_t stream,
                              bool vector = true);

}  // namespace ls
