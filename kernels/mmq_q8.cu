// mmq_q8: y = x · Wᵀ for batches of 9-64 tokens on int8 tensor cores (see
// kernels/mmq_q8.cuh).
//
// Why: up to session 22 these widths dequantized each weight to f16 in a
// scratch and ran an f16 GEMM: a 70B layer took 1.17 ms at 32 tokens where
// reading its 0.5 GB of Q4_K_M takes ~0.13 ms, because the f16 form is
// written and read back (3.4 GB a layer) (bench/results/2026-12-03-h200-s22.md).
// Here each weight byte is read once, from its GGUF block, and the products
// are mma.sync s8 × s8 → s32 over one x-block of 32 values, the scales
// applied in f32 once per x-block, as the GEMV does (kernels/gemv_q8.cu).
//
// Mapping. A warp owns a tile of 16 · MT rows (MT m-tiles of 16: two by
// default, so each x load feeds two products) × all the tokens (n-tiles of
// 8) over a range of the blocks of K; the lane layout and the step of one
// x-block are kernels/mmq_blocks.cuh's, shared with the streamed kernel
// (kernels/mmq_stream.cu), which the launcher below takes where it applies.
//
// A block is 4 warps: k_split of them split the K range of one tile (their
// sums meet in shared memory, added in warp order: the result does not
// depend on timing), the others take further tiles. k_split is the smallest
// that gives every SM a block (mmq_k_split), so small n_out (k, v) still
// spreads. Each warp loads the next block of K for its rows while it
// computes the current one.
// defines: mmq_supports, mmq_auto_max_tok, mmq_launch
#include "kernels/mmq_q8.cuh"

#include <cuda_fp16.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "kernels/act_q8.h"
#include "kernels/mmq_blocks.cuh"
#include "kernels/mmq_stream.cuh"
#include "runtime/cuda_util.cuh"
#include "runtime/env.h"

namespace ls {
namespace {

using namespace mmq;

constexpr int kWarps = 4, kThreads = 32 * kWarps;

// MT m-tiles of 16 rows a warp (each x load then feeds MT products), NT
// n-tiles of 8 tokens.
template <GgmlType T, int MT, int NT>
__global__ void __launch_bounds__(kThreads) mmq_kernel(MmqParams p) {
  using M = Mmq<T>;
  __shared__ float red[kWarps][MT * NT * 4][32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, c = lane & 3;
  const int ks = p.k_split, part = warp % ks;
  const int64_t tile = static_cast<int64_t>(blockIdx.x) * (kWarps / ks) + warp / ks;
  const int64_t r0 = tile * 16 * MT;
  const bool live = r0 < p.n_out;
  // Lane (g, c) loads rows r0 + 16 m + g and + 8 of m-tile m; rows past
  // n_out read the last row (their sums are not written).
  const uint8_t* wr[MT][2];
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      wr[m][h] = p.w + min(r0 + 16 * m + 8 * h + g, p.n_out - 1) * p.row_bytes;
  const int64_t nblk = p.n_in / M::kValues;
  // x block-major (kernels/quantize_act.cuh), ld token slots a block. Lane
  // (g, c): B's column g of n-tile nt is token 8 nt + g, C's columns 2c, 2c + 1
  // are tokens 8 nt + 2c, + 1; slots past n_tok hold whatever was there
  // (their columns are not written).
  const int64_t ld = mmq_x_ld(p.n_tok);
  float acc[MT][NT][4];
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
      acc[m][nt][0] = acc[m][nt][1] = acc[m][nt][2] = acc[m][nt][3] = 0.0f;

  typename M::Blk cur[MT][2], nxt[MT][2];
  int64_t b = part;
  if (live && b < nblk)
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int h = 0; h < 2; ++h) M::load(wr[m][h] + b * M::kBytes, c, cur[m][h]);
  for (; live && b < nblk; b += ks) {
    if (b + ks < nblk)  // the next block's bytes in flight while this one runs
#pragma unroll
      for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int h = 0; h < 2; ++h) M::load(wr[m][h] + (b + ks) * M::kBytes, c, nxt[m][h]);
#pragma unroll
    for (int s = 0; s < M::kSubs; ++s) {
      const int64_t xb = b * M::kSubs + s;                           // the x-block
      const int8_t* const xq = p.x.q + (xb * ld + g) * kActQ8Block;  // + 256 nt: n-tile nt
      const float4* const xd = reinterpret_cast<const float4*>(p.x.ds + xb * ld + 2 * c);
      mmq_xblock<T, MT, NT>(cur, s, xq, xd, c, acc);
    }
#pragma unroll
    for (int m = 0; m < MT; ++m) {
      cur[m][0] = nxt[m][0];
      cur[m][1] = nxt[m][1];
    }
  }

  // The k_split warps of a tile meet in shared memory; the first adds them
  // in warp order and writes.
  if (ks > 1) {
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) red[warp][(m * NT + nt) * 4 + i][lane] = acc[m][nt][i];
    __syncthreads();
    if (part != 0) return;
    for (int w = warp + 1; w < warp + ks; ++w)
#pragma unroll
      for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int i = 0; i < 4; ++i) acc[m][nt][i] += red[w][(m * NT + nt) * 4 + i][lane];
  }
  if (!live) return;
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int t = 8 * nt + 2 * c + (i & 1);
        const int64_t r = r0 + 16 * m + g + 8 * (i >> 1);
        if (t < p.n_tok && r < p.n_out) p.y[static_cast<int64_t>(t) * p.n_out + r] = acc[m][nt][i];
      }
}

// The fewest warps a tile's K range is split over (1, 2, 4) that still gives
// every SM a block (tiles of 16 · mt rows).
int mmq_k_split(int64_t n_out, int mt) {
  const int64_t tiles = (n_out + 16 * mt - 1) / (16 * mt);
  for (int ks : {1, 2})
    if (tiles * ks / kWarps >= cuda_sm_count()) return ks;
  return 4;
}

// Whether version 0 takes the streamed kernel where it fits (LS_MMQ_STREAM=0:
// the register kernel, for A/B).
bool mmq_stream_default() {
  static const bool on = [] {
    const char* e = std::getenv("LS_MMQ_STREAM");
    return !(e && std::string(e) == "0");
  }();
  return on;
}

// LS_MMQ_MT=1 or 2 (A/B of either kernel's m-tiles), else 0.
int mmq_env_m_tiles() {
  static const int env = [] {
    const char* e = std::getenv("LS_MMQ_MT");
    const int v = e ? std::atoi(e) : 0;
    return v == 1 || v == 2 ? v : 0;
  }();
  return env;
}

// Which calls version 0 gives the streamed kernel (where it fits), from
// ls_bench_matmul --widths 70b on the H100 (session 40, call 1, two stages
// where x is staged; us, streamed / register): up to 16 tokens every type
// (8: Q4_K gate/up 62 / 92, down 66 / 79, Q6_K down 112 / 191; 16: Q4_K
// 87 / 103, 95 / 90, Q6_K 152 / 207); past 16 Q8_0 only (32: Q6_K gate/up
// 310 / 243, down 349 / 269; Q4_K 202 / 140, 243 / 124; session 39's call
// 5 had Q6_K faster streamed at 32, with a form of the kernel not kept).
bool mmq_stream_takes(GgmlType type, int n_tok) {
  return n_tok <= 16 || type == GgmlType::Q8_0;
}

// The streamed kernel's m-tiles a block: LS_MMQ_MT (A/B), else two (each x
// load feeds two products) for Q4_K and Q5_K at one n-tile, else one (with
// two n-tiles of x in each stage two m-tiles leave an SM one block; Q6_K
// measured faster with one: q/o 42 against 48 us at 8 tokens), and one
// where two leave SMs without a block (the k and v of a 70b: 1,024 rows).
int mmq_stream_m_tiles(GgmlType type, int64_t n_out, int n_tok) {
  if (const int env = mmq_env_m_tiles()) return env;
  if ((n_out + 31) / 32 < cuda_sm_count()) return 1;
  return (type == GgmlType::Q4_K || type == GgmlType::Q5_K) && n_tok <= 8 ? 2 : 1;
}

// m-tiles a warp: MmqParams::m_tiles, else LS_MMQ_MT (1 or 2, A/B), else 2.
int mmq_m_tiles(const MmqParams& p) {
  if (p.m_tiles) return p.m_tiles;
  const int env = mmq_env_m_tiles();
  return env ? env : 2;
}

template <GgmlType T, int MT, int NT>
Status launch_nt(const MmqParams& p, cudaStream_t stream) {
  const int64_t tiles = (p.n_out + 16 * MT - 1) / (16 * MT), per_block = kWarps / p.k_split;
  const dim3 grid(static_cast<unsigned>((tiles + per_block - 1) / per_block));
  mmq_kernel<T, MT, NT><<<grid, kThreads, 0, stream>>>(p);
  LS_CUDA_TRY(cudaGetLastError());
  return ok();
}

template <GgmlType T>
Status launch_type(const MmqParams& p, cudaStream_t stream) {
  return mmq_dispatch(p.m_tiles, p.n_tok,
                      [&]<int MT, int NT>() { return launch_nt<T, MT, NT>(p, stream); });
}

}  // namespace

// ls_bench_matmul --widths on the H200 (bench/results/2026-12-03-h200-s23.md,
// call 3, two m-tiles a warp), us against dequantize + cuBLAS at 16 / 32 / 64
// tokens:
//   Q4_K 70b q/o 30 / 41 / 64 vs 89-92; gate/up 99 / 135 / 247 vs 277-280;
//        down 87 / 120 / 226 vs 275-283; 8b gate/up 30 / 39 / 61 vs 79-81,
//        q/o 16 / 20 / 33 vs 28; k/v (1,024 rows: 32 tiles, few SMs busy)
//        23 / 31 / 57 vs 28-30.
//   Q6_K 70b q/o 62 / 76 / 125 vs 93-95; gate/up 178 / 241 / 427 vs 292-296;
//        down 200 / 257 / 407 vs 292-299; 8b down 92 vs 84 at 16, k/v 52 vs 25
//        (its 210-byte blocks are read with 2-byte loads).
//   Q8_0 70b q/o 82 / 130 vs 95-96, gate/up 270 / 556 vs 306, down 269 / 482
//        vs 304-309; 8b slower from 16.
// Q5_K is Q4_K's kernel with one more load: taken as Q4_K.
//
// At decode widths (up to kGemvMaxTok) against the GEMV, the streamed
// kernel on the H100 (session 40, call 1, two stages; us at 2 / 4 / 8
// tokens, GEMV / streamed):
//   Q4_K 70b gate/up 58 / 73 / 94 vs 62 / 62 / 62, down 54 / 71 / 102 vs
//        65 / 66 / 66, q/o 24 / 28 / 35 vs 28 / 28 / 28, k/v (1,024 rows)
//        10 / 11 / 12 vs 13 / 13 / 13;
//   Q6_K gate/up 79 / 97 / 130 vs 110 / 110 / 110, down 81 / 104 / 161 vs
//        112 / 112 / 112, q/o 30 / 37 / 46 vs 38 / 39 / 39, k/v 11 / 12 /
//        14 vs 17.
// The GEMM's time is flat up to 8 tokens (one n-tile) where the GEMV's
// grows by the token: it takes Q4_K and Q5_K from 4 tokens and Q6_K from 6
// (between the widths measured), on matrices of 8,192 rows and columns or
// more (the 70b's, the shapes measured; an 8b's and a 1b's are not yet); k
// and v and Q8_0 (not measured at these widths) stay on the GEMV to 8 tokens.
// On by default since session 43 (LS_MMQ_DECODE=0: the GEMV, the A/B). In
// the engine (session 42, H100 machine) it took the 70b's GPU layer at
// width 8 from 0.59-0.60 to 0.50 ms and its verify steps' tok/s up 1.5-2 %
// (two rounds; small beside the runs' drift, but the same sign as the table
// above); the pipeline's GPU tests pass with it (session 43, call 1:
// 32 sequences each equal alone, a dry pool, a group split between the two).
// Session 39's pipeline batch test with the GEMM at decode widths did not
// end inside the call: the x scratch freed under the captured graphs (fixed
// in 95c2c2a; session 40 call 1: the test passes).
int mmq_decode_min_tok(GgmlType t, int64_t n_out, int64_t n_in) {
  // Only the shapes measured: the 70b's, all of 8,192 columns or more (the
  // 8b's gate and up, 14,336 x 4,096, and a 1b's were not).
  if (n_out < 8192 || n_in < 8192) return kMmqMinTok;
  switch (t) {
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
      return 4;
    case GgmlType::Q6_K:
      return 6;
    default:
      return kMmqMinTok;
  }
}

bool mmq_env_decode() {
  static const bool on = env_int("LS_MMQ_DECODE", 1, 0) > 0;
  return on;
}

int mmq_env_min_tok() {
  static const int env = static_cast<int>(env_int("LS_MMQ_MIN_TOK", 0, 2));
  return env > 0 ? std::clamp(env, 2, kMmqMinTok) : 0;
}

int mmq_auto_max_tok(GgmlType t, int64_t n_out) {
  switch (t) {
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
      return n_out >= 4096 ? kMmqMaxTok : 16;
    case GgmlType::Q6_K:
      return n_out >= 8192 ? 32 : 0;
    case GgmlType::Q8_0:
      return n_out >= 8192 ? 16 : 0;
    default:
      return 0;
  }
}

bool mmq_supports(GgmlType t) {
  return t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q6_K || t == GgmlType::Q8_0;
}

Status mmq_launch(GgmlType type, const MmqParams& p_in, cudaStream_t stream) {
  if (!mmq_supports(type)) return make_error("mmq: no kernel for %s", ggml_type_name(type));
  const GgmlTypeTraits& tr = ggml_traits(type);
  if (p_in.n_tok < 1 || p_in.n_tok > kMmqMaxTok)
    return make_error("mmq: n_tok %d outside 1..%d", p_in.n_tok, kMmqMaxTok);
  if (p_in.n_in <= 0 || p_in.n_in % tr.block_elems != 0 || p_in.n_out <= 0)
    return make_error("mmq: %s n_in %lld (a multiple of %u) and n_out %lld", ggml_type_name(type),
                      (long long)p_in.n_in, tr.block_elems, (long long)p_in.n_out);
  if (p_in.row_bytes != static_cast<int64_t>(ggml_row_bytes(type, p_in.n_in)))
    return make_error("mmq: row_bytes %lld is not a %s row of %lld", (long long)p_in.row_bytes,
                      ggml_type_name(type), (long long)p_in.n_in);
  if (p_in.k_split != 0 && p_in.k_split != 1 && p_in.k_split != 2 && p_in.k_split != 4)
    return make_error("mmq: k_split %d is not 0, 1, 2 or 4", p_in.k_split);
  if (!p_in.w || !p_in.x.q || !p_in.x.ds || !p_in.y) return make_error("mmq: a null pointer");
  if (p_in.m_tiles != 0 && p_in.m_tiles != 1 && p_in.m_tiles != 2)
    return make_error("mmq: m_tiles %d is not 0, 1 or 2", p_in.m_tiles);
  if (p_in.version < 0 || p_in.version > 2)
    return make_error("mmq: version %d is not 0, 1 or 2", p_in.version);
  MmqParams p = p_in;
  if (p.version == 2 || (p.version == 0 && mmq_stream_default() && mmq_stream_fits(type, p) &&
                         mmq_stream_takes(type, p.n_tok))) {
    if (p.m_tiles == 0) p.m_tiles = mmq_stream_m_tiles(type, p.n_out, p.n_tok);
    return mmq_stream_launch(type, p, stream);
  }
  p.m_tiles = mmq_m_tiles(p_in);
  if (p.k_split == 0) p.k_split = mmq_k_split(p.n_out, p.m_tiles);
  return mmq_dispatch_type(type, [&]<GgmlType T>() { return launch_type<T>(p, stream); });
}

}  // namespace ls
