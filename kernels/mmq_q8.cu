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
// default, so each x load feeds two products) × all the tokens (n-tiles of 8) over
// a range of the blocks of K: lane (g, c) = (lane / 4, lane % 4) holds, of
// rows g and g + 8, values 8c .. 8c + 7 of each x-block of 32 (Q6_K: 4c ..
// 4c + 3 of each half of 16). The mma's k index runs over the block in
// another order than the values' (k 4c .. 4c + 3 take values 8c .. 8c + 3,
// k 16 + 4c .. take 8c + 4 .. 8c + 7), the same for A (weights) and B (x), so
// the dot product is the same; and a lane's eight values are one 8-byte load
// of each operand. Per x-block and n-tile: one m16n8k32 (Q6_K: an m16n8k16 per
// half, its two signed scales applied in int32), then per lane four f32
// steps y += a · (d · C) + b · (d · Σq) (w = a · q + b per x-block: Q4_K and
// Q5_K a = d · sc, b = −dmin · m; Q8_0 a = d; Q6_K a = d, its −32 taken in
// the quant bytes).
//
// A block is 4 warps: k_split of them split the K range of one tile (their
// sums meet in shared memory, added in warp order: the result does not
// depend on timing), the others take further tiles. k_split is the smallest
// that gives every SM a block (mmq_k_split), so small n_out (k, v) still
// spreads. Each warp loads the next block of K for its rows while it
// computes the current one.
// defines: mmq_supports, mmq_launch
#include "kernels/mmq_q8.cuh"

#include <cuda_fp16.h>

#include <cstdlib>

#include "kernels/act_q8.h"
#include "kernels/quant_blocks.h"
#include "kernels/quant_decode.cuh"
#include "runtime/cuda_util.cuh"

namespace ls {
namespace {

constexpr int kWarps = 4, kThreads = 32 * kWarps;
constexpr int kMaxTiles = kMmqMaxTok / 8;  // n-tiles of 8 tokens

// c = a · b (s8 × s8 → s32), a 16 × 32 (row), b 32 × 8 (col).
__device__ __forceinline__ void mma_k32(int (&c)[4], const int (&a)[4], int b0, int b1) {
  c[0] = c[1] = c[2] = c[3] = 0;
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// c = a · b, a 16 × 16, b 16 × 8.
__device__ __forceinline__ void mma_k16(int (&c)[4], int a0, int a1, int b0) {
  c[0] = c[1] = c[2] = c[3] = 0;
  asm("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
      "{%0,%1,%2,%3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a0), "r"(a1), "r"(b0));
}

// A little-endian word at a 2-byte aligned address: one load where it is
// 4-byte aligned (Q6_K and Q8_0 blocks sit at 2-byte offsets).
__device__ __forceinline__ uint32_t ld_u32_a2(const uint8_t* p) {
  const uint16_t* q = reinterpret_cast<const uint16_t*>(p);
  if ((reinterpret_cast<uintptr_t>(p) & 3) == 0) return *reinterpret_cast<const uint32_t*>(p);
  return q[0] | (uint32_t(q[1]) << 16);
}

// Per type: the bytes of one block that lane c needs from one row (load),
// and from them, x-block s's two words of quants (values 8c .. 8c + 3 and
// 8c + 4 .. 8c + 7, signed bytes) and w = a · q + b (sub).
template <GgmlType T>
struct Mmq;

// Q4_K (144 bytes): the header, and of each pair j of sub-blocks (2j: low
// nibbles, 2j + 1: high nibbles of qs[32 j ..]) bytes 8c .. 8c + 7.
template <>
struct Mmq<GgmlType::Q4_K> {
  static constexpr int kValues = 256, kBytes = 144, kSubs = 8;
  static constexpr bool kHasB = true;
  struct Blk {
    uint4 hd;
    uint2 q[4];
  };
  static __device__ __forceinline__ void load(const uint8_t* blk, int c, Blk& r) {
    r.hd = *reinterpret_cast<const uint4*>(blk);
#pragma unroll
    for (int j = 0; j < 4; ++j) r.q[j] = *reinterpret_cast<const uint2*>(blk + 16 + 32 * j + 8 * c);
  }
  static __device__ __forceinline__ void sub(const Blk& r, int s, int (&q)[2], float& a, float& b) {
    const int sh = 4 * (s & 1);
    q[0] = static_cast<int>((r.q[s >> 1].x >> sh) & 0x0F0F0F0Fu);
    q[1] = static_cast<int>((r.q[s >> 1].y >> sh) & 0x0F0F0F0Fu);
    k_scale_min(r.hd, s, a, b);
  }
};

// Q5_K (176 bytes): Q4_K with qh[32] at 16 (bit s of qh[i]: the 5th bit of
// value 32 s + i) and qs at 48.
template <>
struct Mmq<GgmlType::Q5_K> {
  static constexpr int kValues = 256, kBytes = 176, kSubs = 8;
  static constexpr bool kHasB = true;
  struct Blk {
    uint4 hd;
    uint2 h;
    uint2 q[4];
  };
  static __device__ __forceinline__ void load(const uint8_t* blk, int c, Blk& r) {
    r.hd = *reinterpret_cast<const uint4*>(blk);
    r.h = *reinterpret_cast<const uint2*>(blk + 16 + 8 * c);
#pragma unroll
    for (int j = 0; j < 4; ++j) r.q[j] = *reinterpret_cast<const uint2*>(blk + 48 + 32 * j + 8 * c);
  }
  static __device__ __forceinline__ void sub(const Blk& r, int s, int (&q)[2], float& a, float& b) {
    const int sh = 4 * (s & 1);
    q[0] = static_cast<int>(((r.q[s >> 1].x >> sh) & 0x0F0F0F0Fu) |
                            (((r.h.x >> s) & 0x01010101u) << 4));
    q[1] = static_cast<int>(((r.q[s >> 1].y >> sh) & 0x0F0F0F0Fu) |
                            (((r.h.y >> s) & 0x01010101u) << 4));
    k_scale_min(r.hd, s, a, b);
  }
};

// Q8_0 (34 bytes at 2-byte offsets): d, then 32 signed quants.
template <>
struct Mmq<GgmlType::Q8_0> {
  static constexpr int kValues = 32, kBytes = 34, kSubs = 1;
  static constexpr bool kHasB = false;
  struct Blk {
    float d;
    uint32_t q[2];
  };
  static __device__ __forceinline__ void load(const uint8_t* blk, int c, Blk& r) {
    r.d = ld_f16(blk);
    ld8<2>(blk + 2 + 8 * c, r.q[0], r.q[1]);
  }
  static __device__ __forceinline__ void sub(const Blk& r, int, int (&q)[2], float& a, float& b) {
    q[0] = static_cast<int>(r.q[0]);
    q[1] = static_cast<int>(r.q[1]);
    a = r.d;
    b = 0.0f;
  }
};

// Q6_K (210 bytes at 2-byte offsets), lane c's values 4c .. 4c + 3 of each
// half-sub-block of 16 (its own signed scale): value 32 s + 16 u + 4c + i
// (s = 4 h + j) has its low nibble in ql[64 h + 32 (j & 1) + 16 u + 4c + i]
// at shift 4 (j >> 1) and its top 2 bits in qh[32 h + 16 u + 4c + i] at
// shift 2 j. Words: ql[4 h + 2 (j & 1) + u], qh[2 h + u]; the 16 scales.
template <>
struct Mmq<GgmlType::Q6_K> {
  static constexpr int kValues = 256, kBytes = 210, kSubs = 8;
  struct Blk {
    uint32_t ql[8], qh[4], sc[4];
    float d;
  };
  static __device__ __forceinline__ void load(const uint8_t* blk, int c, Blk& r) {
#pragma unroll
    for (int i = 0; i < 8; ++i) r.ql[i] = ld_u32_a2(blk + 16 * i + 4 * c);
#pragma unroll
    for (int i = 0; i < 4; ++i) r.qh[i] = ld_u32_a2(blk + 128 + 16 * i + 4 * c);
#pragma unroll
    for (int i = 0; i < 4; ++i) r.sc[i] = ld_u32_a2(blk + 192 + 4 * i);
    r.d = ld_f16(blk + 208);
  }
  // Half u of sub-block s: the word of quants minus 32 (signed bytes), and its scale.
  static __device__ __forceinline__ int half(const Blk& r, int s, int u, int& scale) {
    const int h = s >> 2, j = s & 3;
    const uint32_t lo = (r.ql[4 * h + 2 * (j & 1) + u] >> (4 * (j >> 1))) & 0x0F0F0F0Fu;
    const uint32_t hi = ((r.qh[2 * h + u] >> (2 * j)) << 4) & 0x30303030u;
    const int k = 2 * s + u;
    scale = static_cast<int8_t>((r.sc[k >> 2] >> (8 * (k & 3))) & 0xFFu);
    return static_cast<int>(__vsub4(lo | hi, 0x20202020u));
  }
};

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
      if constexpr (T == GgmlType::Q6_K) {
        int qv[MT][2][2], sc[MT][2][2];  // m-tile, row half, value half
#pragma unroll
        for (int m = 0; m < MT; ++m)
#pragma unroll
          for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int u = 0; u < 2; ++u) qv[m][h][u] = M::half(cur[m][h], s, u, sc[m][h][u]);
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          const int8_t* x = xq + 8 * kActQ8Block * nt + 4 * c;
          const int x0 = *reinterpret_cast<const int*>(x),
                    x1 = *reinterpret_cast<const int*>(x + 16);
          const float4 dd = xd[4 * nt];  // tokens 8 nt + 2c, + 1: {d, Σq} each
#pragma unroll
          for (int m = 0; m < MT; ++m) {
            int c0[4], c1[4];
            mma_k16(c0, qv[m][0][0], qv[m][1][0], x0);
            mma_k16(c1, qv[m][0][1], qv[m][1][1], x1);
            const float da = cur[m][0].d, db = cur[m][1].d;
            acc[m][nt][0] +=
                da * (dd.x * static_cast<float>(sc[m][0][0] * c0[0] + sc[m][0][1] * c1[0]));
            acc[m][nt][1] +=
                da * (dd.z * static_cast<float>(sc[m][0][0] * c0[1] + sc[m][0][1] * c1[1]));
            acc[m][nt][2] +=
                db * (dd.x * static_cast<float>(sc[m][1][0] * c0[2] + sc[m][1][1] * c1[2]));
            acc[m][nt][3] +=
                db * (dd.z * static_cast<float>(sc[m][1][0] * c0[3] + sc[m][1][1] * c1[3]));
          }
        }
      } else {
        int af[MT][4];
        float sa[MT][2], sb[MT][2];  // a and b of rows g and g + 8
#pragma unroll
        for (int m = 0; m < MT; ++m) {
          int qa[2], qb[2];
          M::sub(cur[m][0], s, qa, sa[m][0], sb[m][0]);
          M::sub(cur[m][1], s, qb, sa[m][1], sb[m][1]);
          af[m][0] = qa[0];
          af[m][1] = qb[0];
          af[m][2] = qa[1];
          af[m][3] = qb[1];
        }
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          const int2 xv = *reinterpret_cast<const int2*>(xq + 8 * kActQ8Block * nt + 8 * c);
          const float4 dd = xd[4 * nt];
          const float e0 = dd.x, e1 = dd.z, f0 = dd.x * dd.y, f1 = dd.z * dd.w;
#pragma unroll
          for (int m = 0; m < MT; ++m) {
            int cc[4];
            mma_k32(cc, af[m], xv.x, xv.y);
            acc[m][nt][0] += sa[m][0] * (e0 * static_cast<float>(cc[0]));
            acc[m][nt][1] += sa[m][0] * (e1 * static_cast<float>(cc[1]));
            acc[m][nt][2] += sa[m][1] * (e0 * static_cast<float>(cc[2]));
            acc[m][nt][3] += sa[m][1] * (e1 * static_cast<float>(cc[3]));
            if constexpr (M::kHasB) {
              acc[m][nt][0] += sb[m][0] * f0;
              acc[m][nt][1] += sb[m][0] * f1;
              acc[m][nt][2] += sb[m][1] * f0;
              acc[m][nt][3] += sb[m][1] * f1;
            }
          }
        }
      }
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

// m-tiles a warp: MmqParams::m_tiles, else LS_MMQ_MT (1 or 2, A/B), else 2.
int mmq_m_tiles(const MmqParams& p) {
  static const int env = [] {
    const char* e = std::getenv("LS_MMQ_MT");
    const int v = e ? std::atoi(e) : 0;
    return v == 1 || v == 2 ? v : 0;
  }();
  if (p.m_tiles) return p.m_tiles;
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

template <GgmlType T, int MT>
Status launch_mt(const MmqParams& p, cudaStream_t stream) {
  switch ((p.n_tok + 7) / 8) {
    case 1:
      return launch_nt<T, MT, 1>(p, stream);
    case 2:
      return launch_nt<T, MT, 2>(p, stream);
    case 3:
      return launch_nt<T, MT, 3>(p, stream);
    case 4:
      return launch_nt<T, MT, 4>(p, stream);
    case 5:
      return launch_nt<T, MT, 5>(p, stream);
    case 6:
      return launch_nt<T, MT, 6>(p, stream);
    case 7:
      return launch_nt<T, MT, 7>(p, stream);
    default:
      return launch_nt<T, MT, kMaxTiles>(p, stream);
  }
}

template <GgmlType T>
Status launch_type(const MmqParams& p, cudaStream_t stream) {
  return p.m_tiles == 1 ? launch_mt<T, 1>(p, stream) : launch_mt<T, 2>(p, stream);
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
  MmqParams p = p_in;
  p.m_tiles = mmq_m_tiles(p_in);
  if (p.k_split == 0) p.k_split = mmq_k_split(p.n_out, p.m_tiles);
  switch (type) {
    case GgmlType::Q4_K:
      return launch_type<GgmlType::Q4_K>(p, stream);
    case GgmlType::Q5_K:
      return launch_type<GgmlType::Q5_K>(p, stream);
    case GgmlType::Q6_K:
      return launch_type<GgmlType::Q6_K>(p, stream);
    default:
      return launch_type<GgmlType::Q8_0>(p, stream);
  }
}

}  // namespace ls
