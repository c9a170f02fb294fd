// Decode attention of one token over a short row, a block per query head:
// see attention_decode_row.cuh.
#include "kernels/attention_decode_row.cuh"

#include <cuda_fp16.h>

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

// The launch's shared memory: the staged key and value rows, then the scores.
template <int HD>
constexpr size_t row_smem(int32_t rows) {
  return static_cast<size_t>(rows) * (2 * HD * sizeof(__half) + sizeof(float));
}

// Block: NG groups of HD threads (a thread a dimension of the value phase,
// each group a share of the rows); grid: n_head.
template <int HD, int G, int NG>
__global__ void __launch_bounds__(NG* HD) attention_row_kernel(AttentionParams p, int32_t rows) {
  constexpr int kThreads = NG * HD, kWarps = kThreads / 32;
  // Score phase: kLpr lanes a row, 8 values (16 bytes) a lane, kRpw rows a
  // warp instruction, kStep rows a block step.
  constexpr int kPer = 8, kLpr = HD / kPer, kRpw = 32 / kLpr, kStep = kWarps * kRpw;
  static_assert(kStep == 8 * NG, "head_dim 64 or 128: 8 rows a group's step");
  extern __shared__ __align__(16) unsigned char dyn_sh[];
  __half* const k_st = reinterpret_cast<__half*>(dyn_sh);  // (rows, HD)
  __half* const v_st = k_st + static_cast<size_t>(rows) * HD;
  float* const s_sh = reinterpret_cast<float*>(v_st + static_cast<size_t>(rows) * HD);
  __shared__ __align__(16) float q_sh[HD];
  __shared__ int64_t row_sh[kAttentionRowMax];  // each position's cache row (this KV head's offset)
  __shared__ float red_sh[2][kWarps];
  __shared__ float acc_sh[NG > 1 ? NG - 1 : 1][HD];  // groups 1.. value sums
  pdl_trigger();
  l2_prefetch_issue(p.pf);  // the o GEMV's weights (kernels/l2_prefetch.cuh)
  const int h = blockIdx.x, kvh = h / G;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int slot = lane / kLpr, dl = lane % kLpr;
  // pos, seq and the block table are written before the step's first
  // kernel, the rows before pos by earlier steps: all read before the wait.
  const int32_t pos = p.pos[0], sq = p.seq[0];
  const int n = pos + 1;
  if (n > rows) __trap();  // the launch was sized for a shorter row (a caller's error)
  const int32_t KV = p.n_head_kv * HD;
  for (int i = tid; i < n; i += kThreads)
    row_sh[i] = kv_page_row(p.pages, p.n_ctx, sq, i) * KV + static_cast<int64_t>(kvh) * HD;
  __syncthreads();
  const __half* const kc = static_cast<const __half*>(p.k_cache);
  const __half* const vc = static_cast<const __half*>(p.v_cache);
  auto stage = [&](int from, int below) {  // rows [from, below), 16 bytes a copy
    for (int c = from * kLpr + tid; c < below * kLpr; c += kThreads) {
      const int i = c / kLpr, part = (c % kLpr) * kPer;
      cp_async16(k_st + i * HD + part, kc + row_sh[i] + part);
      cp_async16(v_st + i * HD + part, vc + row_sh[i] + part);
    }
    cp_async_commit();
  };
  stage(0, pos);
  pdl_wait();
  const int64_t qoff = static_cast<int64_t>(h) * HD;  // token 0, head h
  if (p.k_new) {
    // RoPE and the KV store (AttentionParams::k_new): the grouped kernel's
    // arithmetic, so the same bits. Every block of the KV head rotates the
    // key itself and keeps its rounding in its stage; the first stores both
    // rows in the cache, which no other block of this step reads.
    const int n_pair = p.rope.n_rot / 2;
    const bool leader = h % G == 0;
    if (tid < HD / 2) {
      const float2 qv = reinterpret_cast<const float2*>(p.q + qoff)[tid];
      const float2 kv =
          reinterpret_cast<const float2*>(p.k_new + static_cast<int64_t>(kvh) * HD)[tid];
      float q2[2] = {qv.x, qv.y}, k2[2] = {kv.x, kv.y};
      if (tid < n_pair) {
        const float2 cs = rope_cs_of(p.rope, 0, pos, tid);
        rope_rotate(q2, cs);
        rope_rotate(k2, cs);
      }
      q_sh[2 * tid] = q2[0];
      q_sh[2 * tid + 1] = q2[1];
      const __half k0 = __float2half_rn(k2[0]), k1 = __float2half_rn(k2[1]);
      k_st[pos * HD + 2 * tid] = k0;
      k_st[pos * HD + 2 * tid + 1] = k1;
      if (leader) {
        __half* const kd = static_cast<__half*>(p.k_cache) + row_sh[pos] + 2 * tid;
        kd[0] = k0;
        kd[1] = k1;
      }
    }
    if (tid < HD) {
      const __half v = __float2half_rn(p.v_new[static_cast<int64_t>(kvh) * HD + tid]);
      v_st[pos * HD + tid] = v;
      if (leader) static_cast<__half*>(p.v_cache)[row_sh[pos] + tid] = v;
    }
  } else {
    // Rotated, and the row at pos stored, by the kernel before.
    if (tid < HD) q_sh[tid] = p.q[qoff + tid];
    stage(pos, pos + 1);
  }
  cp_async_wait<0>();
  __syncthreads();

  // Scores: q's 8 values of this lane in registers for every row.
  float qf[kPer];
#pragma unroll
  for (int j = 0; j < kPer; ++j) qf[j] = q_sh[dl * kPer + j];
#pragma unroll 4
  for (int base = warp * kRpw; base < n; base += kStep) {  // warp-uniform
    const int i = base + slot;
    float kf[kPer];
    if (i < n) {
      load8(k_st + i * HD + dl * kPer, kf);
    } else {
#pragma unroll
      for (int j = 0; j < kPer; ++j) kf[j] = 0.0f;
    }
    float d = qf[0] * kf[0];
#pragma unroll
    for (int j = 1; j < kPer; ++j) d = fmaf(qf[j], kf[j], d);
#pragma unroll
    for (int o = kLpr / 2; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
    if (i < n && dl == 0) s_sh[i] = d * p.scale;
  }
  __syncthreads();

  // Softmax over the row: its max, then p = exp(s - max) in place and their sum.
  float mx = -FLT_MAX;
  for (int i = tid; i < n; i += kThreads) mx = fmaxf(mx, s_sh[i]);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  if (lane == 0) red_sh[0][warp] = mx;
  __syncthreads();
  float M = red_sh[0][0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) M = fmaxf(M, red_sh[0][w]);
  float sum = 0.0f;
  for (int i = tid; i < n; i += kThreads) {
    const float e = expf(s_sh[i] - M);
    s_sh[i] = e;
    sum += e;
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (lane == 0) red_sh[1][warp] = sum;
  __syncthreads();
  float L = 0.0f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) L += red_sh[1][w];

  // Values: group grp takes dimension d over positions grp, grp + NG, ..,
  // in four chains; groups 1.. leave their sums to group 0, which adds them
  // in group order.
  const int grp = tid / HD, d = tid % HD;
  const __half* const vp = v_st + d;
  float a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  int i = grp;
  for (; i + 3 * NG < n; i += 4 * NG)
#pragma unroll
    for (int u = 0; u < 4; ++u)
      a[u] = fmaf(s_sh[i + u * NG], __half2float(vp[(i + u * NG) * HD]), a[u]);
  for (; i < n; i += NG) a[0] = fmaf(s_sh[i], __half2float(vp[i * HD]), a[0]);
  float acc = (a[0] + a[1]) + (a[2] + a[3]);
  if constexpr (NG > 1) {
    if (grp > 0) acc_sh[grp - 1][d] = acc;
    __syncthreads();
    if (grp > 0) return;
#pragma unroll
    for (int g = 0; g < NG - 1; ++g) acc += acc_sh[g][d];
  }
  const float o = L > 0.0f ? acc / L : 0.0f;
  p.out[qoff + d] = o;
  // A warp's 32 values are one 8-bit block of out (HD a multiple of 32).
  if (p.q8.q)
    act_q8_group<1>(&o, true, p.q8.q + qoff + d, p.q8.ds + (qoff + d) / kActQ8Block, lane == 0);
}

// The groups a launch for rows of this capacity takes: one for 32, four for
// more (LS_ATTENTION_ROW_GROUPS=1|2|4 for all: A/B). Session 49, call 2 (an
// H100, ls_bench_attention --short, us a call, 8b heads): one group 3.5,
// 5.1, 7.4, 11.9, 16.5 at 16, 64, 128, 256, 384 positions; two 3.4, 4.3,
// 5.5, 8.0, 10.6; four 3.5, 4.1, 4.9, 6.5, 8.1; the splits and their reduce
// 6.5, 6.9, 7.3, 7.9, 8.6.
int groups_for(int32_t rows) {
  static const int env = [] {
    const char* e = std::getenv("LS_ATTENTION_ROW_GROUPS");
    const int g = e ? std::atoi(e) : 0;
    return g == 1 || g == 2 || g == 4 ? g : 0;
  }();
  return env ? env : rows <= 32 ? 1 : 4;
}

template <int HD, int G, int NG>
Status launch_ng(const AttentionParams& p, int32_t rows, cudaStream_t stream) {
  static const cudaError_t e = cudaFuncSetAttribute(
      attention_row_kernel<HD, G, NG>, cudaFuncAttributeMaxDynamicSharedMemorySize,
      static_cast<int>(row_smem<HD>(kAttentionRowMax)));
  LS_CUDA_TRY(e);
  LS_CUDA_TRY(launch_pdl(attention_row_kernel<HD, G, NG>, dim3(static_cast<unsigned>(p.n_head)),
                         dim3(NG * HD), row_smem<HD>(rows), stream, p, rows));
  return ok();
}

template <int HD, int G>
Status launch_g(const AttentionParams& p, cudaStream_t stream) {
  const int32_t rows = attention_decode_row_rows(p.max_pos);
  switch (groups_for(rows)) {
    case 1:
      return launch_ng<HD, G, 1>(p, rows, stream);
    case 2:
      return launch_ng<HD, G, 2>(p, rows, stream);
    default:
      return launch_ng<HD, G, 4>(p, rows, stream);
  }
}

template <int HD>
Status launch_hd(const AttentionParams& p, cudaStream_t stream) {
  switch (p.n_head / p.n_head_kv) {
    case 1:
      return launch_g<HD, 1>(p, stream);
    case 2:
      return launch_g<HD, 2>(p, stream);
    case 4:
      return launch_g<HD, 4>(p, stream);
    default:
      return launch_g<HD, 8>(p, stream);
  }
}

bool shape_ok(int32_t head_dim, int32_t n_head, int32_t n_head_kv) {
  if (head_dim != 64 && head_dim != 128) return false;
  if (n_head_kv <= 0 || n_head % n_head_kv != 0) return false;
  const int32_t g = n_head / n_head_kv;
  return g == 1 || g == 2 || g == 4 || g == 8;
}

}  // namespace

int32_t attention_decode_row_max() {
  static const int32_t cap = [] {
    const char* e = std::getenv("LS_ATTENTION_ROW_MAX");
    const int v = e ? std::atoi(e) : 0;
    return v >= 1 && v <= kAttentionRowMax ? v : kAttentionRowDefault;
  }();
  return cap;
}

int32_t attention_decode_row_rows(int32_t max_pos) {
  const int32_t n = max_pos + 1;
  return n <= 32 ? 32 : n <= 64 ? 64 : n <= 128 ? 128 : n <= 256 ? 256 : kAttentionRowMax;
}

bool attention_decode_row_wanted(int64_t n_tok, bool kv_f32, int32_t head_dim, int32_t n_head,
                                 int32_t n_head_kv, int32_t max_pos) {
  static const bool env_off = [] {  // A/B: LS_ATTENTION_ROW=0, the splits and their reduce
    const char* e = std::getenv("LS_ATTENTION_ROW");
    return e && std::string(e) == "0";
  }();
  return !env_off && n_tok == 1 && !kv_f32 && shape_ok(head_dim, n_head, n_head_kv) &&
         max_pos >= 0 && max_pos < attention_decode_row_max();
}

bool attention_decode_row_applies(const AttentionParams& p) {
  if (p.row == 0 || p.n_tok != 1 || p.kv_f32 || p.n_split != 1 || p.max_pos < 0 ||
      p.max_pos >= kAttentionRowMax || !shape_ok(p.head_dim, p.n_head, p.n_head_kv))
    return false;
  return p.row == 1 || attention_decode_row_wanted(p.n_tok, p.kv_f32, p.head_dim, p.n_head,
                                                   p.n_head_kv, p.max_pos);
}

Status attention_decode_row_cuda(const AttentionParams& p, cudaStream_t stream) {
  if (!attention_decode_row_applies(p))
    return make_error(
        "attention_decode_row: not for %lld tokens, head_dim %d, %d heads over %d, %d splits, "
        "max_pos %d",
        static_cast<long long>(p.n_tok), p.head_dim, p.n_head, p.n_head_kv, p.n_split, p.max_pos);
  return p.head_dim == 64 ? launch_hd<64>(p, stream) : launch_hd<128>(p, stream);
}

}  // namespace ls
