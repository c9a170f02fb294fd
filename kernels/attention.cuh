// Attention over the KV cache (f16, or f32 for the exact oracle) on the GPU,
// for decode and prefill alike:
// entry t of the batch (query q[t], head h) attends to positions 0..pos[t]
// of its sequence seq[t], whose keys and values are already in the cache
// (kv_store runs first, so a prompt's tokens see each other causally, and
// several sequences can share a batch). GQA: head h reads KV head
// h / (n_head / n_head_kv).
// Layout: q, out (n_tok, n_head * head_dim) f32; caches of one layer
// (n_seq, n_ctx, n_embd_kv) f16 or f32, head g at offset g * head_dim of a row.
// Pass 1, attention_split_kernel<T>: grid (n_split, n_head, n_tok),
//   128 threads = 4 warps. Block s covers positions [s*chunk, (s+1)*chunk)
//   ∩ [0, pos], the last split everything from s*chunk to pos (so one split
//   covers the whole context); each warp takes every 4th position: the lanes split the
//   head's dims (lane, lane+32, ...; head_dim a multiple of 32, at most
//   256), a shuffle reduction gives the score, and an online softmax keeps a
//   running max m, sum l and weighted V sum per warp. The 4 warps merge in
//   shared memory. With one split, the block writes out = acc / l directly.
// Pass 2, attention_reduce_kernel (n_split > 1 only): grid (n_head,
//   n_tok), head_dim threads; merges the splits' (m, l, acc) by rescaling to
//   the largest m. Splitting long contexts keeps a decode step (one token,
//   few heads) spread over all SMs.
// Versions: v1 scalar FMA, one warp per position, f16 cache; v2 (this file):
// the same for an f16 or f32 cache. Serves decode (and any batch under
// kAttentionPrefillMinTok entries, and every batch over an f32 cache).
// Batches of at least kAttentionPrefillMinTok entries over an f16 cache with
// head_dim 64 or 128 go to the tensor-core flash kernel of
// kernels/attention_prefill.cuh (f16 Q and P, so ~1e-3 relative instead of
// f32 throughout). Planned: 16-byte KV loads.
// defines: AttentionParams, attention_cuda, attention_splits, attention_partial_floats
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/status.h"

namespace ls {

struct AttentionParams {
  const float* q = nullptr;         // (n_tok, n_head * head_dim)
  const void* k_cache = nullptr;  // this layer's (n_seq, n_ctx, n_embd_kv), f16 or f32
  const void* v_cache = nullptr;
  bool kv_f32 = false;            // the caches hold float, else __half
  const int32_t* pos = nullptr;  // (n_tok) device
  const int32_t* seq = nullptr;  // (n_tok) device
  float* out = nullptr;          // (n_tok, n_head * head_dim)
  float* partial = nullptr;      // scratch: attention_partial_floats(...) floats (n_split > 1)
  int64_t n_tok = 0;
  int32_t n_head = 0, n_head_kv = 0, head_dim = 0;
  int32_t n_ctx = 0;
  float scale = 1.0f;        // 1/sqrt(head_dim)
  int32_t chunk = 256;       // positions per split
  int32_t n_split = 1;       // from attention_splits()
  bool scalar_only = false;  // true: never the prefill kernel (tests, benches)
};

inline constexpr int32_t kAttentionChunk = 256;
inline constexpr int32_t kAttentionMaxHeadDim = 256;

// Splits for a batch whose largest position is max_pos: one when the batch
// already gives enough blocks (n_tok * n_head >= 512), else enough chunks to cover max_pos.
int32_t attention_splits(int64_t n_tok, int32_t n_head, int32_t max_pos);
// Scratch floats pass 1 needs.
int64_t attention_partial_floats(int64_t n_tok, int32_t n_head, int32_t head_dim, int32_t n_split);

Status attention_cuda(const AttentionParams& p, cudaStream_t stream);

}  // namespace ls
