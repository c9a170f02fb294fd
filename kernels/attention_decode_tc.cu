// Decode attention of long splits on tensor cores: see attention_decode_tc.cuh.
#include "kernels/attention_decode_tc.cuh"

#include <cuda_fp16.h>

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <string>

#include "kernels/act_q8_group.cuh"
#include "kernels/attention_decode.cuh"
#include "kernels/cp_async.cuh"
#include "kernels/mma_f16.cuh"
#include "kernels/pdl.cuh"
#include "kernels/rope_pair.cuh"
#include "runtime/cuda_util.cuh"

namespace ls {
namespace {

constexpr int kThreads = 128, kWarps = kThreads / 32;
constexpr int kTile = 16 * kWarps;  // positions a tile: 16 a warp
constexpr int kMaxStages = 3;       // tiles in flight, at most (the default: 2)
constexpr int kCols = 8;            // the mma's n: query heads, G padded to 8
constexpr int kPageSlots = 256;     // block-table entries a split may keep in shared memory
constexpr float kLog2e = 1.4426950408889634f, kLn2 = 0.6931471805599453f;

template <int HD>
struct TcSmem {
  static constexpr int kLd =
      HD + 8;  // halves a row: +16 bytes, so ldmatrix rows miss each other's banks
  static constexpr int kTileHalves = kTile * kLd;  // the keys (then the values) of a tile
  static constexpr int kStageHalves = 2 * kTileHalves;
  // After the loop the same memory holds each warp's O (kCols, HD), m and l.
  static constexpr size_t kRed = (kWarps * kCols * HD + 2 * kWarps * kCols) * sizeof(float);
  static constexpr size_t bytes(int stages) {
    const size_t st = stages * kStageHalves * sizeof(__half);
    return st > kRed ? st : kRed;
  }
};

// x as hi + lo, both f16 (two lanes' worth: x0 low, x1 high).
__device__ __forceinline__ void split_half2(float x0, float x1, uint32_t& hi, uint32_t& lo) {
  const __half2 h = __floats2half2_rn(x0, x1);
  const float2 hf = __half22float2(h);
  hi = *reinterpret_cast<const uint32_t*>(&h);
  lo = pack_half2(x0 - hf.x, x1 - hf.y);
}

template <int HD, int G>
__global__ void __launch_bounds__(kThreads, 2)
    attention_decode_tc_kernel(AttentionParams p, int stages, bool table_sh_on) {
  using Sm = TcSmem<HD>;
  constexpr int kLd = Sm::kLd;
  constexpr int kK = HD / 16;      // k-steps of the scores, m-tiles of the values
  constexpr int kChunks = HD / 8;  // 16-byte chunks a row
  constexpr int kCopies = kTile * kChunks / kThreads;  // a thread's chunks of a tile's keys
  static_assert(kTile * kChunks % kThreads == 0, "whole chunks a thread");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __half* const st = reinterpret_cast<__half*>(smem_raw);
  pdl_trigger();
  l2_prefetch_issue(p.pf);  // the o GEMV's weights (kernels/l2_prefetch.cuh)
  const int s = blockIdx.x, kvh = blockIdx.y;
  const int64_t t = blockIdx.z;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, c = lane & 3;
  // pos, seq and the block table are written before the step's first
  // kernel, the cache rows before pos by earlier steps: read before the wait.
  const int32_t pos = p.pos[t], sq = p.seq[t];
  int32_t begin, end;
  attention_split_range(p, s, pos, begin, end);
  const int64_t KV = static_cast<int64_t>(p.n_head_kv) * HD;
  const int n_tiles = end > begin ? (end - begin + kTile - 1) / kTile : 0;
  // With table_sh (AttentionParams::tc_table), the split's block-table
  // entries are copied into shared memory once, so a tile's copies wait for
  // no lookup in L2 (each tile's lookups were a round trip on its path).
  const int32_t page0 = begin >> p.pages.shift;
  const int n_pages = end > begin ? ((end - 1) >> p.pages.shift) - page0 + 1 : 0;
  const bool table_sh = table_sh_on && p.pages.table != nullptr && n_pages <= kPageSlots;
  __shared__ int32_t page_sh[kPageSlots];
  if (table_sh) {
    const int32_t* const trow =
        p.pages.table + static_cast<int64_t>(sq) * p.pages.max_blocks + page0;
    for (int i = tid; i < n_pages; i += kThreads) page_sh[i] = trow[i];
    __syncthreads();
  }
  auto row_of = [&](int32_t q) -> int64_t {  // the pool row of position q
    if (!table_sh) return kv_page_row(p.pages, p.n_ctx, sq, q);
    return (static_cast<int64_t>(page_sh[(q >> p.pages.shift) - page0]) << p.pages.shift) +
           (q & ((1 << p.pages.shift) - 1));
  };

  // Tile j's rows in [from, below) into its stage, and with `zero` its rows
  // past the split's end as zeros (so stale bytes, even NaN, never meet a
  // zero weight), as one commit group. Thread tid copies chunks tid, tid +
  // 128, ..: 16 neighbouring threads a row, so a warp reads two whole rows.
  // The block table is read first for every copy (an asm copy orders memory:
  // a lookup after one would wait for its own round trip).
  auto stage = [&](int j, int32_t from, int32_t below, bool zero) {
    __half* const ks = st + (j % stages) * Sm::kStageHalves;
    __half* const vs = ks + Sm::kTileHalves;
    const int32_t c0 = begin + j * kTile;
    int64_t src[kCopies];
#pragma unroll
    for (int u = 0; u < kCopies; ++u) {
      const int i = tid + u * kThreads, r = i / kChunks, ch = i % kChunks;
      const int32_t q = c0 + r;
      src[u] = q < end && q >= from && q < below ? row_of(q) * KV + kvh * HD + ch * 8
                                                 : (q >= end && zero ? -1 : -2);
    }
#pragma unroll
    for (int u = 0; u < kCopies; ++u) {
      const int i = tid + u * kThreads, r = i / kChunks, ch = i % kChunks;
      const uint32_t kd = smem_u32(ks + r * kLd + ch * 8), vd = smem_u32(vs + r * kLd + ch * 8);
      if (src[u] >= 0) {
        cp_async16_zfill(kd, static_cast<const __half*>(p.k_cache) + src[u], 16);
        cp_async16_zfill(vd, static_cast<const __half*>(p.v_cache) + src[u], 16);
      } else if (src[u] == -1) {
        cp_async16_zfill(kd, p.k_cache, 0);
        cp_async16_zfill(vd, p.v_cache, 0);
      }
    }
    cp_async_commit();
  };
  const int n_first = n_tiles < stages ? n_tiles : stages;
  // The tile that holds pos: its row is this step's. Stored by the kernel
  // before, with one token it is copied after the wait, as one more group;
  // fused (k_new), this block stores it below.
  const bool fuse = p.k_new != nullptr;
  const int j_pos = begin <= pos && pos < end ? (pos - begin) / kTile : -1;
  const bool pos_group = p.n_tok == 1 && !fuse && j_pos >= 0 && j_pos < n_first;
  if (p.n_tok == 1)
    for (int j = 0; j < n_first; ++j) stage(j, begin, pos, true);
  // The fused rows' loads are issued with the wait's first loads (k_new, v_new,
  // the cos and sin), so the fusion adds no round trip.
  const bool holds = fuse && j_pos >= 0;
  const int n_pair = fuse ? p.rope.n_rot / 2 : 0;
  __shared__ float2 cs_sh[HD / 2];
  float2 k_in = make_float2(0.0f, 0.0f);
  float v_in = 0.0f;
  static_assert(HD <= kThreads, "a thread per value of the new rows");
  pdl_wait();
  if (p.n_tok != 1) {  // the batch's other rows are the kernel before's too
    for (int j = 0; j < n_first; ++j) stage(j, begin, end, true);
  } else if (pos_group) {
    stage(j_pos, pos, pos + 1, false);
  }
  if (fuse) {
    // RoPE and the KV store (AttentionParams::k_new): the block whose split
    // holds pos rotates the key and stores both rows (the cache's rounding),
    // into the stage too where its tile is already being copied (a later
    // tile copies the row from the cache, after the barriers below).
    if (holds) {
      if (tid < HD / 2) k_in = reinterpret_cast<const float2*>(p.k_new + t * KV + kvh * HD)[tid];
      if (tid < HD) v_in = p.v_new[t * KV + kvh * HD + tid];
    }
    for (int i = tid; i < n_pair; i += kThreads) cs_sh[i] = rope_cs_of(p.rope, t, pos, i);
    __syncthreads();
    if (holds) {
      const int64_t off = kv_page_row(p.pages, p.n_ctx, sq, pos) * KV + kvh * HD;
      __half* const ks =
          st + (j_pos % stages) * Sm::kStageHalves + (pos - begin - j_pos * kTile) * kLd;
      const bool in_stage = j_pos < n_first;
      if (tid < HD / 2) {
        float k2[2] = {k_in.x, k_in.y};
        if (tid < n_pair) rope_rotate(k2, cs_sh[tid]);
        const __half2 kh = __floats2half2_rn(k2[0], k2[1]);
        reinterpret_cast<__half2*>(static_cast<__half*>(p.k_cache) + off)[tid] = kh;
        if (in_stage) reinterpret_cast<__half2*>(ks)[tid] = kh;
      }
      if (tid < HD) {
        const __half vh = __float2half_rn(v_in);
        static_cast<__half*>(p.v_cache)[off + tid] = vh;
        if (in_stage) ks[Sm::kTileHalves + tid] = vh;
      }
    }
  }

  // q^T as the scores' B fragments: lane (g, c) holds head g, dims 16 k + 2c,
  // + 1 (b0b1) and + 8, + 9 (b2b3), times scale · log2 e (scores in base 2),
  // as hi and lo halves; heads past G are zeros.
  uint32_t qh[kK][2], ql[kK][2];
  {
    const float f = p.scale * kLog2e;
    const float* q = p.q + t * (static_cast<int64_t>(p.n_head) * HD) +
                     (static_cast<int64_t>(kvh) * G + (g < G ? g : 0)) * HD;
#pragma unroll
    for (int k = 0; k < kK; ++k)
#pragma unroll
      for (int b = 0; b < 2; ++b) {
        float2 x = make_float2(0.0f, 0.0f);
        if (g < G) x = *reinterpret_cast<const float2*>(q + 16 * k + 2 * c + 8 * b);
        const int pair = 8 * k + c + 4 * b;  // dims 2 pair, + 1: a RoPE pair
        if (pair < n_pair) {
          float x2[2] = {x.x, x.y};
          rope_rotate(x2, cs_sh[pair]);
          x = make_float2(x2[0], x2[1]);
        }
        split_half2(x.x * f, x.y * f, qh[k][b], ql[k][b]);
      }
  }
  // Lane (g, c): heads 2c and 2c + 1 of its warp's positions. m: the running
  // max (base 2), l: the lane's share of the running sum, o: O^T's C
  // fragments, dims 16 k + g (o[k][0..1]) and + 8 (o[k][2..3]).
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  float o[kK][4];
#pragma unroll
  for (int k = 0; k < kK; ++k) o[k][0] = o[k][1] = o[k][2] = o[k][3] = 0.0f;

  for (int j = 0; j < n_tiles; ++j) {
    // Tile j's copies have landed (this thread's; the barrier: everyone's).
    // Committed after j's: j + 1's (issued before the loop, or after tile
    // j - 1 ran), and before the loop perhaps pos's: wait for all there.
    const int later = j == 0 && pos_group ? 0 : min(stages - 1, n_tiles - 1 - j);
    if (later >= 2)
      cp_async_wait<2>();
    else if (later == 1)
      cp_async_wait<1>();
    else
      cp_async_wait<0>();
    __syncthreads();
    const __half* const ks = st + (j % stages) * Sm::kStageHalves;
    const __half* const vs = ks + Sm::kTileHalves;
    const int n_in = min(kTile, end - (begin + j * kTile));  // positions of the tile
    // Scores: rows 16 warp + (0..15) of the tile; ldmatrix lane l: row l % 8
    // (+ 8 for matrices 1 and 3), dims + 8 for matrices 2 and 3.
    float sc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    {
      const __half* kr =
          ks + (16 * warp + (lane & 7) + ((lane >> 3) & 1) * 8) * kLd + (lane >> 4) * 8;
#pragma unroll
      for (int k = 0; k < kK; ++k) {
        uint32_t a[4];
        ldmatrix_x4(a, smem_u32(kr + 16 * k));
        mma_f16_f32(sc, a, qh[k][0], qh[k][1]);
        mma_f16_f32(sc, a, ql[k][0], ql[k][1]);
      }
    }
    // Positions past the split's end weigh nothing.
    if (16 * warp + g >= n_in) sc[0] = sc[1] = -INFINITY;
    if (16 * warp + g + 8 >= n_in) sc[2] = sc[3] = -INFINITY;
    // Per head: the max over the warp's 16 positions (lanes of one c), the
    // rescale of what came before, p = 2^(s - m).
    float mx0 = fmaxf(sc[0], sc[2]), mx1 = fmaxf(sc[1], sc[3]);
#pragma unroll
    for (int x = 4; x < 32; x <<= 1) {
      mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, x));
      mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, x));
    }
    const float mn0 = fmaxf(m[0], mx0), mn1 = fmaxf(m[1], mx1);
    // While every score so far is -inf, a base of 0 keeps the exp2s at 0.
    const float b0 = mn0 == -INFINITY ? 0.0f : mn0, b1 = mn1 == -INFINITY ? 0.0f : mn1;
    const float r0 = exp2f(m[0] - b0), r1 = exp2f(m[1] - b1);
    m[0] = mn0;
    m[1] = mn1;
    const float p0 = exp2f(sc[0] - b0), p1 = exp2f(sc[1] - b1);
    const float p2 = exp2f(sc[2] - b0), p3 = exp2f(sc[3] - b1);
    l[0] = l[0] * r0 + (p0 + p2);
    l[1] = l[1] * r1 + (p1 + p3);
#pragma unroll
    for (int k = 0; k < kK; ++k) {
      o[k][0] *= r0;
      o[k][1] *= r1;
      o[k][2] *= r0;
      o[k][3] *= r1;
    }
    // P^T as the values' B fragments (positions x heads): P's C fragment is
    // an 8x8 matrix per 8 positions (row g, heads 2c, 2c + 1); transposed,
    // lane (g, c) holds head g at positions 2c, 2c + 1 (+ 8): b0b1 (b2b3).
    uint32_t ph0, pl0, ph1, pl1;
    split_half2(p0, p1, ph0, pl0);
    split_half2(p2, p3, ph1, pl1);
    ph0 = movmatrix_trans(ph0);
    pl0 = movmatrix_trans(pl0);
    ph1 = movmatrix_trans(ph1);
    pl1 = movmatrix_trans(pl1);
    // Values: V^T tiles of 16 dims x the warp's 16 positions; ldmatrix.trans
    // lane l: position l % 8 (+ 8 for matrices 2 and 3), dims + 8 for
    // matrices 1 and 3.
    {
      const __half* vr =
          vs + (16 * warp + (lane & 7) + (lane >> 4) * 8) * kLd + ((lane >> 3) & 1) * 8;
#pragma unroll
      for (int k = 0; k < kK; ++k) {
        uint32_t a[4];
        ldmatrix_x4_trans(a, smem_u32(vr + 16 * k));
        mma_f16_f32(o[k], a, ph0, ph1);
        mma_f16_f32(o[k], a, pl0, pl1);
      }
    }
    __syncthreads();  // the stage is read: tile j + stages may fill it
    if (j + stages < n_tiles) stage(j + stages, begin, end, true);
  }

  // The warps' (m, l, O) through shared memory (the stages are done: no copy
  // is in flight), merged per head into the split's record.
  float* const red_o = reinterpret_cast<float*>(smem_raw);  // (kWarps, kCols, HD)
  float* const red_m = red_o + kWarps * kCols * HD;         // (kWarps, kCols)
  float* const red_l = red_m + kWarps * kCols;
#pragma unroll
  for (int x = 4; x < 32; x <<= 1) {
    l[0] += __shfl_xor_sync(0xffffffffu, l[0], x);
    l[1] += __shfl_xor_sync(0xffffffffu, l[1], x);
  }
  if (g == 0) {
    red_m[warp * kCols + 2 * c] = m[0];
    red_m[warp * kCols + 2 * c + 1] = m[1];
    red_l[warp * kCols + 2 * c] = l[0];
    red_l[warp * kCols + 2 * c + 1] = l[1];
  }
  {
    float* const w0 = red_o + (warp * kCols + 2 * c) * HD + g;
#pragma unroll
    for (int k = 0; k < kK; ++k) {
      w0[16 * k] = o[k][0];
      w0[HD + 16 * k] = o[k][1];
      w0[16 * k + 8] = o[k][2];
      w0[HD + 16 * k + 8] = o[k][3];
    }
  }
  __syncthreads();
  for (int i = tid; i < G * HD; i += kThreads) {
    const int h = i / HD, d = i % HD;
    float M = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) M = fmaxf(M, red_m[w * kCols + h]);
    float L = 0.0f, a = 0.0f;
    if (M != -INFINITY) {
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        const float f = exp2f(red_m[w * kCols + h] - M);  // 0 for a warp that saw nothing
        L += red_l[w * kCols + h] * f;
        a += red_o[(w * kCols + h) * HD + d] * f;
      }
    }
    const int64_t row = t * p.n_head + static_cast<int64_t>(kvh) * G + h;
    if (p.n_split == 1) {
      // out = O / l; a warp's 32 values are one 8-bit block of out (HD a
      // multiple of 32): quantized here for the o GEMV, as quantize_act_q8 would.
      const float ov = L > 0.0f ? a / L : 0.0f;
      p.out[row * HD + d] = ov;
      if (p.q8.q)
        act_q8_group<1>(&ov, true, p.q8.q + row * HD + d, p.q8.ds + (row * HD + d) / kActQ8Block,
                        lane == 0);
      continue;
    }
    float* const rec = p.partial + (row * p.n_split + s) * (HD + 2);
    if (d == 0) {
      rec[0] = M == -INFINITY ? -FLT_MAX : M * kLn2;  // natural log units, as the reduce merges
      rec[1] = L;
    }
    rec[2 + d] = a;
  }
}

// Tiles in flight: two where a split spans more than one tile, else one
// (half the shared memory: with two, the kernel on every split of a short
// decode ran the 8b at 418 tok/s, with one at 440, as the grouped kernel;
// session 19, call 6). Two beat one and three at 4k-32k positions in
// ls_bench_attention (16k: 29.6, 35.5 and 30.5 us). LS_ATTENTION_TC_STAGES=1..3
// for A/B. (Asking the largest shared-memory carveout changed nothing there.)
int tc_stages(const AttentionParams& p) {
  static const int env = [] {
    const char* e = std::getenv("LS_ATTENTION_TC_STAGES");
    const int v = e ? std::atoi(e) : 0;
    return v >= 1 && v <= kMaxStages ? v : 0;
  }();
  if (env) return env;
  return attention_decode_short(p.chunk, p.n_split, p.min_chunk, p.max_pos) ? 1 : 2;
}

// The split's block-table entries in shared memory (AttentionParams::tc_table):
// -1 the default, on. Session 20 call 1 (bench/results/2026-12-03-h200-s20.md),
// ls_bench_attention 8b 16k 29.5 against 31.4 us, 32k 47.0 against 50.2; 8b
// decode after 16,000 tokens 312.8 against 306.9 tok/s, even at 600-4,000.
// LS_ATTENTION_TC_TABLE=0 turns it off (A/B).
bool tc_table(const AttentionParams& p) {
  static const bool env_off = [] {
    const char* e = std::getenv("LS_ATTENTION_TC_TABLE");
    return e && std::string(e) == "0";
  }();
  return p.tc_table == 1 || (p.tc_table == -1 && !env_off);
}

template <int HD, int G>
Status launch(const AttentionParams& p, cudaStream_t stream) {
  const int stages = tc_stages(p);
  const size_t smem = TcSmem<HD>::bytes(stages);
  // Above the default 48 KiB: allowed once per kernel, for the most stages.
  static const cudaError_t e = cudaFuncSetAttribute(
      attention_decode_tc_kernel<HD, G>, cudaFuncAttributeMaxDynamicSharedMemorySize,
      static_cast<int>(TcSmem<HD>::bytes(kMaxStages)));
  LS_CUDA_TRY(e);
  const dim3 grid(static_cast<unsigned>(p.n_split), static_cast<unsigned>(p.n_head_kv),
                  static_cast<unsigned>(p.n_tok));
  LS_CUDA_TRY(launch_pdl(attention_decode_tc_kernel<HD, G>, grid, dim3(kThreads), smem, stream, p,
                         stages, tc_table(p)));
  return ok();
}

template <int HD>
Status launch_hd(const AttentionParams& p, cudaStream_t stream) {
  switch (p.n_head / p.n_head_kv) {
    case 1:
      return launch<HD, 1>(p, stream);
    case 2:
      return launch<HD, 2>(p, stream);
    case 4:
      return launch<HD, 4>(p, stream);
    default:
      return launch<HD, 8>(p, stream);
  }
}

}  // namespace

bool attention_decode_tc_applies(const AttentionParams& p) {
  // A/B: LS_ATTENTION_TC=0 the grouped kernel everywhere, 1 this one
  // everywhere (short splits and one split too).
  static const char* const env = std::getenv("LS_ATTENTION_TC");
  static const bool env_off = env && std::string(env) == "0";
  static const bool env_on = env && std::string(env) == "1";
  if (p.tc == 0 || (p.tc == -1 && env_off) || p.kv_f32) return false;
  if (p.head_dim != 64 && p.head_dim != 128) return false;
  if (p.n_head_kv <= 0 || p.n_head % p.n_head_kv != 0) return false;
  const int32_t g = p.n_head / p.n_head_kv;
  if (g != 1 && g != 2 && g != 4 && g != 8) return false;
  if (p.n_split > 1 && !p.partial) return false;
  if (p.tc == 1 || (p.tc == -1 && env_on)) return true;
  const int32_t longest = attention_decode_longest(p.chunk, p.n_split, p.min_chunk, p.max_pos);
  return p.n_split > 1 && (longest < 0 || longest > kAttentionDecodeTcMin);
}

Status attention_decode_tc_cuda(const AttentionParams& p, cudaStream_t stream) {
  if (!attention_decode_tc_applies(p))
    return make_error("attention_decode_tc: not for head_dim %d, %d heads over %d, %d splits",
                      p.head_dim, p.n_head, p.n_head_kv, p.n_split);
  return p.head_dim == 64 ? launch_hd<64>(p, stream) : launch_hd<128>(p, stream);
}

}  // namespace ls
