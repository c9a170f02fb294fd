// Tensor-core causal prefill attention: see attention_prefill.cuh for the
// mapping. Fragment layouts are those of mma.sync m16n8k16
// (kernels/mma_f16.cuh), so two neighbouring C tiles of S are exactly the A
// fragment of P for the P·V product (no shared-memory round trip).
#include <cfloat>
#include <cstdint>

#include "kernels/attention_prefill.cuh"
#include "kernels/cp_async.cuh"
#include "kernels/mma_f16.cuh"
#include "runtime/cuda_util.cuh"

namespace ls {
namespace {

constexpr int kBr = 64;        // batch entries (query rows) per block
constexpr int kBc = 64;        // key positions per tile
constexpr int kThreads = 128;  // 4 warps x 16 rows

template <int HD>
struct PrefillSmem {
  static constexpr int kLd =
      HD + 8;  // halves per row: +16 bytes keeps ldmatrix rows on distinct banks
  static constexpr int kTile = kBr * kLd;  // halves per tile (kBr == kBc)
  static constexpr size_t kBytes = 5 * kTile * sizeof(__half) + 4 * kBr * sizeof(int32_t) + 16;
};

template <int HD>
__global__ void __launch_bounds__(kThreads, 2) attention_prefill_f16kv_kernel(AttentionParams p) {
  using Sm = PrefillSmem<HD>;
  constexpr int kLd = Sm::kLd;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __half* q_sh = reinterpret_cast<__half*>(smem_raw);  // (kBr, kLd)
  __half* k_sh = q_sh + Sm::kTile;                     // 2 x (kBc, kLd)
  __half* v_sh = k_sh + 2 * Sm::kTile;                 // 2 x (kBc, kLd)
  int32_t* seq_sh =
      reinterpret_cast<int32_t*>(v_sh + 2 * Sm::kTile);  // (kBr) row's sequence, -1 past n_tok
  int32_t* pos_sh = seq_sh + kBr;                        // (kBr)
  int32_t* useq_sh = pos_sh + kBr;                       // distinct sequences of the tile
  int32_t* uend_sh = useq_sh + kBr;  // per distinct sequence: 1 + its largest pos in the tile
  int32_t* nu_sh = uend_sh + kBr;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int64_t t0 = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * kBr;
  const int h = blockIdx.y;
  const int kvh = h / (p.n_head / p.n_head_kv);
  const int64_t n_embd_kv = static_cast<int64_t>(p.n_head_kv) * HD;
  const int64_t q_stride = static_cast<int64_t>(p.n_head) * HD;

  if (tid < kBr) {
    const int64_t t = t0 + tid;
    seq_sh[tid] = t < p.n_tok ? p.seq[t] : -1;
    pos_sh[tid] = t < p.n_tok ? p.pos[t] : -1;
  }
  // Q tile: f32 -> scale -> f16, zeros past n_tok.
  for (int i = tid; i < kBr * HD / 4; i += kThreads) {
    const int r = i / (HD / 4), c = (i % (HD / 4)) * 4;
    float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
    if (t0 + r < p.n_tok)
      x = *reinterpret_cast<const float4*>(p.q + (t0 + r) * q_stride +
                                           static_cast<int64_t>(h) * HD + c);
    __half2* d = reinterpret_cast<__half2*>(q_sh + r * kLd + c);
    d[0] = __floats2half2_rn(x.x * p.scale, x.y * p.scale);
    d[1] = __floats2half2_rn(x.z * p.scale, x.w * p.scale);
  }
  __syncthreads();
  if (tid == 0) {  // the tile's distinct sequences, in order of first appearance
    int n = 0;
    for (int r = 0; r < kBr; ++r) {
      const int32_t s = seq_sh[r];
      if (s < 0) continue;
      int u = 0;
      while (u < n && useq_sh[u] != s) ++u;
      if (u == n) {
        useq_sh[n] = s;
        uend_sh[n++] = pos_sh[r] + 1;
      } else {
        uend_sh[u] = max(uend_sh[u], pos_sh[r] + 1);
      }
    }
    *nu_sh = n;
  }
  // Q fragments: 8x8 matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7),
  // (rows 0-7, k 8-15), (rows 8-15, k 8-15) = a0a1, a2a3, a4a5, a6a7.
  uint32_t qf[HD / 16][4];
  {
    const int r = warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, c = (lane >> 4) * 8;
#pragma unroll
    for (int kk = 0; kk < HD / 16; ++kk)
      ldmatrix_x4(qf[kk], smem_u32(q_sh + r * kLd + kk * 16 + c));
  }
  __syncthreads();

  const int g = lane >> 2, c2 = (lane & 3) * 2;
  const int r0 = warp * 16 + g, r1 = r0 + 8;  // this thread's two rows
  const int32_t seq0 = seq_sh[r0], seq1 = seq_sh[r1];
  const int32_t pos0 = pos_sh[r0], pos1 = pos_sh[r1];
  const float kLog2e = 1.4426950408889634f;

  float o[HD / 8][4];
#pragma unroll
  for (int d = 0; d < HD / 8; ++d) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.f;
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;  // l: this thread's partial sums

  const int n_u = *nu_sh;
  for (int u = 0; u < n_u; ++u) {
    const int32_t s = useq_sh[u], kv_end = uend_sh[u];
    const int n_blk = (kv_end + kBc - 1) / kBc;
    // Largest position among this warp's rows of sequence s (-1: none).
    int32_t wmax = max(seq0 == s ? pos0 : -1, seq1 == s ? pos1 : -1);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
      wmax = max(wmax, __shfl_xor_sync(0xffffffffu, wmax, off));
    const int64_t head = static_cast<int64_t>(kvh) * HD;

    // A tile's 64 positions span 64 / kKvBlockLen blocks of the paged cache:
    // each row's address through the table (the 16-byte pieces of one row
    // read the same entry, from L1).
    auto load_tile = [&](int blk, int buf) {
      const int j0 = blk * kBc;
      __half* kd = k_sh + buf * Sm::kTile;
      __half* vd = v_sh + buf * Sm::kTile;
      for (int i = tid; i < kBc * HD / 8; i += kThreads) {
        const int r = i / (HD / 8), c = (i % (HD / 8)) * 8;
        const int32_t j = j0 + r;
        const bool in = j < kv_end;
        const int64_t off = in ? kv_page_row(p.pages, p.n_ctx, s, j) * n_embd_kv + head + c : 0;
        cp_async16_zfill(smem_u32(kd + r * kLd + c), static_cast<const __half*>(p.k_cache) + off,
                         in ? 16 : 0);
        cp_async16_zfill(smem_u32(vd + r * kLd + c), static_cast<const __half*>(p.v_cache) + off,
                         in ? 16 : 0);
      }
      cp_async_commit();
    };

    load_tile(0, 0);
    for (int blk = 0; blk < n_blk; ++blk) {
      if (blk + 1 < n_blk) {
        load_tile(blk + 1, (blk + 1) & 1);
        cp_async_wait<1>();
      } else {
        cp_async_wait<0>();
      }
      __syncthreads();
      const int j0 = blk * kBc;
      if (j0 <= wmax) {
        const __half* ks = k_sh + (blk & 1) * Sm::kTile;
        const __half* vs = v_sh + (blk & 1) * Sm::kTile;
        // S = Q·Kᵀ: B[k = dim][n = key] = K[key][dim], K row-major, so the
        // plain ldmatrix of K rows is the col-major B fragment. One x4 gives
        // two key groups of 8: (keys 0-7, dims 0-7), (keys 0-7, dims 8-15),
        // (keys 8-15, dims 0-7), (keys 8-15, dims 8-15).
        float sc[kBc / 8][4];
#pragma unroll
        for (int n = 0; n < kBc / 8; ++n) sc[n][0] = sc[n][1] = sc[n][2] = sc[n][3] = 0.f;
        {
          const int kr = (lane & 7) + (lane >> 4) * 8, kc = ((lane >> 3) & 1) * 8;
#pragma unroll
          for (int kk = 0; kk < HD / 16; ++kk)
#pragma unroll
            for (int n2 = 0; n2 < kBc / 16; ++n2) {
              uint32_t b[4];
              ldmatrix_x4(b, smem_u32(ks + (n2 * 16 + kr) * kLd + kk * 16 + kc));
              mma_f16_f32(sc[2 * n2], qf[kk], b[0], b[1]);
              mma_f16_f32(sc[2 * n2 + 1], qf[kk], b[2], b[3]);
            }
        }
        // Mask, then the online softmax in base 2. A row that has seen no
        // visible key keeps m = -inf; m_use = 0 then makes every exp2 give 0.
        float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int n = 0; n < kBc / 8; ++n)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int32_t j = j0 + n * 8 + c2 + e;
            sc[n][e] = (seq0 == s && j <= pos0) ? sc[n][e] * kLog2e : -INFINITY;
            sc[n][2 + e] = (seq1 == s && j <= pos1) ? sc[n][2 + e] * kLog2e : -INFINITY;
            mx0 = fmaxf(mx0, sc[n][e]);
            mx1 = fmaxf(mx1, sc[n][2 + e]);
          }
#pragma unroll
        for (int off = 1; off <= 2; off <<= 1) {  // the 4 lanes of a row
          mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, off));
          mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, off));
        }
        const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
        const float mu0 = mn0 == -INFINITY ? 0.f : mn0, mu1 = mn1 == -INFINITY ? 0.f : mn1;
        const float corr0 = exp2f(m0 - mu0), corr1 = exp2f(m1 - mu1);  // 0 while m = -inf
        m0 = mn0;
        m1 = mn1;
        float rs0 = 0.f, rs1 = 0.f;
#pragma unroll
        for (int n = 0; n < kBc / 8; ++n) {
          sc[n][0] = exp2f(sc[n][0] - mu0);
          sc[n][1] = exp2f(sc[n][1] - mu0);
          sc[n][2] = exp2f(sc[n][2] - mu1);
          sc[n][3] = exp2f(sc[n][3] - mu1);
          rs0 += sc[n][0] + sc[n][1];
          rs1 += sc[n][2] + sc[n][3];
        }
        l0 = l0 * corr0 + rs0;
        l1 = l1 * corr1 + rs1;
#pragma unroll
        for (int d = 0; d < HD / 8; ++d) {
          o[d][0] *= corr0;
          o[d][1] *= corr0;
          o[d][2] *= corr1;
          o[d][3] *= corr1;
        }
        // O += P·V. A = P from the S tiles 2kb, 2kb+1; B[k = key][n = dim] =
        // V[key][dim] row-major, so ldmatrix .trans gives the col-major
        // fragment: (keys 0-7, dims 0-7), (keys 8-15, dims 0-7), (keys 0-7,
        // dims 8-15), (keys 8-15, dims 8-15).
        const int vr = (lane & 7) + ((lane >> 3) & 1) * 8, vc = (lane >> 4) * 8;
#pragma unroll
        for (int kb = 0; kb < kBc / 16; ++kb) {
          const uint32_t a[4] = {pack_half2(sc[2 * kb][0], sc[2 * kb][1]),
                                 pack_half2(sc[2 * kb][2], sc[2 * kb][3]),
                                 pack_half2(sc[2 * kb + 1][0], sc[2 * kb + 1][1]),
                                 pack_half2(sc[2 * kb + 1][2], sc[2 * kb + 1][3])};
#pragma unroll
          for (int d2 = 0; d2 < HD / 16; ++d2) {
            uint32_t b[4];
            ldmatrix_x4_trans(b, smem_u32(vs + (kb * 16 + vr) * kLd + d2 * 16 + vc));
            mma_f16_f32(o[2 * d2], a, b[0], b[1]);
            mma_f16_f32(o[2 * d2 + 1], a, b[2], b[3]);
          }
        }
      }
      __syncthreads();  // the next iteration's load overwrites this buffer
    }
  }

#pragma unroll
  for (int off = 1; off <= 2; off <<= 1) {
    l0 += __shfl_xor_sync(0xffffffffu, l0, off);
    l1 += __shfl_xor_sync(0xffffffffu, l1, off);
  }
  const float inv0 = l0 > 0.f ? 1.f / l0 : 0.f, inv1 = l1 > 0.f ? 1.f / l1 : 0.f;
  const int64_t ta = t0 + r0, tb = t0 + r1;
  float* oa = p.out + ta * q_stride + static_cast<int64_t>(h) * HD + c2;
  float* ob = p.out + tb * q_stride + static_cast<int64_t>(h) * HD + c2;
#pragma unroll
  for (int d = 0; d < HD / 8; ++d) {
    if (ta < p.n_tok)
      *reinterpret_cast<float2*>(oa + d * 8) = make_float2(o[d][0] * inv0, o[d][1] * inv0);
    if (tb < p.n_tok)
      *reinterpret_cast<float2*>(ob + d * 8) = make_float2(o[d][2] * inv1, o[d][3] * inv1);
  }
}

template <int HD>
Status launch(const AttentionParams& p, cudaStream_t stream) {
  const size_t smem = PrefillSmem<HD>::kBytes;
  // Over the 48 KB default for head_dim 128; setting it every call is cheap.
  LS_CUDA_TRY(cudaFuncSetAttribute(attention_prefill_f16kv_kernel<HD>,
                                   cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(smem)));
  const dim3 grid(static_cast<unsigned>((p.n_tok + kBr - 1) / kBr),
                  static_cast<unsigned>(p.n_head));
  attention_prefill_f16kv_kernel<HD><<<grid, kThreads, smem, stream>>>(p);
  LS_CUDA_TRY(cudaGetLastError());
  return ok();
}

}  // namespace

bool attention_prefill_supported(const AttentionParams& p) {
  return !p.kv_f32 && (p.head_dim == 64 || p.head_dim == 128) && p.n_head_kv > 0 &&
         p.n_head % p.n_head_kv == 0 && p.n_head <= 65535 &&
         reinterpret_cast<uintptr_t>(p.q) % 16 == 0 && reinterpret_cast<uintptr_t>(p.out) % 8 == 0;
}

Status attention_prefill_f16kv_cuda(const AttentionParams& p, cudaStream_t stream) {
  if (p.n_tok == 0) return ok();
  if (!attention_prefill_supported(p))
    return make_error(
        "attention prefill: %s cache (f16 only), head_dim %d (64 or 128), %d heads over %d KV "
        "heads, q %s",
        p.kv_f32 ? "f32" : "f16", p.head_dim, p.n_head, p.n_head_kv,
        reinterpret_cast<uintptr_t>(p.q) % 16 ? "not 16-byte aligned" : "aligned");
  if (p.head_dim == 64) return launch<64>(p, stream);
  return launch<128>(p, stream);
}

}  // namespace ls
