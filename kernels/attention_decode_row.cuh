// Decode attention of one token over a short row: a block per query head,
// every position of the row in that block, so no split records and no
// reduce pass. The same contract as the grouped kernel with one split
// (kernels/attention_decode.cuh): RoPE and the KV store fused in
// (AttentionParams::k_new), out and its 8-bit form written by the kernel.
//
// Why: at the contexts of a short chat (up to a few hundred positions) the
// decode attention is a chain of latencies, not bytes: 10 us a layer of the
// 8b in session 16, about a seventh of the layer, for a few hundred KB. The
// grouped kernel spreads a row over 16 splits so that no warp walks a long
// chain (session 17), which needs a second kernel to merge the splits, and
// that kernel's launch, wait and round trip through memory are on the chain
// of every layer. Here each block holds one head's whole row: its key and
// value rows are copied into shared memory before the PDL wait (rows before
// pos were written by earlier steps), so after the wait the block reads q,
// rotates it, and computes from shared memory alone:
//   scores  head_dim / 8 lanes a row (8 values, 16 bytes each), the
//           partial dots summed by shuffles, 8 rows a block step;
//   softmax the row's max and sum over the block (two barriers);
//   values  a thread a dimension, over every position.
// A block is one or four groups of head_dim threads (rows of up to 32
// positions, and longer), each group the values of a share of the rows,
// group 0 adding the others' sums. The G blocks of a KV head each copy its rows
// (the L2 serves the repeats); the first of them stores the token's key and
// value rows into the cache, the others use their own rotated copy, the
// same bits.
//
// Shared memory holds the row: AttentionParams::max_pos sets the capacity
// of a launch (attention_decode_row_rows: 32, 64, 128, 256 or 384 rows; a
// launch takes the shared memory its rows need, so that the blocks of the
// GEMV after it fit beside it on the SM), and a captured graph is captured
// again when it changes (model/cuda_backend.cu: attention_form). A
// position past the capacity stops the kernel (a trap), never a write past
// it.
//
// Used (attention_decode_row_applies) for one token over an f16 cache,
// head_dim 64 or 128, G in {1, 2, 4, 8}, one split and rows of at most
// attention_decode_row_max() positions, unless AttentionParams::row is 0 or
// LS_ATTENTION_ROW=0 (A/B); the backend then gives such a step one split
// (attention_decode_row_wanted).
// defines: kAttentionRowMax, kAttentionRowDefault, attention_decode_row_max,
//          attention_decode_row_rows, attention_decode_row_wanted,
//          attention_decode_row_applies, attention_decode_row_cuda
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/attention.cuh"
#include "runtime/status.h"

namespace ls {

// The longest row a launch can hold (its shared memory: 192 KiB of f16 keys
// and values at head_dim 128), and the longest the default gives it:
// attention_decode_row_max(), kAttentionRowDefault unless
// LS_ATTENTION_ROW_MAX=N (up to kAttentionRowMax) says otherwise (A/B).
// Session 49, call 2 (an H100): the 8b after a 300-token prompt at 410.6
// tok/s with rows to 384 on this kernel, 398.2 with the splits past 256;
// alone, 8.1 against 8.6 us at 384 positions.
inline constexpr int32_t kAttentionRowMax = 384;
inline constexpr int32_t kAttentionRowDefault = 384;
int32_t attention_decode_row_max();

// The rows a launch for a batch whose largest position is max_pos holds.
int32_t attention_decode_row_rows(int32_t max_pos);

// Whether a decode step of n_tok tokens whose largest position is max_pos
// takes this kernel by default (so its caller gives it one split).
bool attention_decode_row_wanted(int64_t n_tok, bool kv_f32, int32_t head_dim, int32_t n_head,
                                 int32_t n_head_kv, int32_t max_pos);

// Whether attention_cuda runs p on this kernel: p.row 1 wherever it can,
// -1 (the default) where attention_decode_row_wanted says so, 0 never.
bool attention_decode_row_applies(const AttentionParams& p);

Status attention_decode_row_cuda(const AttentionParams& p, cudaStream_t stream);

}  // namespace ls
