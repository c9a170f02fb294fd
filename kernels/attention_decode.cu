// Decode attention over the G query heads of a KV head: see attention_decode.cuh.
#include "kernels/attention_decode.cuh"

#include <cuda_fp16.h>

#include <algorithm>
#include <cfloat>
#include <cstdlib>
#include <string>

#include "kernels/act_q8_group.cuh"
#include "kernels/cp_async.cuh"
#include "kernels/load8.cuh"
#include "kernels/pdl.cuh"
#include "kernels/rope_pair.cuh"
#include "runtime/cuda_util.cuh"

namespace ls {
namespace {

constexpr int kThreads = 128;
constexpr int kSub = kAttentionDecodeSub;

// The cache's rounding of a value (kv_store's).
__device__ __forceinline__ void store(__half* d, float x) {
  *d = __float2half_rn(x);
}
__device__ __forceinline__ void store(float* d, float x) {
  *d = x;
}

// See attention_decode.cuh for the phases; why each is shaped so: the
// v4 form (until session 12) read values 8 bytes a lane, a row a warp
// instruction, one position a thread at a time, without a register bound:
// 255 registers, spills, and 16 round trips to memory for a warp's 64 rows.
//
// kOwn (G a multiple of the warps: the 8b's G 4, the 70b's 8): warp w owns
// heads w, w + kWarps, .. in phases 2 and 3 and the output, so its value
// sums are whole within the warp: no barrier between the softmax and the
// values, no trip of G x HD sums through shared memory and the barrier after
// it, and each lane writes its own 8 values. ncu of the 70b kernel at ~130
// positions (session 17) counted 211 + 436 of a warp's ~2,180 instructions
// in that reduction and the output loop. The warp reads every value row of
// the split (4x the loads of phase 3, from the stage or L1) for a quarter of
// the heads: the same FMAs.
template <typename T, int HD, int G, bool kOwn>
__global__ void __launch_bounds__(kThreads, 4) attention_decode_kernel(AttentionParams p) {
  constexpr int kWarps = kThreads / 32;
  static_assert(!kOwn || G % kWarps == 0, "whole heads a warp");
  constexpr int GW = kOwn ? G / kWarps : G;  // heads of a warp's value sums
  // Value phase: a lane's kPer values of a row; kLpr lanes a row, kRpw rows a warp step.
  constexpr int kPer = 8;
  constexpr int kLpr = HD / kPer, kRpw = 32 / kLpr;
  constexpr int kSmallN = kAttentionDecodeSmall;  // sub-ranges this short: the split-dot scores
  constexpr int kStep = kWarps * kRpw;            // rows a block step of the split-dot phases
  // f16 caches: a split of at most kSmallN positions copies its key and
  // value rows into shared memory before the PDL wait (below).
  constexpr bool kStage = sizeof(T) == 2;
  static_assert(kSub == 2 * kThreads, "the score phase takes two positions a thread");
  __shared__ float q_sh[G][HD];
  __shared__ float s_sh[G][kSub];
  __shared__ int64_t row_sh[kSub];  // the cache row of each position of the sub-range
  __shared__ float m_sh[G], l_sh[G], c_sh[G];
  // Dynamic (attention_decode_smem): the staged rows k_st, v_st (kSmallN, HD)
  // each, and once the value phase has read them, the warps' sums red_sh.
  extern __shared__ __align__(16) unsigned char dyn_sh[];
  float(*const red_sh)[G][HD] = reinterpret_cast<float(*)[G][HD]>(dyn_sh);
  T* const k_st = reinterpret_cast<T*>(dyn_sh);
  T* const v_st = k_st + kSmallN * HD;
  pdl_trigger();
  l2_prefetch_issue(p.pf);  // the o GEMV's weights (kernels/l2_prefetch.cuh)
  const int s = blockIdx.x, kvh = blockIdx.y;
  const int64_t t = blockIdx.z;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int slot = lane / kLpr, dl = lane % kLpr;  // value phase: row slot, value group
  // pos, seq and the block table are written before the step's first
  // kernel, the cache rows before pos by earlier steps: read before the wait.
  const int32_t pos = p.pos[t], sq = p.seq[t];
  int32_t begin, end;
  attention_split_range(p, s, pos, begin, end);
  const int32_t KV = p.n_head_kv * HD;
  // Why the stage: the split-dot score phase's steps each waited on a load
  // from L2 (4 steps for 32 rows), after a round trip for the block table;
  // copied in before the wait, the rows are in shared memory when q comes.
  // Each thread copies the 16 bytes it reads itself in the score and value
  // phases (row i = warp kRpw + slot + j kStep, values dl kPer ..), so only
  // the row at pos, which this step writes, needs a barrier (below).
  // Only a batch of one token copies before the wait: in a longer one, the
  // rows of its other tokens (a speculative draft's) are written by the
  // kernel before, so they are copied after it.
  const bool staged = kStage && !p.no_stage && end - begin <= kSmallN;
  auto stage_rows = [&](int32_t from, int32_t below) {  // positions [from, below) of the split
#pragma unroll
    for (int j = 0; j < kSmallN / kStep; ++j) {
      const int i = warp * kRpw + slot + j * kStep;
      if (i < end - begin && begin + i >= from && begin + i < below) {
        const int64_t r = kv_page_row(p.pages, p.n_ctx, sq, begin + i) * KV + kvh * HD + dl * kPer;
        cp_async16(k_st + i * HD + dl * kPer, static_cast<const T*>(p.k_cache) + r);
        cp_async16(v_st + i * HD + dl * kPer, static_cast<const T*>(p.v_cache) + r);
      }
    }
    cp_async_commit();
  };
  if (staged && p.n_tok == 1) {
    stage_rows(begin, pos);
  } else if (end - begin <= kSmallN && tid < end - begin && begin + tid < pos) {
    const int64_t r = kv_page_row(p.pages, p.n_ctx, sq, begin + tid) * KV + kvh * HD;
    const char* kr = reinterpret_cast<const char*>(static_cast<const T*>(p.k_cache) + r);
    const char* vr = reinterpret_cast<const char*>(static_cast<const T*>(p.v_cache) + r);
#pragma unroll
    for (int b = 0; b < HD * static_cast<int>(sizeof(T)); b += 128) {
      asm volatile("prefetch.global.L2 [%0];" ::"l"(kr + b));
      asm volatile("prefetch.global.L2 [%0];" ::"l"(vr + b));
    }
  }
  pdl_wait();
  // RoPE and the KV store fused in (AttentionParams::k_new): this block's
  // heads of q rotated in shared memory; the block whose range holds pos
  // (not always the last split: chunks cut from the row's length can leave
  // the last ones empty) rotates the key and stores the token's rows, which
  // its own loads below then read (a block sees its global writes after the
  // barrier); no other block reads that row. Every load they need (the cos
  // and sin, the new rows) is issued with q's, so the fusion adds no round
  // trip to memory (the first form, loads after the barrier: +2.4 us a call).
  const bool fuse = p.k_new != nullptr, holds = fuse && begin <= pos && pos < end;
  const int n_pair = fuse ? p.rope.n_rot / 2 : 0;
  __shared__ float2 cs_sh[HD / 2];
  float2 k_in = make_float2(0.0f, 0.0f);
  float v_in = 0.0f;
  static_assert(HD <= kThreads, "a thread per value of the new rows");
  if (holds) {
    if (tid < HD / 2) k_in = reinterpret_cast<const float2*>(p.k_new + t * KV + kvh * HD)[tid];
    if (tid < HD) v_in = p.v_new[t * KV + kvh * HD + tid];
  }
  for (int i = tid; i < n_pair; i += kThreads) cs_sh[i] = rope_cs_of(p.rope, t, pos, i);
  const float* q =
      p.q + t * (static_cast<int64_t>(p.n_head) * HD) + static_cast<int64_t>(kvh) * G * HD;
  for (int i = tid; i < G * HD; i += kThreads) q_sh[i / HD][i % HD] = q[i];
  if (tid < G) {
    m_sh[tid] = -FLT_MAX;
    l_sh[tid] = 0.0f;
  }
  if (fuse) {
    __syncthreads();
    for (int j = tid; j < G * (HD / 2); j += kThreads) {
      const int i = j % (HD / 2);
      if (i < n_pair) rope_rotate(&q_sh[j / (HD / 2)][2 * i], cs_sh[i]);
    }
    if (holds) {
      const int64_t off = kv_page_row(p.pages, p.n_ctx, sq, pos) * KV + kvh * HD;
      if (tid < HD / 2) {
        float k2[2] = {k_in.x, k_in.y};
        if (tid < n_pair) rope_rotate(k2, cs_sh[tid]);
        store(static_cast<T*>(p.k_cache) + off + 2 * tid, k2[0]);
        store(static_cast<T*>(p.k_cache) + off + 2 * tid + 1, k2[1]);
        if (staged) {  // the same rounding as the cache's
          store(k_st + (pos - begin) * HD + 2 * tid, k2[0]);
          store(k_st + (pos - begin) * HD + 2 * tid + 1, k2[1]);
        }
      }
      if (tid < HD) {
        store(static_cast<T*>(p.v_cache) + off + tid, v_in);
        if (staged) store(v_st + (pos - begin) * HD + tid, v_in);
      }
    }
  } else if (staged) {
    // The rows stored by the kernel before (rope_kv_store_cuda): the one at
    // pos, or with more tokens than one, every row.
    stage_rows(p.n_tok == 1 ? pos : begin, pos + 1);
  }
  if (staged) cp_async_wait<0>();
  const T* kc = static_cast<const T*>(p.k_cache) + kvh * HD;
  const T* vc = static_cast<const T*>(p.v_cache) + kvh * HD + dl * kPer;
  // kOwn: acc[k] holds head warp + k kWarps; else acc[g] head g.
  float acc[GW][kPer];
#pragma unroll
  for (int g = 0; g < GW; ++g)
#pragma unroll
    for (int j = 0; j < kPer; ++j) acc[g][j] = 0.0f;
  __syncthreads();

  for (int32_t c0 = begin; c0 < end; c0 += kSub) {
    const int n = min(kSub, end - c0);
    if (n <= kSmallN) {
      // 1'. Scores of a short sub-range: a row's dot split over its kLpr
      // lanes (8 values each, as the value phase), the G partial dots summed
      // by xor shuffles inside the lane group; kRpw rows a warp step.
      if (!staged) {
        if (tid < n) row_sh[tid] = kv_page_row(p.pages, p.n_ctx, sq, c0 + tid) * KV;
        __syncthreads();
      }
      for (int base = warp * kRpw; base < n; base += kStep) {  // warp-uniform
        const int i = base + slot;
        float kf[kPer];
        if (i < n) {
          load8(staged ? k_st + i * HD + dl * kPer : kc + row_sh[i] + dl * kPer, kf);
        } else {
#pragma unroll
          for (int j = 0; j < kPer; ++j) kf[j] = 0.0f;
        }
        float d[G];
#pragma unroll
        for (int g = 0; g < G; ++g) {
          const float4 qa = *reinterpret_cast<const float4*>(&q_sh[g][dl * kPer]);
          const float4 qb = *reinterpret_cast<const float4*>(&q_sh[g][dl * kPer + 4]);
          float a = qa.x * kf[0];
          a = fmaf(qa.y, kf[1], a);
          a = fmaf(qa.z, kf[2], a);
          a = fmaf(qa.w, kf[3], a);
          a = fmaf(qb.x, kf[4], a);
          a = fmaf(qb.y, kf[5], a);
          a = fmaf(qb.z, kf[6], a);
          a = fmaf(qb.w, kf[7], a);
          d[g] = a;
        }
#pragma unroll
        for (int o = kLpr / 2; o > 0; o >>= 1)
#pragma unroll
          for (int g = 0; g < G; ++g) d[g] += __shfl_xor_sync(0xffffffffu, d[g], o);
        if (i < n && dl == 0)
#pragma unroll
          for (int g = 0; g < G; ++g) s_sh[g][i] = d[g] * p.scale;
      }
    } else {
      // 1. Scores, a thread per position: positions tid and tid + kThreads.
      int64_t row[2];
      bool has[2];
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const int i = tid + u * kThreads;
        has[u] = i < n;
        row[u] = has[u] ? kv_page_row(p.pages, p.n_ctx, sq, c0 + i) * KV : 0;
        if (has[u]) row_sh[i] = row[u];
      }
      float d[2][G];
#pragma unroll
      for (int u = 0; u < 2; ++u)
#pragma unroll
        for (int g = 0; g < G; ++g) d[u][g] = 0.0f;
#pragma unroll
      for (int e = 0; e < HD; e += 8) {
        float kf[2][8];
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          if (has[u]) {
            load8(kc + row[u] + e, kf[u]);
          } else {
#pragma unroll
            for (int j = 0; j < 8; ++j) kf[u][j] = 0.0f;
          }
        }
#pragma unroll
        for (int g = 0; g < G; ++g)
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            const float qv = q_sh[g][e + j];
            d[0][g] = fmaf(qv, kf[0][j], d[0][g]);
            d[1][g] = fmaf(qv, kf[1][j], d[1][g]);
          }
      }
#pragma unroll
      for (int u = 0; u < 2; ++u)
        if (has[u])
#pragma unroll
          for (int g = 0; g < G; ++g) s_sh[g][tid + u * kThreads] = d[u][g] * p.scale;
    }
    __syncthreads();
    // 2. Per head (a warp each): the running max, the rescale, p and l.
    for (int g = warp; g < G; g += kWarps) {
      float mx = -FLT_MAX;
      for (int i = lane; i < n; i += 32) mx = fmaxf(mx, s_sh[g][i]);
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
      const float m_old = m_sh[g], m_new = fmaxf(m_old, mx);
      float sum = 0.0f;
      for (int i = lane; i < n; i += 32) {
        const float e = expf(s_sh[g][i] - m_new);
        s_sh[g][i] = e;
        sum += e;
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
      __syncwarp();
      if (lane == 0) {
        const float corr = expf(m_old - m_new);  // 0 on the first sub-range (m_old = -FLT_MAX)
        c_sh[g] = corr;
        l_sh[g] = l_sh[g] * corr + sum;
        m_sh[g] = m_new;
      }
    }
    if constexpr (kOwn) {
      __syncwarp();  // phase 3 reads only what this warp wrote in phase 2
    } else {
      __syncthreads();
    }
    // 3. Values: warp w, row slot r takes positions kRpw w + r, + kRpw kWarps, ...
    //    (kOwn: every position, slot r the rows r, r + kRpw, ..; the stage's
    //    rows of other threads are visible since the barrier before the loop);
    //    a lane kPer consecutive values of each row.
#pragma unroll
    for (int k = 0; k < GW; ++k) {
      const float c = c_sh[kOwn ? warp + k * kWarps : k];
#pragma unroll
      for (int j = 0; j < kPer; ++j) acc[k][j] *= c;
    }
    constexpr int kFirst = kOwn ? 0 : 1, kEvery = kOwn ? kRpw : kStep;
#pragma unroll 4
    for (int i = kFirst * warp * kRpw + slot; i < n; i += kEvery) {
      float v[kPer];
      load8(staged ? v_st + i * HD + dl * kPer : vc + row_sh[i], v);
#pragma unroll
      for (int k = 0; k < GW; ++k) {
        const float w = s_sh[kOwn ? warp + k * kWarps : k][i];
#pragma unroll
        for (int j = 0; j < kPer; ++j) acc[k][j] = fmaf(w, v[j], acc[k][j]);
      }
    }
    __syncthreads();  // s_sh, row_sh, c_sh (and the stage, under red_sh) are read before
                      // the next sub-range (or the sums) write them
  }
  if constexpr (kOwn) {
    // The row slots' sums (lanes kLpr apart; every slot ends with them), then
    // the lanes of slot 0 write their kPer values of each head.
#pragma unroll
    for (int k = 0; k < GW; ++k)
#pragma unroll
      for (int j = 0; j < kPer; ++j)
#pragma unroll
        for (int o = kLpr; o < 32; o <<= 1) acc[k][j] += __shfl_xor_sync(0xffffffffu, acc[k][j], o);
#pragma unroll
    for (int k = 0; k < GW; ++k) {
      const int g = warp + k * kWarps;
      const int64_t row = t * p.n_head + static_cast<int64_t>(kvh) * G + g;
      const float L = l_sh[g];
      if (p.n_split == 1) {
        // 4 lanes' 8 values are one 8-bit block of out (HD a multiple of 32).
        float o[kPer];
#pragma unroll
        for (int j = 0; j < kPer; ++j) o[j] = L > 0.0f ? acc[k][j] / L : 0.0f;
        float* const dst = p.out + row * HD + dl * kPer;
        if (slot == 0) {
          reinterpret_cast<float4*>(dst)[0] = make_float4(o[0], o[1], o[2], o[3]);
          reinterpret_cast<float4*>(dst)[1] = make_float4(o[4], o[5], o[6], o[7]);
        }
        if (p.q8.q)
          act_q8_group<kPer>(o, slot == 0, p.q8.q + row * HD + dl * kPer,
                             p.q8.ds + (row * HD + dl * kPer) / kActQ8Block,
                             slot == 0 && dl % (kActQ8Block / kPer) == 0);
      } else if (slot == 0) {
        float* rec = p.partial + (row * p.n_split + s) * (HD + 2);
        if (dl == 0) *reinterpret_cast<float2*>(rec) = make_float2(m_sh[g], L);
#pragma unroll
        for (int j = 0; j < kPer; j += 2)  // rec + 2 is 8-byte aligned: HD + 2 is even
          *reinterpret_cast<float2*>(rec + 2 + dl * kPer + j) =
              make_float2(acc[k][j], acc[k][j + 1]);
      }
    }
  } else {
    // The row slots' sums (lanes kLpr apart), the warps' sums, then out = acc /
    // l or the split's record.
#pragma unroll
    for (int g = 0; g < G; ++g)
#pragma unroll
      for (int j = 0; j < kPer; ++j) {
#pragma unroll
        for (int o = kLpr; o < 32; o <<= 1) acc[g][j] += __shfl_xor_sync(0xffffffffu, acc[g][j], o);
        if (slot == 0) red_sh[warp][g][dl * kPer + j] = acc[g][j];
      }
    __syncthreads();
#pragma unroll
    for (int k = tid; k < G * HD; k += kThreads) {
      const int g = k / HD, d = k % HD;
      float a = 0.0f;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) a += red_sh[w][g][d];
      const int64_t row = t * p.n_head + static_cast<int64_t>(kvh) * G + g;
      const float L = l_sh[g];
      if (p.n_split == 1) {
        // A warp's 32 values are one 8-bit block of out (G * HD and HD are
        // multiples of 32): quantized here for the o GEMV, as quantize_act_q8 would.
        const float o = L > 0.0f ? a / L : 0.0f;
        p.out[row * HD + d] = o;
        if (p.q8.q)
          act_q8_group<1>(&o, true, p.q8.q + row * HD + d, p.q8.ds + (row * HD + d) / kActQ8Block,
                          lane == 0);
      } else {
        float* rec = p.partial + (row * p.n_split + s) * (HD + 2);
        if (d == 0) {
          rec[0] = m_sh[g];
          rec[1] = L;
        }
        rec[2 + d] = a;
      }
    }
  }
}

// The kernel's dynamic shared memory: the stage (f16 caches) or the warps'
// sums, whichever is larger (they share it). 32 KiB at most (f16, head_dim
// 128), so with the static 14.6 KiB of G 8 it stays under the default 48.
template <typename T, int HD, int G>
constexpr size_t attention_decode_smem() {
  const size_t stage = sizeof(T) == 2 ? 2 * kAttentionDecodeSmall * HD * sizeof(T) : 0;
  const size_t red = (kThreads / 32) * G * HD * sizeof(float);
  return stage > red ? stage : red;
}

// kOwn where G allows it and AttentionParams::own (resolved by
// attention_decode_cuda) asks for it.
template <typename T, int HD, int G>
Status launch_g(const AttentionParams& p, dim3 grid, cudaStream_t stream) {
  if constexpr (G % (kThreads / 32) == 0) {
    if (p.own == 1) {
      LS_CUDA_TRY(launch_pdl(attention_decode_kernel<T, HD, G, true>, grid, dim3(kThreads),
                             attention_decode_smem<T, HD, G>(), stream, p));
      return ok();
    }
  }
  LS_CUDA_TRY(launch_pdl(attention_decode_kernel<T, HD, G, false>, grid, dim3(kThreads),
                         attention_decode_smem<T, HD, G>(), stream, p));
  return ok();
}

template <typename T, int HD>
Status launch_hd(const AttentionParams& p, dim3 grid, cudaStream_t stream) {
  switch (p.n_head / p.n_head_kv) {
    case 1:
      return launch_g<T, HD, 1>(p, grid, stream);
    case 2:
      return launch_g<T, HD, 2>(p, grid, stream);
    case 4:
      return launch_g<T, HD, 4>(p, grid, stream);
    default:
      return launch_g<T, HD, 8>(p, grid, stream);
  }
}

}  // namespace

int32_t attention_decode_longest(int32_t chunk, int32_t n_split, int32_t min_chunk,
                                 int32_t max_pos) {
  if (max_pos < 0 || n_split < 1) return -1;
  const int32_t c = chunk > 0 ? chunk : std::max(min_chunk, (max_pos + n_split) / n_split);
  return std::min(c, max_pos + 1);
}

bool attention_decode_short(int32_t chunk, int32_t n_split, int32_t min_chunk, int32_t max_pos) {
  const int32_t n = attention_decode_longest(chunk, n_split, min_chunk, max_pos);
  return n >= 0 && n <= kAttentionDecodeSmall;
}

bool attention_decode_supported(const AttentionParams& p) {
  const int32_t g = p.n_head_kv > 0 ? p.n_head / p.n_head_kv : 0;
  return (p.head_dim == 64 || p.head_dim == 128) && p.n_head_kv > 0 &&
         p.n_head % p.n_head_kv == 0 && (g == 1 || g == 2 || g == 4 || g == 8);
}

Status attention_decode_cuda(const AttentionParams& params, cudaStream_t stream) {
  static const bool no_stage = [] {  // A/B: LS_ATTENTION_STAGE=0 reads the rows from L2
    const char* e = std::getenv("LS_ATTENTION_STAGE");
    return e && std::string(e) == "0";
  }();
  static const bool own_off = [] {  // A/B: LS_ATTENTION_OWN=0, the warps' sums in shared memory
    const char* e = std::getenv("LS_ATTENTION_OWN");
    return e && std::string(e) == "0";
  }();
  AttentionParams p = params;
  p.no_stage = p.no_stage || no_stage;
  // The form follows the batch's longest row (max_pos), and the two sum the
  // values in other orders: so never for an f32 cache, the exact oracle,
  // whose rows must not depend on the batch they share (a sequence in a
  // batch bit for bit the sequence alone: tests/gpu/test_pipeline_batch.cpp,
  // which failed from session 18 to 19 with it).
  if (p.own == -1)
    p.own =
        !own_off && !p.kv_f32 && attention_decode_short(p.chunk, p.n_split, p.min_chunk, p.max_pos)
            ? 1
            : 0;
  if (!attention_decode_supported(p))
    return make_error("attention_decode: head_dim %d with %d heads over %d KV heads", p.head_dim,
                      p.n_head, p.n_head_kv);
  const dim3 grid(static_cast<unsigned>(p.n_split), static_cast<unsigned>(p.n_head_kv),
                  static_cast<unsigned>(p.n_tok));
  if (p.kv_f32)
    return p.head_dim == 64 ? launch_hd<float, 64>(p, grid, stream)
                            : launch_hd<float, 128>(p, grid, stream);
  return p.head_dim == 64 ? launch_hd<__half, 64>(p, grid, stream)
                          : launch_hd<__half, 128>(p, grid, stream);
}

}  // namespace ls
