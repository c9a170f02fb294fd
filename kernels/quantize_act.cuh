// The activations of a decode batch in the 8-bit format of kernels/act_q8.h,
// on the device: the input of the dp4a GEMV (kernels/gemv_q8.cu).
// defines: ActQ8Device, quantize_act_q8_cuda, quantize_act_q8_blocks_cuda
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include "runtime/status.h"

namespace ls {

// x quantized: q (n_tok, n_in) int8, and per block of 32 values (n_tok, n_in / 32)
// ds = {d, sum of the block's 32 q as a float (exact: |sum| <= 4064)}. The
// sum serves the min terms of Q4_K / Q5_K and the -8 of Q4_0 (kernels/act_q8.h:
// d * sum q, a function of the quantized x only).
struct ActQ8Device {
  int8_t* q;   // 16-byte aligned
  float2* ds;  // 8-byte aligned
};

// x: (n_tok, n_in) f32 on the device, n_in a multiple of 32. Produces the
// same q and d bits as quantize_act_q8_ref (kernels/ref/act_q8.h) row by row.
Status quantize_act_q8_cuda(const float* x, int64_t n_tok, int64_t n_in, ActQ8Device out,
                            cudaStream_t stream);

// The same bits, block-major (the int8 GEMM's layout, kernels/mmq_q8.cuh):
// block b of token t at q + (b · ld + t) · 32 and ds[b · ld + t], ld >= n_tok
// (the slots of tokens n_tok..ld-1 are left as they are).
Status quantize_act_q8_blocks_cuda(const float* x, int64_t n_tok, int64_t n_in, int64_t ld,
                                   ActQ8Device out, cudaStream_t stream);

}  // namespace ls
