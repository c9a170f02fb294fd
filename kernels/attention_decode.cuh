// Decode attention, one block per (split, KV head, token): the G query heads
// of a KV head together, so each key and value row is read once for all of
// them (GQA), and the positions of a split in parallel. Splits of an f16
// cache longer than kAttentionDecodeSmall go to the tensor-core kernel of
// kernels/attention_decode_tc.cuh instead (session 19; attention_cuda
// dispatches): this one keeps the short splits, f32 caches and the A/B.
//
// Why: attention_split_kernel (kernels/attention.cuh) gives each query head
// its own block and walks positions one per warp, an online-softmax chain
// whose every step waits for a row's load: 9 us a layer of the 8b at a
// context of ten positions, about the time of one of its GEMVs
// (bench/results/2026-12-02-h200-decode.md).
//
// Block: 128 threads. For each sub-range of at most kAttentionDecodeSub
// positions of the block's split:
//   1. scores: a thread per position (two, loaded together) dots the key
//      row (16-byte loads) with the G query vectors (shared memory), times
//      scale; a sub-range of at most 64 positions (every split below 512
//      positions, where the chain of latencies is the cost, not the bytes)
//      splits each row's dot over head_dim / 8 lanes instead and sums the
//      G partial dots by shuffles, so all 128 threads work, not one per
//      position; with an f16 cache, such a split's key and value rows are
//      copied into shared memory (cp.async) before the PDL wait, each
//      thread the 16 bytes of the rows it reads in phases 1 and 3, so no
//      load after the wait goes to L2 or DRAM for them (session 17:
//      8b decode 415.5 -> 421.6 tok/s; LS_ATTENTION_STAGE=0 for A/B);
//   2. per head, the sub-range's max; the running max M, the rescale factor
//      of what came before, p = exp(s - M) and the running sum l;
//   3. values: head_dim / 8 lanes a row, 8 values (16 bytes of f16) a lane,
//      so a warp instruction reads 2 (head_dim 128) or 4 rows and 4 are
//      unrolled; the rows' addresses come from step 1 (shared memory), so
//      no load waits for a block-table load; the row slots' and the warps'
//      sums meet at the end. Where every split is short
//      (attention_decode_short) and G is 4 or 8, warp w instead owns heads
//      w, w + 4 for the softmax and the values of every position of the
//      split, so its sums need no trip through shared memory and no barrier
//      (session 18: 8b decode 448 vs 434 tok/s, 70b 73.1 vs 71.4; at 4k and
//      16k positions the other form stays, 25-30 % faster there:
//      bench/results/2026-12-03-h200-s18.md).
// This is v5. v4 (until session 12: a row a warp, 8 bytes a lane, one
// position a thread at a time, no register bound) used 255 registers and
// spilled 1.3 to 3.4 KB a thread (G 4 and 8), and its warps waited on 16
// round trips to memory for their 64 rows of a sub-range.
// ls_bench_attention, 8b heads: 16k positions 122 -> 33 us, 1k 30 -> 15.5
// us (bench/results/2026-12-02-h200-s12.md); slower nowhere, so removed.
// Then out = acc / l (one split), or the split's (M, l, acc) record that
// attention_reduce_kernel merges, in attention_split_kernel's layout.
// Exact softmax within a sub-range, rescaled between sub-ranges: the same
// mathematics as the reference, in another order (f32 rounding only).
// With one split the block also writes out's 8-bit form when
// AttentionParams::q8 is set. Programmatic dependent launch (kernels/pdl.cuh).
// Two variants were measured and dropped (session 13, bench/results/
// 2026-12-02-h200-s13.md): L2 prefetches of the first sub-range's rows
// before the wait for q (-1 us at 256 positions, +4 us at 16k; decode after
// a 4k prompt 336 vs 340 tok/s), and the merge of the splits done by the
// block that finishes a head group's last split instead of a second kernel
// (its atomics and fences: 2x slower at 16k; decode 280 vs 340 tok/s).
// A split of at most 64 positions does prefetch its rows into L2 before the
// wait (rows before pos were written by earlier steps; pos, seq and the
// block table are copied in before the step's first kernel), and the output
// loop is unrolled. Session 16 (bench/results/2026-12-03-h200-s16.md):
// the kernel cost 18.6 us a 70b layer and 10.1 an 8b one at contexts up to
// 256, measured by leaving it out of the decode step; these three took the
// 70b decode from 68.1 to 68.8 tok/s (the split dot alone 68.7).
// Also measured: the value rows loaded 8 at a time in an explicit batch
// instead of the unrolled loop: 1-4 % slower in ls_bench_attention at every
// context, decode within noise (call 4).
// defines: kAttentionDecodeSub, kAttentionDecodeSmall, attention_decode_supported,
//          attention_decode_cuda
#pragma once

#include <cuda_runtime.h>

#include "kernels/attention.cuh"
#include "runtime/status.h"

namespace ls {

inline constexpr int32_t kAttentionDecodeSub = 256;
// Splits of at most this many positions take the split-dot score phase and
// (f16 caches) the stage of their rows in shared memory.
inline constexpr int32_t kAttentionDecodeSmall = 64;

// head_dim 64 or 128, n_head / n_head_kv in {1, 2, 4, 8}.
bool attention_decode_supported(const AttentionParams& p);

// Whether every split of a batch whose largest position is max_pos has at
// most kAttentionDecodeSmall positions (chunk, n_split, min_chunk as in
// AttentionParams): there the kernel's warps own heads (AttentionParams::own;
// the sums of a long split's values go through shared memory instead, which
// was faster at 4k and 16k positions). A captured layer graph holds the
// choice, so its owner captures again when this changes.
bool attention_decode_short(int32_t chunk, int32_t n_split, int32_t min_chunk, int32_t max_pos);
// The most positions a split of such a batch has (-1: max_pos not known).
int32_t attention_decode_longest(int32_t chunk, int32_t n_split, int32_t min_chunk,
                                 int32_t max_pos);

// attention_cuda's first pass (the reduce pass of n_split > 1 stays there).
Status attention_decode_cuda(const AttentionParams& p, cudaStream_t stream);

}  // namespace ls
