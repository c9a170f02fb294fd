// Attention kernels: see attention.cuh for the mapping and the two passes.
#include <cfloat>
#include <cstdlib>
#include <string>

#include "kernels/attention.cuh"
#include "kernels/act_q8_group.cuh"
#include "kernels/attention_decode.cuh"
#include "kernels/attention_decode_row.cuh"
#include "kernels/attention_decode_tc.cuh"
#include "kernels/attention_prefill.cuh"
#include "kernels/pdl.cuh"
#include "runtime/cuda_util.cuh"

namespace ls {
namespace {

constexpr int kWarps = 4;
constexpr int kMaxPerLane = kAttentionMaxHeadDim / 32;

__device__ __forceinline__ float load_f32(const __half* p) {
  return __half2float(*p);
}
__device__ __forceinline__ float load_f32(const float* p) {
  return *p;
}

template <typename T>
__global__ void attention_split_kernel(AttentionParams p) {
  __shared__ float q_sh[kAttentionMaxHeadDim];
  __shared__ float m_sh[kWarps], l_sh[kWarps];
  __shared__ float acc_sh[kWarps][kAttentionMaxHeadDim];
  pdl_trigger();
  pdl_wait();
  const int s = blockIdx.x, h = blockIdx.y;
  const int64_t t = blockIdx.z;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int HD = p.head_dim, nl = HD / 32;
  const int32_t n_embd_kv = p.n_head_kv * HD;
  const int kvh = h / (p.n_head / p.n_head_kv);
  const float* q = p.q + t * (static_cast<int64_t>(p.n_head) * HD) + static_cast<int64_t>(h) * HD;
  for (int i = threadIdx.x; i < HD; i += blockDim.x) q_sh[i] = q[i];
  __syncthreads();

  const int32_t pos = p.pos[t];
  // The last split takes every position left (with one split: all of 0..pos).
  int32_t begin, end;
  attention_split_range(p, s, pos, begin, end);
  const int32_t sq = p.seq[t];

  float qr[kMaxPerLane], acc[kMaxPerLane];
#pragma unroll
  for (int j = 0; j < kMaxPerLane; ++j) {
    qr[j] = j < nl ? q_sh[lane + 32 * j] : 0.0f;
    acc[j] = 0.0f;
  }
  float m = -FLT_MAX, l = 0.0f;
  for (int32_t ps = begin + warp; ps < end; ps += kWarps) {
    const int64_t at = kv_page_row(p.pages, p.n_ctx, sq, ps) * n_embd_kv + kvh * HD;
    const T* k = static_cast<const T*>(p.k_cache) + at;
    float d = 0.0f;
#pragma unroll
    for (int j = 0; j < kMaxPerLane; ++j)
      if (j < nl) d += qr[j] * load_f32(k + lane + 32 * j);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
    const float sc = d * p.scale;
    const float m_new = fmaxf(m, sc);
    const float corr = expf(m - m_new);  // 0 on the first position (m = -FLT_MAX)
    const float w = expf(sc - m_new);
    l = l * corr + w;
    const T* v = static_cast<const T*>(p.v_cache) + at;
#pragma unroll
    for (int j = 0; j < kMaxPerLane; ++j)
      if (j < nl) acc[j] = acc[j] * corr + w * load_f32(v + lane + 32 * j);
    m = m_new;
  }
  // Merge the warps.
  if (lane == 0) {
    m_sh[warp] = m;
    l_sh[warp] = l;
  }
#pragma unroll
  for (int j = 0; j < kMaxPerLane; ++j)
    if (j < nl) acc_sh[warp][lane + 32 * j] = acc[j];
  __syncthreads();
  float M = -FLT_MAX;
  for (int w = 0; w < kWarps; ++w) M = fmaxf(M, m_sh[w]);
  float L = 0.0f;
  float f[kWarps];
  for (int w = 0; w < kWarps; ++w) {
    f[w] = l_sh[w] > 0.0f ? expf(m_sh[w] - M) : 0.0f;  // a warp that saw no position counts 0
    L += l_sh[w] * f[w];
  }
  const int64_t row = t * p.n_head + h;
  if (p.n_split == 1) {
    float* out = p.out + row * HD;
    const float inv = L > 0.0f ? 1.0f / L : 0.0f;
    for (int i = threadIdx.x; i < HD; i += blockDim.x) {
      float a = 0.0f;
      for (int w = 0; w < kWarps; ++w) a += acc_sh[w][i] * f[w];
      out[i] = a * inv;
    }
  } else {
    // Partial record of (row, split): m, l, then head_dim accumulators.
    float* rec = p.partial + (row * p.n_split + s) * (HD + 2);
    if (threadIdx.x == 0) {
      rec[0] = M;
      rec[1] = L;
    }
    for (int i = threadIdx.x; i < HD; i += blockDim.x) {
      float a = 0.0f;
      for (int w = 0; w < kWarps; ++w) a += acc_sh[w][i] * f[w];
      rec[2 + i] = a;
    }
  }
}

// One block per (head, token), head_dim threads (a multiple of 32). The
// splits' m and l go to shared memory first, loaded by all threads at once,
// and each thread's sum over the splits has no load that waits on the one
// before: a serial walk over the records (v4 and before) waited on two
// round trips to memory per split, ~2 x 64 at a context of 16k. The same
// sums in the same order as that walk, so the same bits.
__global__ void attention_reduce_kernel(AttentionParams p) {
  extern __shared__ float red_sh[];  // m (n_split), then the splits' factors f (n_split), then l
  __shared__ float wmax_sh[kAttentionMaxHeadDim / 32];
  pdl_trigger();
  pdl_wait();
  const int h = blockIdx.x;
  const int64_t t = blockIdx.y;
  const int HD = p.head_dim, ns = p.n_split, i = threadIdx.x;
  const int64_t row = t * p.n_head + h;
  const float* recs = p.partial + row * ns * (HD + 2);
  float* f_sh = red_sh + ns;
  float* l_sh = red_sh + 2 * ns;
  float M = -FLT_MAX;
  for (int s = i; s < ns; s += blockDim.x) {
    const float m = recs[s * (HD + 2)], l = recs[s * (HD + 2) + 1];
    red_sh[s] = m;
    l_sh[s] = l;
    if (l > 0.0f) M = fmaxf(M, m);  // a split past pos is empty (l = 0)
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
  if ((i & 31) == 0) wmax_sh[i >> 5] = M;
  __syncthreads();
  M = -FLT_MAX;
  for (int w = 0; w < static_cast<int>(blockDim.x >> 5); ++w) M = fmaxf(M, wmax_sh[w]);
  for (int s = i; s < ns; s += blockDim.x) f_sh[s] = l_sh[s] > 0.0f ? expf(red_sh[s] - M) : 0.0f;
  __syncthreads();
  float L = 0.0f, a = 0.0f;
#pragma unroll 8
  for (int s = 0; s < ns; ++s) {
    const float f = f_sh[s];
    if (l_sh[s] <= 0.0f) continue;
    L += l_sh[s] * f;
    a += recs[s * (HD + 2) + 2 + i] * f;
  }
  const float o = L > 0.0f ? a / L : 0.0f;
  p.out[row * HD + i] = o;
  // head_dim threads, a multiple of 32: a warp holds one 8-bit block of out.
  if (p.q8.q)
    act_q8_group<1>(&o, true, p.q8.q + row * HD + i, p.q8.ds + (row * HD + i) / kActQ8Block,
                    (i & 31) == 0);
}

}  // namespace

int32_t attention_splits(int64_t n_tok, int32_t n_head, int32_t max_pos) {
  if (n_tok * n_head >= 512) return 1;
  return (max_pos + 1 + kAttentionChunk - 1) / kAttentionChunk;
}

int32_t attention_splits_dynamic(int64_t n_tok, int32_t n_head, int32_t max_pos) {
  const int32_t n = max_pos + 1;
  if (n_tok * n_head >= 512 || n < 2 * kAttentionMinChunk) return 1;
  return n <= 2048 ? 16 : 32;
}

int64_t attention_partial_floats(int64_t n_tok, int32_t n_head, int32_t head_dim, int32_t n_split) {
  return n_split > 1 ? n_tok * n_head * n_split * (head_dim + 2) : 0;
}

namespace {
// The grouped-query decode kernel where it applies; LS_ATTENTION_KERNEL=3
// picks the per-head one (A/B).
int32_t decode_kernel(const AttentionParams& p) {
  static const int32_t env_kernel = [] {
    const char* e = std::getenv("LS_ATTENTION_KERNEL");
    return e ? std::atoi(e) : 0;
  }();
  return p.kernel != 0 ? p.kernel : (env_kernel != 0 ? env_kernel : 5);
}
}  // namespace

bool attention_fuses_rope(const AttentionParams& p) {
  static const bool env_off = [] {
    const char* e = std::getenv("LS_ATTENTION_ROPE");
    return e && std::string(e) == "0";
  }();
  return !env_off && p.n_tok == 1 && decode_kernel(p) == 5 &&
         (attention_decode_supported(p) || attention_decode_tc_applies(p));
}

Status attention_cuda(const AttentionParams& p, cudaStream_t stream) {
  if (p.n_tok == 0) return ok();
  if (p.head_dim % 32 != 0 || p.head_dim > kAttentionMaxHeadDim || p.head_dim <= 0)
    return make_error("attention: head_dim %d is not a multiple of 32 up to %d", p.head_dim,
                      kAttentionMaxHeadDim);
  if (p.n_head_kv <= 0 || p.n_head % p.n_head_kv != 0)
    return make_error("attention: %d heads do not group over %d KV heads", p.n_head, p.n_head_kv);
  if (p.k_new && !attention_fuses_rope(p))
    return make_error(
        "attention: RoPE and the KV store fuse only into the grouped kernel of one "
        "token (n_tok %lld, kernel %d)",
        static_cast<long long>(p.n_tok), decode_kernel(p));
  if (p.k_new && (p.rope.n_rot > p.head_dim || p.rope.n_rot % 2 != 0 || !p.v_new))
    return make_error("attention: fused RoPE with n_rot %d over head_dim %d", p.rope.n_rot,
                      p.head_dim);
  // Prompts: tensor cores. Decode-sized batches keep the scalar kernel below.
  if (!p.scalar_only && !p.kv_f32 && p.n_tok >= kAttentionPrefillMinTok &&
      attention_prefill_supported(p)) {
    LS_TRY(attention_prefill_f16kv_cuda(p, stream));
    return p.q8.q ? quantize_act_q8_cuda(p.out, p.n_tok,
                                         static_cast<int64_t>(p.n_head) * p.head_dim, p.q8, stream)
                  : ok();
  }
  if (p.n_split > 1 && !p.partial)
    return make_error("attention: %d splits need scratch", p.n_split);
  const dim3 grid(static_cast<unsigned>(p.n_split), static_cast<unsigned>(p.n_head),
                  static_cast<unsigned>(p.n_tok));
  const int32_t kernel = decode_kernel(p);
  if (kernel != 3 && kernel != 5) return make_error("attention: decode kernel %d (3 or 5)", kernel);
  // Who writes out's 8-bit form: the grouped kernel (one split), the reduce
  // (more), else a quantize launch after.
  bool q8_done = p.n_split > 1;
  if (kernel == 5 && attention_decode_row_applies(p)) {
    LS_TRY(attention_decode_row_cuda(p, stream));
    q8_done = true;
  } else if (kernel == 5 && attention_decode_tc_applies(p)) {
    LS_TRY(attention_decode_tc_cuda(p, stream));
    q8_done = true;
  } else if (kernel == 5 && attention_decode_supported(p)) {
    LS_TRY(attention_decode_cuda(p, stream));
    q8_done = true;
  } else if (p.kv_f32)
    LS_CUDA_TRY(launch_pdl(attention_split_kernel<float>, grid, dim3(32 * kWarps), 0, stream, p));
  else
    LS_CUDA_TRY(launch_pdl(attention_split_kernel<__half>, grid, dim3(32 * kWarps), 0, stream, p));
  if (p.n_split > 1) {
    const dim3 g2(static_cast<unsigned>(p.n_head), static_cast<unsigned>(p.n_tok));
    const size_t smem = 3 * static_cast<size_t>(p.n_split) * sizeof(float);
    if (smem > 48 * 1024)
      return make_error("attention: %d splits are too many to merge", p.n_split);
    LS_CUDA_TRY(launch_pdl(attention_reduce_kernel, g2, dim3(p.head_dim), smem, stream, p));
  }
  if (p.q8.q && !q8_done)
    return quantize_act_q8_cuda(p.out, p.n_tok, static_cast<int64_t>(p.n_head) * p.head_dim, p.q8,
                                stream);
  return ok();
}

}  // namespace ls
