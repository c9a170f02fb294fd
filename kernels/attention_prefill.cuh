// Causal prefill attention over the f16 KV cache on tensor cores (a flash
// attention: Q·Kᵀ, online softmax and P·V per tile, the scores never leave
// registers). Same contract as attention_cuda (kernels/attention.cuh):
// entry t of the batch (q[t], head h) attends to positions 0..pos[t] of its
// sequence seq[t], already in the cache; GQA head h reads KV head
// h / (n_head / n_head_kv). attention_cuda dispatches here for batches
// of at least kAttentionPrefillMinTok entries when
// attention_prefill_supported() holds; decode batches keep the scalar kernel.
//
// Layout: q, out (n_tok, n_head * head_dim) f32; caches (n_seq, n_ctx,
// n_embd_kv) f16. head_dim 64 or 128. q must be 16-byte aligned.
//
// Grid (ceil(n_tok / 64), n_head), 128 threads = 4 warps; tile index
// reversed so the tiles with the most keys (the end of a prompt) start first.
// A block holds 64 consecutive batch entries of one head; warp w owns rows
// 16w..16w+15. Q is scaled by `scale`, rounded to f16 and kept in registers
// as mma A fragments. Keys stream in tiles of 64 positions (K and V, double
// buffered in shared memory with cp.async, zero-filled past the last needed
// position so stale cache bytes, even NaN, never reach the sums).
// Per key tile a warp runs S = Q·Kᵀ (mma.sync m16n8k16, f16 in, f32 out),
// masks entries whose sequence differs or whose position is past the row's
// pos, updates the running max / sum in f32 (exp2 with log2(e) folded in),
// rounds P to f16 and accumulates O += P·V in f32. A warp skips key tiles
// beyond the largest position among its rows (the causal upper triangle).
//
// Rows of one tile usually share a sequence (a prompt). When they do not
// (several prompts in one batch), the block walks the tile's sequences one
// after another, each over its own keys, masking the other rows: correct for
// any (pos, seq), but a batch of many single-token sequences costs one key
// walk per sequence per tile, which is why decode-sized batches stay on the
// scalar kernel.
//
// Precision: Q and P are f16 (scores and sums f32), so the result differs
// from the f32 reference by ~1e-3 relative; the test allows NMSE 1e-5.
// Versions: v1 (this), one head per block (GQA heads re-read K/V, from L2).
// defines: kAttentionPrefillMinTok, attention_prefill_supported, attention_prefill_f16kv_cuda
#pragma once

#include <cuda_runtime.h>

#include "kernels/attention.cuh"
#include "runtime/status.h"

namespace ls {

// Batches with fewer entries go to the scalar kernel (decode must not change).
inline constexpr int64_t kAttentionPrefillMinTok = 64;

// An f16 cache, head_dim 64 or 128, heads that group over the KV heads, q 16-byte aligned.
bool attention_prefill_supported(const AttentionParams& p);

// Ignores n_split and partial (no scratch). Asynchronous on `stream`.
Status attention_prefill_f16kv_cuda(const AttentionParams& p, cudaStream_t stream);

}  // namespace ls
