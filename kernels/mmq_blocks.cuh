// The int8 GEMM's shared parts (kernels/mmq_q8.cu, kernels/mmq_stream.cu):
// the mma.sync forms, each weight type's block loader and decoder for the
// mma's lane layout, and the step of one x-block of 32 values (the products
// and the f32 scale step), so both kernels compute the same terms.
//
// Lane layout (mma m16n8k32): lane (g, c) = (lane / 4, lane % 4) holds, of
// rows g and g + 8 of an m-tile, values 8c .. 8c + 7 of each x-block of 32
// (Q6_K: 4c .. 4c + 3 of each half of 16). The mma's k index runs over the
// block in another order than the values' (k 4c .. 4c + 3 take values
// 8c .. 8c + 3, k 16 + 4c .. take 8c + 4 .. 8c + 7), the same for A
// (weights) and B (x), so the dot product is the same; and a lane's eight
// values are one 8-byte load of each operand. Per x-block and n-tile: one
// m16n8k32 (Q6_K: an m16n8k16 per half, its two signed scales applied in
// int32), then per lane four f32 steps y += a · (d · C) + b · (d · Σq)
// (w = a · q + b per x-block: Q4_K and Q5_K a = d · sc, b = −dmin · m; Q8_0
// a = d; Q6_K a = d, its −32 taken in the quant bytes).
// defines: mma_k32, mma_k16, ld_u32_a2, Mmq<T>, mmq_xblock, mmq_dispatch, mmq_dispatch_type
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include "io/ggml_type.h"
#include "kernels/act_q8.h"
#include "kernels/mmq_q8.cuh"
#include "kernels/quant_decode.cuh"
#include "runtime/status.h"

namespace ls {
namespace mmq {

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

// One x-block (32 values of K: sub-block s of the blocks cur holds, for
// rows g and g + 8 of each of MT m-tiles) against NT n-tiles of 8 tokens:
// acc[m][nt] += the products, scaled. xq: the x-block's int8 quants at token
// slot g (+ 256 nt: n-tile nt); xd: its {d, Σq} pairs at token slot 2c.
template <GgmlType T, int MT, int NT>
__device__ __forceinline__ void mmq_xblock(const typename Mmq<T>::Blk (&cur)[MT][2], int s,
                                           const int8_t* xq, const float4* xd, int c,
                                           float (&acc)[MT][NT][4]) {
  using M = Mmq<T>;
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
      const int x0 = *reinterpret_cast<const int*>(x), x1 = *reinterpret_cast<const int*>(x + 16);
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

// The launch of both kernels' instance for m_tiles (1 or 2) and n_tok's
// n-tiles of 8 (n_tok up to kMmqMaxTok): f.template operator()<MT, NT>().
template <int MT, class F>
Status mmq_dispatch_nt(int n_tok, F& f) {
  switch ((n_tok + 7) / 8) {
    case 1:
      return f.template operator()<MT, 1>();
    case 2:
      return f.template operator()<MT, 2>();
    case 3:
      return f.template operator()<MT, 3>();
    case 4:
      return f.template operator()<MT, 4>();
    case 5:
      return f.template operator()<MT, 5>();
    case 6:
      return f.template operator()<MT, 6>();
    case 7:
      return f.template operator()<MT, 7>();
    default:
      return f.template operator()<MT, kMmqMaxTok / 8>();
  }
}
template <class F>
Status mmq_dispatch(int m_tiles, int n_tok, F&& f) {
  return m_tiles == 1 ? mmq_dispatch_nt<1>(n_tok, f) : mmq_dispatch_nt<2>(n_tok, f);
}

// Both kernels' instance for a type they take (mmq_supports; anything else
// as Q8_0, which the callers have ruled out): f.template operator()<T>().
template <class F>
Status mmq_dispatch_type(GgmlType t, F&& f) {
  switch (t) {
    case GgmlType::Q4_K:
      return f.template operator()<GgmlType::Q4_K>();
    case GgmlType::Q5_K:
      return f.template operator()<GgmlType::Q5_K>();
    case GgmlType::Q6_K:
      return f.template operator()<GgmlType::Q6_K>();
    default:
      return f.template operator()<GgmlType::Q8_0>();
  }
}

}  // namespace mmq
}  // namespace ls
