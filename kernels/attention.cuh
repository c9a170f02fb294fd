// Attention over the KV cache (f16, or f32 for the exact oracle) on the GPU,
// for decode and prefill alike:
// entry t of the batch (query q[t], head h) attends to positions 0..pos[t]
// of its sequence seq[t], whose keys and values are already in the cache
// (kv_store runs first, so a prompt's tokens see each other causally, and
// several sequences can share a batch). GQA: head h reads KV head
// h / (n_head / n_head_kv).
// Layout: q, out (n_tok, n_head * head_dim) f32; caches of one layer, paged
// (kernels/kv_pages.h): rows of n_embd_kv f16 or f32, head g at offset g *
// head_dim of a row, the row of (seq, pos) found through the block table
// (with no table, the contiguous (n_seq, n_ctx, n_embd_kv)).
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
// Versions: v1 scalar FMA, one warp per position, f16 cache; v2: the same
// for an f16 or f32 cache; v3 (this file): each position's row through the
// block table (the same arithmetic in the same order: only addresses moved).
// Serves decode (and any batch under kAttentionPrefillMinTok entries, and
// every batch over an f32 cache).
// Batches of at least kAttentionPrefillMinTok entries over an f16 cache with
// head_dim 64 or 128 go to the tensor-core flash kernel of
// kernels/attention_prefill.cuh (f16 Q and P, so ~1e-3 relative instead of
// f32 throughout).
// defines: AttentionParams, attention_cuda, attention_splits, attention_splits_dynamic,
//          attention_split_range, attention_partial_floats
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/kv_pages.h"
#include "kernels/l2_prefetch.cuh"
#include "kernels/quantize_act.cuh"
#include "kernels/rope.cuh"
#include "runtime/status.h"

namespace ls {

inline constexpr int32_t kAttentionMinChunk = 8;  // chunk 0: the shortest a split gets

struct AttentionParams {
  const float* q = nullptr;  // (n_tok, n_head * head_dim)
  // This layer's pool (rows, n_embd_kv), f16 or f32; written only by the
  // fused KV store (k_new below).
  void* k_cache = nullptr;
  void* v_cache = nullptr;
  KvPages pages;                 // the block table (device memory); null: (n_seq, n_ctx) rows
  bool kv_f32 = false;           // the caches hold float, else __half
  const int32_t* pos = nullptr;  // (n_tok) device
  const int32_t* seq = nullptr;  // (n_tok) device
  float* out = nullptr;          // (n_tok, n_head * head_dim)
  float* partial = nullptr;      // scratch: attention_partial_floats(...) floats (n_split > 1)
  int64_t n_tok = 0;
  int32_t n_head = 0, n_head_kv = 0, head_dim = 0;
  int32_t n_ctx = 0;    // the contiguous layout's positions per sequence (no table)
  float scale = 1.0f;   // 1/sqrt(head_dim)
  int32_t chunk = 256;  // positions per split; 0: each row's own (attention_split_range)
  int32_t n_split = 1;  // attention_splits_dynamic() for chunk 0, else attention_splits()
  int32_t min_chunk = kAttentionMinChunk;  // chunk 0: the shortest a split gets (A/B)
  bool scalar_only = false;                // true: never the prefill kernel (tests, benches)
  // Decode kernel (A/B, tests, benches): 0 the default (LS_ATTENTION_KERNEL
  // overrides it), 3 attention_split_kernel (a block a query head), 5 the
  // grouped kernel of kernels/attention_decode.cuh (the default where it
  // applies).
  int32_t kernel = 0;
  // The grouped kernel reads a short split's rows from the cache (through L2)
  // instead of staging them in shared memory before its wait (A/B, tests;
  // LS_ATTENTION_STAGE=0 sets it).
  bool no_stage = false;
  // The largest position of the batch, where the caller knows it (-1: not
  // known), and the grouped kernel's form for G a multiple of its warps:
  // -1 the default (warps that own heads where every split of the batch is
  // short: attention_decode_short, and the cache is f16: an f32 cache, the
  // exact oracle, keeps one form whatever the batch), 0 never, 1 always
  // (tests, A/B; LS_ATTENTION_OWN=0 makes the default 0).
  int32_t max_pos = -1;
  int32_t own = -1;
  // Splits of an f16 cache on tensor cores (kernels/attention_decode_tc.cuh):
  // -1 the default (splits over kAttentionDecodeTcMin positions:
  // attention_decode_tc_applies; LS_ATTENTION_TC=0|1 never or always), 0 never,
  // 1 for every split (tests).
  int32_t tc = -1;
  // The tensor-core kernel keeps a split's block-table entries in shared
  // memory: -1 the default (on; LS_ATTENTION_TC_TABLE=0 turns it off), 0 off,
  // 1 on (tests).
  int32_t tc_table = -1;
  // One token over a short row on the row kernel (kernels/attention_decode_row.cuh:
  // a block per query head, no splits to merge): -1 the default (one split,
  // an f16 cache, max_pos known and under attention_decode_row_max();
  // LS_ATTENTION_ROW=0 turns it off), 0 never, 1 wherever it can (tests).
  int32_t row = -1;
  // Also out in the 8-bit form of the decode GEMV (kernels/quantize_act.cuh),
  // for the o projection: written by the kernel that writes out (one split:
  // the grouped kernel; else the reduce), as quantize_act_q8 would, so no
  // quantize launch runs between attention and the o GEMV. Other paths (the
  // per-head kernel alone, prefill) run quantize_act_q8 after.
  ActQ8Device q8{nullptr, nullptr};
  // RoPE and the KV store fused in (one token, the grouped kernel:
  // attention_fuses_rope): q is not yet rotated, and k_new, v_new (n_tok,
  // n_head_kv * head_dim) are the token's key and value rows, not yet rotated
  // or stored. Each block rotates its heads of q as it loads them; the block
  // whose split holds pos rotates the key and stores both rows there before
  // it reads the cache, so no rope_kv launch runs before attention. The same
  // arithmetic as rope_kv_store_cuda, so the same bits. rope: pos,
  // freq_factors, head_dim, n_rot, base, scale (its other fields unused).
  const float* k_new = nullptr;
  const float* v_new = nullptr;
  RopeCudaParams rope{};
  // The o GEMV's weights, asked of the L2 before the wait by the decode
  // kernels (kernels/l2_prefetch.cuh).
  L2Prefetch pf{};
};

inline constexpr int32_t kAttentionChunk = 256;
inline constexpr int32_t kAttentionMaxHeadDim = 256;

// Splits for a batch whose largest position is max_pos: one when the batch
// already gives enough blocks (n_tok * n_head >= 512), else enough chunks to cover max_pos.
int32_t attention_splits(int64_t n_tok, int32_t n_head, int32_t max_pos);

// Splits for chunk 0 (each row cut into n_split chunks of its own length,
// at least kAttentionMinChunk), the default: one when the batch gives
// enough blocks or the row is under 2 * kAttentionMinChunk positions; then
// 16 up to 2048 positions, 32 beyond. Why: each is the fastest count of
// ls_bench_attention --splits at 1k, 4k, 16k and 32k positions, for the 8b's
// and the 70b's heads: enough blocks to spread one token over the SMs, no
// more records than the reduce pass needs to merge. Session 12 (bench/results/
// 2026-12-02-h200-s12.md) chose 64 beyond 8192 for the grouped kernel; the
// tensor-core kernel of long splits (kernels/attention_decode_tc.cuh), fed
// by a ring of tiles, is faster with 32 there, each block's tiles longer
// (16k: 28.6 us against 35.8 with 64; 32k: 46.5 against 58.7; session 19,
// bench/results/2026-12-03-h200-s19.md). Up to 512 positions
// it was 8 splits of at least 32; session 17 (bench/results/
// 2026-12-03-h200-s17.md) found, by ncu, such a block's warps each walking
// ~2,200 dependent instructions, one warp a scheduler, and 16 splits of at
// least 8 positions decode the 70b at 71.3 tok/s instead of 69.3, the 8b
// at 433 instead of 420 (LS_ATTENTION_SHORT=splits,min_chunk for A/B). Fixed chunks of 256
// left a decode token below 256 positions one split (8 blocks for the whole
// GPU) and gave 128 splits at 32k, 24 % slower. And the count, part of every
// captured layer graph, changes at only three context lengths, so the graphs
// are seldom captured again. LS_ATTENTION_SPLITS=fixed (model/cuda_backend.cu)
// keeps the chunks of 256 for A/B.
int32_t attention_splits_dynamic(int64_t n_tok, int32_t n_head, int32_t max_pos);

#ifdef __CUDACC__
// Positions [begin, end) of split s of a row whose last position is pos:
// chunks of p.chunk, or (chunk 0) the row's pos + 1 positions in p.n_split
// chunks of at least kAttentionMinChunk, so that one split count serves
// every position (splits past the row's end are empty: the reduce skips
// them). The last split takes every position left.
__device__ __forceinline__ void attention_split_range(const AttentionParams& p, int s, int32_t pos,
                                                      int32_t& begin, int32_t& end) {
  const int32_t chunk = p.chunk > 0 ? p.chunk : max(p.min_chunk, (pos + p.n_split) / p.n_split);
  begin = s * chunk;
  end = s == p.n_split - 1 ? pos + 1 : min(begin + chunk, pos + 1);
}
#endif
// Scratch floats pass 1 needs.
int64_t attention_partial_floats(int64_t n_tok, int32_t n_head, int32_t head_dim, int32_t n_split);

// Whether attention_cuda can take k_new / v_new (RoPE and the KV store
// fused in) for p: one token, the grouped decode kernel (not under
// LS_ATTENTION_KERNEL=3), and not turned off by LS_ATTENTION_ROPE=0 (A/B).
// Otherwise run rope_kv_store_cuda first and leave k_new unset.
bool attention_fuses_rope(const AttentionParams& p);

Status attention_cuda(const AttentionParams& p, cudaStream_t stream);

}  // namespace ls
