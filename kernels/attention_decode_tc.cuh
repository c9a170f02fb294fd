// Decode attention over long splits on tensor cores: the same contract and
// the same split records as the grouped kernel (kernels/attention_decode.cuh),
// for the splits of more than kAttentionDecodeTcMin positions that longer
// contexts cut (each row in 16 or 32 splits: from ~512 positions on).
//
// Why: the grouped kernel runs its f32 dots on the CUDA cores, a position's
// key row per thread or split over 16 lanes with shuffles; its warps wait on
// those chains, and at 4k-16k positions it read the cache at 0.18-0.42 of
// the device-memory bound (ls_bench_attention, session 18) with a quarter of
// the SM's warps resident. A staged copy of the rows alone did not help
// (session 19: the split dot from a ring of shared buffers ran 2x slower):
// the instructions were the cost. Here the G query heads of a KV head are
// the 8 columns of an mma.sync m16n8k16 (G < 8 padded with zeros) and 16
// positions its rows, so a warp's 16 positions cost 32 mma for the scores
// and 32 for the values.
//
// Block: 128 threads = 4 warps, grid (n_split, n_head_kv, n_tok). The
// split's positions in tiles of 64 (16 a warp), the key and value rows of
// each tile copied into shared memory (cp.async, rows padded by 16 bytes so
// ldmatrix is free of bank conflicts, zero-filled past the split's end), two
// tiles in flight where a split spans more than one (else one: half the
// shared memory); the first ones are issued before the PDL wait. With
// AttentionParams::k_new, RoPE and the KV store are fused in as in the
// grouped kernel (the same bits stored); with one split the block writes
// out and its 8-bit form itself.
//   scores  S^T (16 positions x 8 heads) = K (ldmatrix) · (q · scale · log2 e)^T
//   softmax per head over the warp's positions, online across its tiles
//           (exp2, the running max and sum per head)
//   values  O^T (head_dim x 8 heads) += V^T (ldmatrix.trans) · P^T (movmatrix)
// then the 4 warps' (m, l, O) merge in shared memory into the split's record
// (or out).
//
// Precision: f32 q and p enter the f16 mma as two terms each, hi = f16(x)
// and lo = f16(x - hi), so x is carried to ~22 bits (f16 keys and values are
// exact); products are exact in f32 and summed in f32. The result agrees
// with the f32 reference as the grouped kernel does (the op test's bounds),
// but not bit for bit (other order).
//
// Used (attention_decode_tc_applies) for f16 caches, head_dim 64 or 128, G
// in {1, 2, 4, 8}, more than one split and splits longer than
// kAttentionDecodeTcMin positions (rows past ~512 positions), unless
// AttentionParams::tc is 0 or LS_ATTENTION_TC=0; tc 1 or LS_ATTENTION_TC=1
// for every split (tests, A/B). The shortest splits stay with the grouped
// kernel: at ~130 positions (splits of 8) this one ties it at best (the 8b:
// 440 tok/s both), and with two tiles in flight lost (418). Measured
// (session 19, bench/results/2026-12-03-h200-s19.md), against the grouped
// kernel in the same call: 8b decode after 1,000 tokens 407 against 377
// tok/s, after 4k 365-373 against 356-360, after 16k 315-318 against
// 261-266; 70b after 1,000 tokens 69.4 against 67.3. The threshold of 32
// between ~130 and 1,000 positions is not measured yet.
// defines: attention_decode_tc_applies, attention_decode_tc_cuda
#pragma once

#include <cuda_runtime.h>

#include "kernels/attention.cuh"
#include "runtime/status.h"

namespace ls {

// Splits of more positions than this take it by default (a batch's longest:
// attention_decode_longest).
inline constexpr int32_t kAttentionDecodeTcMin = 32;

bool attention_decode_tc_applies(const AttentionParams& p);

// attention_cuda's first pass for p where attention_decode_tc_applies(p)
// (tc 1 also for short splits); the reduce pass stays there.
Status attention_decode_tc_cuda(const AttentionParams& p, cudaStream_t stream);

}  // namespace ls
