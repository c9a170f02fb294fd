// Decode GEMV with 8-bit activations and __dp4a (v5): see kernels/gemv_q8.cu.
// defines: GemvQ8Params, gemv_q8_supports, gemv_q8_mixes, gemv_q8_launch
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include "io/ggml_type.h"
#include "kernels/l2_prefetch.cuh"
#include "kernels/quantize_act.cuh"
#include "runtime/status.h"

namespace ls {

struct GemvQ8Params {
  const uint8_t* w;  // (n_out, row_bytes) GGUF rows, 16-byte aligned base
  ActQ8Device x;     // (n_tok, n_in) quantized by quantize_act_q8_cuda
  float* y;          // (n_tok, n_out)
  int64_t n_in;      // a multiple of the type's block (and of 32)
  int64_t n_out;
  int64_t row_bytes;  // ggml_row_bytes(type, n_in)
  int n_tok;          // 1 .. kGemvMaxTok
  int rows =
      0;  // output rows per CUDA block: 0 = the default (4); 2 and 8 (n_tok 1 only) to compare
  // x-blocks of 32 per lane: 1, or 2 (two sub-blocks that share their quant
  // bytes; for the K-quants at n_tok <= 2 with the default rows, other cases
  // run 1); 0 = the default: 2 where it applies (measured faster), else 1.
  int lane_blocks = 0;
  // 0: the kernel above; 7: its direct form (no shared-memory stage; the
  // K-quants at n_tok <= 2), for A/B (LS_GEMV_VERSION=7) and benches.
  int version = 0;
  // Stages of the staged kernel's shared-memory copy (Q8_0, Q4_0): 0 = the
  // default (two where a warp has more than one tile, unless one fits the
  // launch's waves clearly better: kernels/gemv_q8.cu), 1 or 2 to compare.
  int stages = 0;
  // The direct form's default shape (version 7, 4 rows, two x-blocks a
  // lane): its first tile's loads issued before the PDL wait, a kernel of
  // its own (kernels/gemv_q8.cu); an error with any other shape.
  bool early = false;
  // The direct form's default shape with plain weight loads rather than the
  // streaming hint (kernels/gemv_q8.cu's ldw): an A/B (LS_GEMV_STREAM=0),
  // for a machine the hint has not been measured on. The same bits.
  bool plain_loads = false;
  // Further matrices of the same type, n_in and row_bytes that read the same
  // x, run by the same launch (q, k, v; gate, up): the grid covers the rows
  // of (w, y, n_out) above, then those of each more[i].
  // A segment with alt set is in alt_type (row_bytes its rows' bytes): one
  // launch over two formats, the q, k (Q4_K) and v (Q6_K or Q5_K) of a Q4_K_M layer
  // (gemv_q8_mixes says which pairs; v7 only).
  struct Seg {
    const uint8_t* w = nullptr;
    float* y = nullptr;
    int64_t n_out = 0;
    bool alt = false;
    int64_t row_bytes = 0;
  };
  GgmlType alt_type = GgmlType::Q6_K;
  static constexpr int kMaxMore = 2;
  Seg more[kMaxMore] = {};
  int n_more = 0;
  // The next GEMV's weights, asked of the L2 as the launch starts
  // (kernels/l2_prefetch.cuh), so the HBM streams them through this one's
  // last wave and the next one's ramp.
  L2Prefetch pf{};
  // Each block asks the L2 for the rows of the block `ahead` bytes of
  // weights after its own (one bulk prefetch by its first thread; 0 off):
  // the bytes in flight are the L2's, not the registers of blocks that
  // wait for their loads, so they stay in flight through every block's
  // reduction, exit and the next block's start. The previous kernel's pf
  // covers the launch's first `ahead` bytes.
  int64_t ahead = 0;
};

// The types v5 has kernels for: those of Q4_K_M and Q8_0 models.
bool gemv_q8_supports(GgmlType t);

// Whether one launch of type t can also take segments of type alt
// (GemvQ8Params::Seg::alt): Q4_K with Q6_K.
bool gemv_q8_mixes(GgmlType t, GgmlType alt);

Status gemv_q8_launch(GgmlType type, const GemvQ8Params& p, cudaStream_t stream);

}  // namespace ls
