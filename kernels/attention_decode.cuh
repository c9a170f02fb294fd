// Decode attention, one block per (split, KV head, token): the G query heads
// of a KV head together, so each key and value row is read once for all of
// them (GQA), and the positions of a split in parallel.
//
// Why: attention_split_kernel (kernels/attention.cuh) gives each query head
// its own block and walks positions one per warp, an online-softmax chain
// whose every step waits for a row's load: 9 us a layer of the 8b at a
// context of ten positions, about the time of one of its GEMVs
// (bench/results/2026-12-02-h200-decode.md).
//
// Block: 128 threads. For each sub-range of at most kAttentionDecodeSub
// positions of the block's split:
//   1. scores: a thread per position dots the key row (16-byte loads) with
//      the G query vectors (shared memory), times scale;
//   2. per head, the sub-range's max; the running max M, the rescale factor
//      of what came before, p = exp(s - M) and the running sum l;
//   3. values: the 4 warps take every 4th position, a lane head_dim / 32
//      consecutive values of its row (8- or 16-byte loads), for the G heads;
//      the rows' addresses come from step 1 (shared memory), so no load
//      waits for a block-table load; the warps' sums meet at the end.
// Then out = acc / l (one split), or the split's (M, l, acc) record that
// attention_reduce_kernel merges, in attention_split_kernel's layout.
// Exact softmax within a sub-range, rescaled between sub-ranges: the same
// mathematics as the reference, in another order (f32 rounding only).
// Programmatic dependent launch (kernels/pdl.cuh).
// defines: kAttentionDecodeSub, attention_decode_supported, attention_decode_cuda
#pragma once

#include <cuda_runtime.h>

#include "kernels/attention.cuh"
#include "runtime/status.h"

namespace ls {

inline constexpr int32_t kAttentionDecodeSub = 256;

// head_dim 64 or 128, n_head / n_head_kv in {1, 2, 4, 8}.
bool attention_decode_supported(const AttentionParams& p);

// attention_cuda's first pass (the reduce pass of n_split > 1 stays there).
Status attention_decode_cuda(const AttentionParams& p, cudaStream_t stream);

}  // namespace ls
