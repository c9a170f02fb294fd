// CPU reference (de)quantization for every ggml type layerstream reads,
// bit-exact with ggml's dequantize_row_* functions. This is the oracle the
// CUDA kernels are tested against, and the path the CPU backend uses.
// defines: dequantize_row, quantize_row, can_quantize
#pragma once

#include <cstdint>

#include "io/ggml_type.h"

namespace ls {

// Dequantize n elements of type t at src into dst. n must be a multiple of
// the type's block size; t must be dequantizable (ggml_traits(t).dequantizable).
void dequantize_row(GgmlType t, const void* src, float* dst, int64_t n);

// Whether quantize_row supports t.
bool can_quantize(GgmlType t);

// Quantize n floats into type t (n a multiple of the block size). For the
// K-quants this follows ggml's reference quantizers (no importance matrix).
void quantize_row(GgmlType t, const float* src, void* dst, int64_t n);

}  // namespace ls
