// Quantized GEMM for batches of 9-64 tokens on int8 tensor cores: y (n_tok,
// n_out) = x (n_tok, n_in) · Wᵀ with W read in its GGUF format (Q4_K, Q5_K,
// Q6_K, Q8_0) once for the whole batch and x in the 8-bit format of
// kernels/act_q8.h (quantize_act_q8_cuda). The widths between the decode
// GEMV (kernels/gemv_q8.cuh, up to 8 tokens) and the f16 GEMM of prompts: a
// batched decode step of 32 sequences, a speculative verify step, a short
// prompt. The CPU reference is matmul_act_q8_ref (kernels/ref/act_q8.h).
// defines: kMmqMinTok, mmq_decode_min_tok, mmq_env_decode, mmq_env_min_tok, kMmqMaxTok, mmq_x_ld,
// MmqParams, mmq_supports, mmq_auto_max_tok,
//          mmq_launch
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include "io/ggml_type.h"
#include "kernels/quantize_act.cuh"
#include "runtime/status.h"

namespace ls {

inline constexpr int kMmqMinTok = 9;   // from here every type it takes (the GEMV: up to 8)
inline constexpr int kMmqMaxTok = 64;  // above: dequantize + f16 GEMM (prompts)

// matmul_cuda's Auto path takes this kernel from kMmqMinTok tokens; at
// decode widths, where they are on (MatmulContext::set_mmq_decode,
// LS_MMQ_DECODE, on by default since session 43), from mmq_decode_min_tok:
// the width from which the streamed kernel measured faster than the GEMV
// for a weight of type t, n_out rows of n_in (mmq_q8.cu; kMmqMinTok where
// it did not, or was not measured).
int mmq_decode_min_tok(GgmlType t, int64_t n_out, int64_t n_in);
bool mmq_env_decode();
// LS_MMQ_MIN_TOK=2..9 from the environment (A/B: every weight it takes
// from that width, over both of the above), else 0.
int mmq_env_min_tok();

// Token slots a block of x has in the int8 GEMM's layout: n_tok rounded up
// to the n-tiles of 8, so every lane's loads are whole and aligned.
__host__ __device__ inline int64_t mmq_x_ld(int64_t n_tok) {
  return (n_tok + 7) / 8 * 8;
}

struct MmqParams {
  const uint8_t* w;  // (n_out, row_bytes) GGUF rows, 16-byte aligned base
  // x block-major: quantize_act_q8_blocks_cuda with ld = mmq_x_ld(n_tok),
  // so the 8 tokens of an n-tile are 256 consecutive bytes of each block
  // (and their {d, Σq} 64), one or two cache lines a warp's load, where
  // row-major x put them in 8 lines n_in bytes apart.
  ActQ8Device x;
  float* y;      // (n_tok, n_out)
  int64_t n_in;  // a multiple of the type's block
  int64_t n_out;
  int64_t row_bytes;  // ggml_row_bytes(type, n_in)
  int n_tok;          // 1 .. kMmqMaxTok (any width runs; the engine uses 9..64)
  // Warps of a block that split the K range of a tile (1, 2 or 4; the
  // others take further tiles); 0: by the shape (mmq_q8.cu).
  int k_split = 0;
  // m-tiles of 16 rows a warp's tile has (1 or 2: each x load feeds that
  // many products); 0: the default (mmq_q8.cu).
  int m_tiles = 0;
  // 0: the streamed kernel (kernels/mmq_stream.cuh) where it fits, else the
  // register one; 1: the register kernel (A/B: LS_MMQ_STREAM=0 makes it
  // the default); 2: the streamed kernel, an error where it does not fit.
  int version = 0;
};

// The types with a kernel here: those of Q4_K_M and Q8_0 models.
bool mmq_supports(GgmlType t);

// The widest batch at which matmul_cuda's Auto path takes this kernel for
// a weight of type t and n_out rows (below kMmqMinTok: never), from what it
// measured against dequantize + cuBLAS on the H200 (mmq_q8.cu).
int mmq_auto_max_tok(GgmlType t, int64_t n_out);

Status mmq_launch(GgmlType type, const MmqParams& p, cudaStream_t stream);

}  // namespace ls
