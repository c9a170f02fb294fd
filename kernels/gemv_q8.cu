// gemv_q8 (GEMV v5): y (n_tok, n_out) = x (n_tok, n_in) · Wᵀ for decode
// batches (n_tok <= 8) with x in the 8-bit format of kernels/act_q8.h
// (quantized once per input by kernels/quantize_act.cu) and W in Q4_K, Q5_K,
// Q6_K, Q8_0 or Q4_0, read once for all n_tok tokens. The CPU reference is
// matmul_act_q8_ref (kernels/ref/act_q8.h); the other types keep the f32
// GEMV (kernels/gemv_q.cu, v2).
//
// Why (bench/results/2026-11-30-h200-gemv.md): with f32 x, v2-v4 reached
// 0.18-0.38 of the copy bandwidth on Q4_K / Q6_K. Two limits: x read through
// L1 with 16-byte loads spread over 16-32 lines, and one convert + FMA per
// weight. With int8 x a lane's 32 activations are two 16-byte loads of
// consecutive bytes (4x less x traffic than f32) and four weight-activation
// products are one __dp4a on the integer quants; the scales are applied once
// per block of 32.
//
// Layout and mapping. A row is cut into tiles of 1024 values = 32 activation
// blocks of 32, one per lane: lane l of a tile takes x-block l (K-quants:
// sub-block l & 7 of super-block l >> 3; 32-value formats: block l), so its
// 32 weights belong to one scale (Q6_K: two, 16 values each) and its x loads
// are 32 consecutive bytes. A CUDA block of 4 warps owns KR = 4 consecutive
// rows (2 and 8 as bench variants at n_tok 1); warp w takes the tiles w, w + 4, ...
// of all KR rows, and the 4 warps' partial sums meet in shared memory at the
// end (n_in 4096: one tile per warp; 14336: 3-4). Two x-blocks per lane: see below.
//
// Weight loads. The 34-, 18- and 210-byte blocks of Q8_0, Q4_0 and Q6_K sit
// at 2-byte offsets, so a lane cannot load its own block with 16-byte
// loads. Instead each warp copies the byte range of its tile in each of the
// KR rows into its own shared-memory stage with cp.async, 16 aligned bytes
// per lane and instruction (fully coalesced, in flight without registers),
// the range widened to 16-byte boundaries (the decoders start at the
// range's offset within its first 16 bytes; the bytes outside are never
// used, and an aligned 16-byte read never leaves the allocation's granule).
// Lanes then read their blocks from shared memory: 4-byte words realigned
// with a funnel shift (Q8_0, Q4_0, Q6_K), or 16-byte words for Q4_K and Q5_K
// (rows of 144- / 176-byte blocks from a 16-byte aligned base stay aligned).
// When a warp has more than one tile, two stages double-buffer: the next
// tile's copy is issued before the current one is computed (one stage where
// that fits the launch's waves better: the copy after the compute).
// Weights are read once a step, x and the activations again and again, so
// the weights pass the caches: the direct form (below) loads them with the
// streaming hint (ldw: ld.global.cs), the stage copies them under an L2
// evict-first policy, and the CUDA backend sets the L2's fetch to 128 bytes
// (session 54, an H100: the 8b Q4_K_M decode +3.2-3.7 %, Q8_0 +1.9-2.1 %).
//
// Per lane, row and token: idot = dot of the 32 integer quants with the 32
// int8 x (8 dp4a; Q6_K: two chains of 4 for its two 16-value scales, combined
// in integers), then acc += d_x · (a · idot + b · sum_q_x) in f32, where
// w = a·q + (b per value): Q4_K / Q5_K a = d·sc, b = −dmin·m; Q4_0 a = d,
// b = −8d (its quants are stored +8); Q8_0 and Q6_K (quants realigned to
// −32..31 in the bytes) b = 0. So the result differs from the reference only
// by f32 rounding and summation order (the reference sums in double).
// No integer division in the loop; n_in need not be a multiple of 1024 (the
// last tile's lanes past the row end do nothing).
//
// Two x-blocks per lane ("v6" in the measurements; GemvQ8Params::lane_blocks,
// the default for Q4_K, Q5_K, Q6_K at n_tok <= 2): tiles of 2048 values, a
// lane on the two sub-blocks of one super-block that share their quant bytes
// (V5Pair), so each byte is read from shared memory and each header decoded
// once per 64 values, and a block has only as many warps as the row has
// tiles (n_in 4096: 2). Why: with one x-block per lane the K-quants were
// issue-bound where Q8_0 was not (4096 x 128256, graph-timed: Q8_0 0.96 of
// the copy bandwidth, Q4_K 0.64, Q6_K 0.62; counted from the code, Q4_K
// issues ~3x Q8_0's instructions per weight byte); two per lane gave 0.88
// and 0.76. Larger n_tok keep one
// per lane (the x of two blocks per token would not fit the registers).
//
// Measured (H200, bench/results/2026-11-30-h200-gemv-v5.md): per call in a
// CUDA graph, n_tok 1, vs v2: Q4_K 4096 x 14336 0.50 vs 0.33, Q6_K 14336 x
// 4096 0.47 vs 0.22, Q8_0 4096 x 128256 0.96 vs 0.65 of the copy bandwidth;
// whole 8b decode Q4_K_M 213.7 tok/s (v2 156.9), Q8_0 187.5 (v2 162.6).
// The small shapes (4096 x 4096: 0.31-0.48) carry a fixed cost of about 3 us
// per call (Q4_K: 6.7 us for 9.4 MB, 16.0 us for 33 MB): one wave of blocks,
// the first loads' latency and the reduction, not the loop.
//
// Several matrices a launch (GemvQ8Params::more; the q, k, v of a layer, its
// gate and up): the grid covers their row groups in turn, so one launch's
// ramp and tail serve them all. Programmatic dependent launch
// (kernels/pdl.cuh): a block issues its first tile's copies before it waits
// for the kernel that writes x. A persistent form (blocks looping over row
// groups, the next group's copy in flight during the current one's
// arithmetic) was measured slower on the 8b's shapes (gate|up 38.6 vs ~31
// us, 2026-12-02 call 2) and dropped.
//
// Session 12 (bench/results/2026-12-02-h200-s12.md): every kernel here
// copied its parameters to local memory (a 128-byte stack frame: the loop
// choosing the launch's matrix indexed p.more at run time); unrolling that
// loop took the 8b Q4_K_M decode from 290 to 360 tok/s. And the direct form
// (kDirect, "v7", below) is the default for the K-quants at n_tok <= 2:
// +6 % on the 8b decode (383 tok/s), graph-timed Q4_K gate/up 15.3 -> 12.5
// us, Q6_K down 24.1 -> 19.4 us.
// defines: gemv_q8_supports, gemv_q8_launch
#include "kernels/gemv_q8.cuh"

#include <cuda_fp16.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "kernels/act_q8.h"
#include "kernels/cp_async.cuh"
#include "kernels/gemv_q.cuh"
#include "kernels/pdl.cuh"
#include "kernels/quant_blocks.h"
#include "kernels/quant_decode.cuh"
#include "runtime/cuda_util.cuh"

namespace ls {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kTileValues = 32 * kActQ8Block;  // one x-block per lane

__device__ __forceinline__ float lds_f16(const uint8_t* p) {
  return __half2float(__ushort_as_half(*reinterpret_cast<const uint16_t*>(p)));
}
// N little-endian words from a 2-byte aligned shared-memory address: N + 1
// aligned words and a funnel shift (shift 0 when p is 4-byte aligned). The
// word past the end lies in the stage's padding.
template <int N>
__device__ __forceinline__ void lds_words(const uint8_t* p, uint32_t (&w)[N]) {
  const uint32_t* a =
      reinterpret_cast<const uint32_t*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t(3));
  const uint32_t sh = (static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p)) & 3u) * 8u;
  uint32_t r[N + 1];
#pragma unroll
  for (int i = 0; i <= N; ++i) r[i] = a[i];
#pragma unroll
  for (int i = 0; i < N; ++i) w[i] = __funnelshift_r(r[i], r[i + 1], sh);
}
template <int N>
__device__ __forceinline__ void lds_words16(const uint8_t* p, uint32_t (&w)[N]) {
  static_assert(N % 4 == 0, "whole uint4s");
#pragma unroll
  for (int i = 0; i < N / 4; ++i) {
    const uint4 u = reinterpret_cast<const uint4*>(p)[i];
    w[4 * i] = u.x, w[4 * i + 1] = u.y, w[4 * i + 2] = u.z, w[4 * i + 3] = u.w;
  }
}

// One lane's x-block of one row, decoded: 8 words of 4 signed-byte quants
// (values 4k .. 4k + 3 of the block in word k), w_i = a·q_i + b.
struct Dec {
  int q[8];
  float a, b;
  int s0, s1;  // Q6_K: the integer scales of values 0-15 and 16-31
};

__device__ __forceinline__ int dot8(const int (&q)[8], const int (&x)[8]) {
  int s = 0;
#pragma unroll
  for (int k = 0; k < 8; ++k) s = __dp4a(q[k], x[k], s);
  return s;
}

template <GgmlType T>
struct V5;

// The formats whose quants are the values' own (no offset taken from the
// dot): a lane's idot is one dp4a chain, and x needs no offset sums.
struct V5Plain {
  static __device__ __forceinline__ int dot(const Dec& d, const int (&x)[8], int2) {
    return dot8(d.q, x);
  }
  static __device__ __forceinline__ int2 xoff(const int (&)[8]) {
    return make_int2(0, 0);
  }
};

// Q8_0: block l at 34 l: d, then 32 signed quants.
template <>
struct V5<GgmlType::Q8_0> : V5Plain {
  static constexpr int kBlockValues = 32, kBlockBytes = 34;
  static constexpr bool kHasB = false;
  static __device__ __forceinline__ void decode(const uint8_t* t, int lane, Dec& d) {
    const uint8_t* blk = t + kBlockBytes * lane;
    d.a = lds_f16(blk);
    uint32_t w[8];
    lds_words<8>(blk + 2, w);
#pragma unroll
    for (int k = 0; k < 8; ++k) d.q[k] = static_cast<int>(w[k]);
  }
};

// Q4_0: block l at 18 l: d, then qs[16]; value j < 16 is the low nibble of
// qs[j], value j + 16 the high one; w = d (q - 8), applied as b = -8 d.
template <>
struct V5<GgmlType::Q4_0> : V5Plain {
  static constexpr int kBlockValues = 32, kBlockBytes = 18;
  static constexpr bool kHasB = true;
  static __device__ __forceinline__ void decode(const uint8_t* t, int lane, Dec& d) {
    const uint8_t* blk = t + kBlockBytes * lane;
    d.a = lds_f16(blk);
    d.b = -8.f * d.a;
    uint32_t w[4];
    lds_words<4>(blk + 2, w);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      d.q[k] = static_cast<int>(w[k] & 0x0F0F0F0Fu);
      d.q[4 + k] = static_cast<int>((w[k] >> 4) & 0x0F0F0F0Fu);
    }
  }
};

// Q4_K: lane l: super-block l >> 3 (144 bytes, 16-byte aligned), sub-block
// s = l & 7 = values 32 s .. 32 s + 31, whose quants are nibble s & 1 of
// qs[32 (s >> 1) .. + 31].
template <>
struct V5<GgmlType::Q4_K> : V5Plain {
  static constexpr int kBlockValues = 256, kBlockBytes = 144;
  static constexpr bool kHasB = true;
  static __device__ __forceinline__ void decode(const uint8_t* t, int lane, Dec& d) {
    const uint8_t* blk = t + kBlockBytes * (lane >> 3);
    const int s = lane & 7;
    k_scale_min(*reinterpret_cast<const uint4*>(blk), s, d.a, d.b);
    uint32_t w[8];
    lds_words16<8>(blk + 16 + 32 * (s >> 1), w);
    const int sh = 4 * (s & 1);
#pragma unroll
    for (int k = 0; k < 8; ++k) d.q[k] = static_cast<int>((w[k] >> sh) & 0x0F0F0F0Fu);
  }
};

// Q5_K: Q4_K plus qh[32] at byte 16: bit s of qh[i] is the 5th bit of value
// 32 s + i. qs at byte 48.
template <>
struct V5<GgmlType::Q5_K> : V5Plain {
  static constexpr int kBlockValues = 256, kBlockBytes = 176;
  static constexpr bool kHasB = true;
  static __device__ __forceinline__ void decode(const uint8_t* t, int lane, Dec& d) {
    const uint8_t* blk = t + kBlockBytes * (lane >> 3);
    const int s = lane & 7;
    k_scale_min(*reinterpret_cast<const uint4*>(blk), s, d.a, d.b);
    uint32_t h[8], w[8];
    lds_words16<8>(blk + 16, h);
    lds_words16<8>(blk + 48 + 32 * (s >> 1), w);
    const int sh = 4 * (s & 1);
#pragma unroll
    for (int k = 0; k < 8; ++k)
      d.q[k] = static_cast<int>(((w[k] >> sh) & 0x0F0F0F0Fu) | (((h[k] >> s) & 0x01010101u) << 4));
  }
};

// Q6_K: lane l: super-block l >> 3 (210 bytes), values 32 s + i (s = l & 7,
// h = s >> 2, j = s & 3): low nibble in ql[64 h + 32 (j & 1) + i] at shift
// 4 (j >> 1), top 2 bits in qh[32 h + i] at shift 2 j; signed 8-bit scales
// scales[2 s] (i < 16) and scales[2 s + 1]; w = d · sc · (q − 32). The quants
// stay unsigned (0..63, positive as signed bytes too) and the − 32 is taken
// from the dot: Σ (q − 32) x = Σ q x − 32 Σ x, where 32 Σ x is one dp4a per
// word against 0x20202020 on x alone, computed once per x-block for
// all KR rows of a lane (xoff). Until session 16 the − 32 was done in each word's
// bytes (three more operations a word, per row): the Q6_K GEMV ran at
// 0.65 of the bandwidth on the 8b's ffn shapes where Q4_K ran at 0.74.
template <>
struct V5<GgmlType::Q6_K> {
  static constexpr int kBlockValues = 256, kBlockBytes = 210;
  static constexpr bool kHasB = false;
  static __device__ __forceinline__ void decode(const uint8_t* t, int lane, Dec& d) {
    const uint8_t* blk = t + kBlockBytes * (lane >> 3);
    const int s = lane & 7, h = s >> 2, j = s & 3;
    uint32_t ql[8], qh[8];
    lds_words<8>(blk + 64 * h + 32 * (j & 1), ql);
    lds_words<8>(blk + 128 + 32 * h, qh);
    const int shl = 4 * (j >> 1), shh = 2 * j;
#pragma unroll
    for (int k = 0; k < 8; ++k)
      d.q[k] =
          static_cast<int>(((ql[k] >> shl) & 0x0F0F0F0Fu) | (((qh[k] >> shh) << 4) & 0x30303030u));
    const uint32_t sc = *reinterpret_cast<const uint16_t*>(blk + 192 + 2 * s);
    d.s0 = static_cast<int8_t>(sc & 0xFFu);
    d.s1 = static_cast<int8_t>(sc >> 8);
    d.a = lds_f16(blk + 208);
  }
  // 32 Σ x over values 0-15 and 16-31: once per x-block, for every row.
  static __device__ __forceinline__ int2 xoff(const int (&x)[8]) {
    int lo = 0, hi = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      lo = __dp4a(0x20202020, x[k], lo);
      hi = __dp4a(0x20202020, x[4 + k], hi);
    }
    return make_int2(lo, hi);
  }
  static __device__ __forceinline__ int dot(const Dec& d, const int (&x)[8], int2 xo) {
    int lo = 0, hi = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      lo = __dp4a(d.q[k], x[k], lo);
      hi = __dp4a(d.q[4 + k], x[4 + k], hi);
    }
    return d.s0 * (lo - xo.x) + d.s1 * (hi - xo.y);
  }
};

// Two x-blocks per lane (XB = 2, the K-quants): lane l of a tile takes the
// pair of sub-blocks of super-block l >> 2 that share their quant bytes, so
// the bytes are read and the header decoded once for 64 values.
//   Q4_K, Q5_K: sub-blocks 2j, 2j + 1 (j = l & 3): low and high nibbles of
//     qs[32 j .. + 31] (Q5_K: 5th bits 2j and 2j + 1 of qh).
//   Q6_K: sub-blocks s and s + 2 with s = 4 (j >> 1) + (j & 1): low and high
//     nibbles of ql[64 (j >> 1) + 32 (j & 1) ..], bit pairs of the same qh.
// Each in two steps: load (the lane's raw bytes of one row into registers)
// and decode (from those registers), so the direct form can issue a tile's
// loads before the PDL wait (GemvQ8Params::early); decode2 is the two.
// A weight word: from global memory (kGlobal: the direct form) with the
// streaming hint (ld.global.cs: evict first in L1 and L2), as the weights
// are read once a step and x and the activations again and again; from a
// shared-memory stage (the staged form) a plain load. Session 54 (H100,
// 8b Q4_K_M decode, the same registers as before): 450.9-452.1 tok/s
// against 438.8-440.8 with plain loads, 69.1-69.4 % of the bound against
// 67.4-67.7 %.
template <bool kGlobal, class W>
__device__ __forceinline__ W ldw(const W* p) {
  if constexpr (kGlobal) return __ldcs(p);
  return *p;
}

template <GgmlType T>
struct V5Pair;
template <>
struct V5Pair<GgmlType::Q4_K> {
  struct Raw {
    uint4 hd, q0, q1;
  };
  static __device__ __forceinline__ void subs(int j, int& s0, int& s1) {
    s0 = 2 * j, s1 = 2 * j + 1;
  }
  template <bool kGlobal>
  static __device__ __forceinline__ void load(const uint8_t* t, int lane, Raw& r) {
    const uint8_t* blk = t + V5<GgmlType::Q4_K>::kBlockBytes * (lane >> 2);
    const uint4* qs = reinterpret_cast<const uint4*>(blk + 16 + 32 * (lane & 3));
    r.hd = ldw<kGlobal>(reinterpret_cast<const uint4*>(blk));
    r.q0 = ldw<kGlobal>(qs);
    r.q1 = ldw<kGlobal>(qs + 1);
  }
  static __device__ __forceinline__ void decode(const Raw& r, int lane, Dec& d0, Dec& d1) {
    const int j = lane & 3;
    k_scale_min(r.hd, 2 * j, d0.a, d0.b);
    k_scale_min(r.hd, 2 * j + 1, d1.a, d1.b);
    const uint32_t w[8] = {r.q0.x, r.q0.y, r.q0.z, r.q0.w, r.q1.x, r.q1.y, r.q1.z, r.q1.w};
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      d0.q[k] = static_cast<int>(w[k] & 0x0F0F0F0Fu);
      d1.q[k] = static_cast<int>((w[k] >> 4) & 0x0F0F0F0Fu);
    }
  }
};
template <>
struct V5Pair<GgmlType::Q5_K> {
  struct Raw {
    uint4 hd, h0, h1, q0, q1;
  };
  static __device__ __forceinline__ void subs(int j, int& s0, int& s1) {
    s0 = 2 * j, s1 = 2 * j + 1;
  }
  template <bool kGlobal>
  static __device__ __forceinline__ void load(const uint8_t* t, int lane, Raw& r) {
    const uint8_t* blk = t + V5<GgmlType::Q5_K>::kBlockBytes * (lane >> 2);
    const uint4* qh = reinterpret_cast<const uint4*>(blk + 16);
    const uint4* qs = reinterpret_cast<const uint4*>(blk + 48 + 32 * (lane & 3));
    r.hd = ldw<kGlobal>(reinterpret_cast<const uint4*>(blk));
    r.h0 = ldw<kGlobal>(qh);
    r.h1 = ldw<kGlobal>(qh + 1);
    r.q0 = ldw<kGlobal>(qs);
    r.q1 = ldw<kGlobal>(qs + 1);
  }
  static __device__ __forceinline__ void decode(const Raw& r, int lane, Dec& d0, Dec& d1) {
    const int j = lane & 3;
    k_scale_min(r.hd, 2 * j, d0.a, d0.b);
    k_scale_min(r.hd, 2 * j + 1, d1.a, d1.b);
    const uint32_t h[8] = {r.h0.x, r.h0.y, r.h0.z, r.h0.w, r.h1.x, r.h1.y, r.h1.z, r.h1.w};
    const uint32_t w[8] = {r.q0.x, r.q0.y, r.q0.z, r.q0.w, r.q1.x, r.q1.y, r.q1.z, r.q1.w};
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const uint32_t hb = h[k] >> (2 * j);
      d0.q[k] = static_cast<int>((w[k] & 0x0F0F0F0Fu) | ((hb & 0x01010101u) << 4));
      d1.q[k] = static_cast<int>(((w[k] >> 4) & 0x0F0F0F0Fu) | (((hb >> 1) & 0x01010101u) << 4));
    }
  }
};
template <>
struct V5Pair<GgmlType::Q6_K> {
  // The 2-byte aligned ql and qh runs as the 9 aligned words that hold them
  // (lds_words' form; the shift, the same for both, from the block's address).
  struct Raw {
    uint32_t ql[9], qh[9];
    uint32_t sc0, sc1, d, sh;
  };
  static __device__ __forceinline__ void subs(int j, int& s0, int& s1) {
    s0 = 4 * (j >> 1) + (j & 1), s1 = s0 + 2;
  }
  template <bool kGlobal>
  static __device__ __forceinline__ void load(const uint8_t* t, int lane, Raw& r) {
    const uint8_t* blk = t + V5<GgmlType::Q6_K>::kBlockBytes * (lane >> 2);
    const int j = lane & 3, h = j >> 1, jj = j & 1, s0 = 4 * h + jj;
    const uintptr_t a = reinterpret_cast<uintptr_t>(blk);
    r.sh = (static_cast<uint32_t>(a) & 3u) * 8u;
    const uint32_t* ql = reinterpret_cast<const uint32_t*>((a + 64 * h + 32 * jj) & ~uintptr_t(3));
    const uint32_t* qh = reinterpret_cast<const uint32_t*>((a + 128 + 32 * h) & ~uintptr_t(3));
#pragma unroll
    for (int i = 0; i < 9; ++i) r.ql[i] = ldw<kGlobal>(ql + i), r.qh[i] = ldw<kGlobal>(qh + i);
    r.sc0 = ldw<kGlobal>(reinterpret_cast<const unsigned short*>(blk + 192 + 2 * s0));
    r.sc1 = ldw<kGlobal>(reinterpret_cast<const unsigned short*>(blk + 192 + 2 * (s0 + 2)));
    r.d = ldw<kGlobal>(reinterpret_cast<const unsigned short*>(blk + 208));
  }
  static __device__ __forceinline__ void decode(const Raw& r, int lane, Dec& d0, Dec& d1) {
    const int jj = lane & 1;
#pragma unroll
    for (int k = 0; k < 8; ++k) {  // unsigned quants: V5<Q6_K>::dot takes the − 32
      const uint32_t ql = __funnelshift_r(r.ql[k], r.ql[k + 1], r.sh);
      const uint32_t hb = __funnelshift_r(r.qh[k], r.qh[k + 1], r.sh) >> (2 * jj);
      d0.q[k] = static_cast<int>((ql & 0x0F0F0F0Fu) | ((hb << 4) & 0x30303030u));
      d1.q[k] = static_cast<int>(((ql >> 4) & 0x0F0F0F0Fu) | (hb & 0x30303030u));
    }
    d0.s0 = static_cast<int8_t>(r.sc0 & 0xFFu), d0.s1 = static_cast<int8_t>(r.sc0 >> 8);
    d1.s0 = static_cast<int8_t>(r.sc1 & 0xFFu), d1.s1 = static_cast<int8_t>(r.sc1 >> 8);
    d0.a = d1.a = __half2float(__ushort_as_half(static_cast<unsigned short>(r.d)));
  }
};
// kGlobal: t is in global memory (the direct form), else a shared stage.
template <GgmlType T, bool kGlobal>
__device__ __forceinline__ void decode2(const uint8_t* t, int lane, Dec& d0, Dec& d1) {
  typename V5Pair<T>::Raw r;
  V5Pair<T>::template load<kGlobal>(t, lane, r);
  V5Pair<T>::decode(r, lane, d0, d1);
}

// The raw registers of one row a lane where a tile's loads are split from
// its decode (two x-blocks a lane); nothing otherwise.
template <GgmlType T, int XB>
struct RawOf {
  struct type {};
};
template <GgmlType T>
struct RawOf<T, 2> {
  using type = typename V5Pair<T>::Raw;
};

// The rows of a tile the early form (kEarly) preloads: all KR where their
// raw bytes take at most kEarlyWords registers a lane, else half, a
// quarter... down to none; half that budget at n_tok 2 beside the second
// token's x (but for Q4_K alone). Past these the kernels spilled (ptxas:
// 40-236 bytes of stack for Q5_K, Q6_K and the q|k|v launch over Q4_K and
// Q6_K with every row preloaded); within them none does.
constexpr int kEarlyWords = 48;
// A launch over two formats (kMixed: q, k in Q4_K, v in Q6_K or Q5_K) holds
// both paths' registers: 36 words (it spilled 8-52 bytes at 48).
constexpr int kEarlyWordsMixed = 36;
template <GgmlType T, int NT, int KR, bool kEarly, bool kMixed>
__host__ __device__ constexpr int early_rows() {
  if constexpr (!kEarly) {
    return 0;
  } else {
    constexpr int words = static_cast<int>(sizeof(typename V5Pair<T>::Raw) / 4);
    const int budget =
        (kMixed ? kEarlyWordsMixed : kEarlyWords) / (NT > 1 && (words > 12 || kMixed) ? 2 : 1);
    int rows = KR;
    while (rows > 0 && rows * words > budget) rows /= 2;
    return rows;
  }
}

// The preloads ptxas measured spill-free (session 50): a change to a Raw or
// to the budgets must be checked again (scripts/kernel_regs.py).
static_assert(early_rows<GgmlType::Q4_K, 1, 4, true, false>() == 4 &&
              early_rows<GgmlType::Q4_K, 2, 4, true, false>() == 4 &&
              early_rows<GgmlType::Q5_K, 1, 4, true, false>() == 2 &&
              early_rows<GgmlType::Q6_K, 1, 4, true, false>() == 2 &&
              early_rows<GgmlType::Q6_K, 2, 4, true, false>() == 1 &&
              early_rows<GgmlType::Q4_K, 1, 4, true, true>() == 2 &&
              early_rows<GgmlType::Q6_K, 1, 4, true, true>() == 1 &&
              early_rows<GgmlType::Q6_K, 2, 4, true, true>() == 0);

template <GgmlType T>
constexpr bool has_pair() {
  return T == GgmlType::Q4_K || T == GgmlType::Q5_K || T == GgmlType::Q6_K;
}

template <GgmlType T, int XB>
struct V5Tile {
  static constexpr int kBytes = XB * kTileValues / V5<T>::kBlockValues * V5<T>::kBlockBytes;
  // A row's stage: the tile widened to 16-byte boundaries (<= kBytes + 30
  // bytes) plus the word lds_words may read past the end.
  static constexpr int kStageRow = (kBytes + 15) / 16 * 16 + 32;
};

// Blocks per SM the registers must allow: 8 at n_tok 1 (64 registers), fewer
// where the accumulators of more tokens need them (64 at n_tok 2 spilled).
constexpr int min_blocks(int nt) {
  return nt == 1 ? 8 : (nt == 2 ? 6 : 4);
}

// kDirect ("v7", GemvQ8Params::version 7; the K-quants): no shared-memory
// stage; the lanes decode straight from global memory, the KR rows' loads
// issued before their arithmetic, so the bytes in flight are registers
// (hence 4 blocks an SM, not 8). Every read stays inside its super-block:
// Q4_K / Q5_K rows are 16-byte aligned; Q6_K's funnel-shifted words
// (lds_words) end at most 4 bytes past a range that ends 14 or more bytes
// before the block's end. (Q8_0 and Q4_0 would read past their block: they
// keep the stage.)
// The rows of one matrix of the launch (W, Y, n_out, row_bytes), row group
// g, in format T: the kernel's body, a function so that a launch can cover
// matrices of two formats (gemv_q8_v5's T2).
template <GgmlType T, int NT, int KR, int XB, bool kDirect, bool kEarly, bool kMixed = false,
          bool kStream = true>
__device__ __forceinline__ void gemv_q8_rows(const GemvQ8Params& p, const uint8_t* W, float* Y,
                                             int64_t n_out, int64_t g, int64_t row_bytes,
                                             int stages, uint8_t* smem) {
  using U = V5<T>;
  constexpr int kTB = V5Tile<T, XB>::kBytes, kSR = V5Tile<T, XB>::kStageRow;
  constexpr int kTileXB = 32 * XB;  // x-blocks per tile
  __shared__ float part[kWarps][KR * NT];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int n_warps = blockDim.x >> 5;  // 1 .. kWarps
  uint8_t* const wsm = smem + warp * stages * KR * kSR;
  const int64_t row0 = g * KR;
  const uint8_t* rowp[KR];
#pragma unroll
  for (int r = 0; r < KR; ++r) {
    // A row past n_out re-reads the last row (its sum is never stored).
    const int64_t row = row0 + r < n_out ? row0 + r : n_out - 1;
    rowp[r] = W + row * row_bytes;
  }
  const int64_t n_xb = p.n_in / kActQ8Block;
  const int n_tiles = static_cast<int>((n_xb + kTileXB - 1) / kTileXB);
  const int my_tiles = warp < n_tiles ? (n_tiles - warp + n_warps - 1) / n_warps : 0;

  // Copy tile `tile` of the KR rows into stage st; one commit group per tile.
  // The weights under the L2's evict-first policy, as the direct form's
  // streaming loads (ldw). Session 54 (H100, 8b Q8_0 decode): 313.5-314.1
  // tok/s against 307.7-308.0 without it, 83.3-83.9 % of the bound against
  // 82.1-82.4 %.
  const uint64_t policy = kDirect ? 0 : l2_evict_first_policy();
  auto issue = [&](int tile, uint8_t* st) {
    const int64_t off = static_cast<int64_t>(tile) * kTB;
    const int64_t len = row_bytes - off < kTB ? row_bytes - off : kTB;
#pragma unroll
    for (int r = 0; r < KR; ++r) {
      const uintptr_t g0 = reinterpret_cast<uintptr_t>(rowp[r] + off);
      const uintptr_t a0 = g0 & ~uintptr_t(15);
      const int n16 = static_cast<int>((g0 + len - a0 + 15) >> 4);
      for (int c = lane; c < n16; c += 32)
        cp_async16_evict_first(st + r * kSR + 16 * c,
                               reinterpret_cast<const void*>(a0 + 16 * uintptr_t(c)), policy);
    }
    cp_async_commit();
  };

  float acc[KR][NT];
#pragma unroll
  for (int r = 0; r < KR; ++r)
#pragma unroll
    for (int t = 0; t < NT; ++t) acc[r][t] = 0.f;

  // The first weights are on their way before the wait for x (the kernels
  // before this one write x; nothing in a step writes weights). The direct
  // form without kEarly issues nothing here: an L2 prefetch of each warp's
  // first tile before the wait made the 8b Q4_K_M decode 4 % slower
  // (session 13, call 2). kEarly (GemvQ8Params::early) loads its first
  // tile's rows into the registers they are decoded from (raw), so their
  // latency passes while the kernel before ends. A kernel of its own, so
  // that the plain direct form keeps its registers and its code. Only the
  // first kPre rows (early_rows) where all KR would not fit the registers.
  static_assert(!kEarly || (kDirect && XB == 2),
                "early loads: the direct form, two x-blocks a lane");
  if (!kDirect && my_tiles > 0) issue(warp, wsm);
  constexpr int kPre = early_rows<T, NT, KR, kEarly, kMixed>();
  [[maybe_unused]] typename RawOf<T, XB>::type raw[kPre > 0 ? kPre : 1];
  [[maybe_unused]] bool preloaded = false;
  if constexpr (kPre > 0) {
    if (my_tiles > 0 && int64_t{warp} * kTileXB + 8 * (lane >> 2) < n_xb) {
#pragma unroll
      for (int r = 0; r < kPre; ++r)
        V5Pair<T>::template load<kStream>(rowp[r] + static_cast<int64_t>(warp) * kTB, lane, raw[r]);
      preloaded = true;
    }
  }
  pdl_wait();
  for (int i = 0; i < my_tiles; ++i) {
    const int tile = warp + i * n_warps;
    uint8_t* const st = wsm + (stages == 2 ? (i & 1) : 0) * KR * kSR;
    if constexpr (!kDirect) {
      if (stages == 2 && i + 1 < my_tiles) {
        issue(tile + n_warps, wsm + ((i + 1) & 1) * KR * kSR);
        cp_async_wait<1>();
      } else {
        cp_async_wait<0>();
      }
      __syncwarp();  // every lane's copies are visible to the warp
    }
    // Row r's bytes of this tile: the stage, or (kDirect) the row itself.
    auto tile_src = [&](int r) -> const uint8_t* {
      if constexpr (kDirect) return rowp[r] + static_cast<int64_t>(tile) * kTB;
      const int mis = static_cast<int>(
          reinterpret_cast<uintptr_t>(rowp[r] + static_cast<int64_t>(tile) * kTB) & 15);
      return st + r * kSR + mis;
    };
    if constexpr (XB == 2) {
      // Super-block (lane >> 2) of the tile; x-blocks 8 (lane >> 2) + s0, + s1.
      const int64_t xb8 = static_cast<int64_t>(tile) * kTileXB + 8 * (lane >> 2);
      if (xb8 < n_xb) {
        int s0, s1;
        V5Pair<T>::subs(lane & 3, s0, s1);
        int xv[NT][2][8];
        int2 xo[NT][2];
        float2 ds[NT][2];
#pragma unroll
        for (int t = 0; t < NT; ++t)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int64_t xb = xb8 + (h ? s1 : s0);
            const int4* xq = reinterpret_cast<const int4*>(p.x.q + t * p.n_in) + 2 * xb;
            const int4 xa = __ldg(xq), xc = __ldg(xq + 1);
            ds[t][h] = __ldg(p.x.ds + t * n_xb + xb);
            xv[t][h][0] = xa.x, xv[t][h][1] = xa.y, xv[t][h][2] = xa.z, xv[t][h][3] = xa.w;
            xv[t][h][4] = xc.x, xv[t][h][5] = xc.y, xv[t][h][6] = xc.z, xv[t][h][7] = xc.w;
            xo[t][h] = U::xoff(xv[t][h]);
          }
#pragma unroll
        for (int r = 0; r < KR; ++r) {
          Dec d[2];
          if constexpr (kPre > 0) {
            if (r < kPre && preloaded && i == 0)
              V5Pair<T>::decode(raw[r < kPre ? r : 0], lane, d[0], d[1]);
            else
              decode2<T, kDirect && kStream>(tile_src(r), lane, d[0], d[1]);
          } else {
            decode2<T, kDirect && kStream>(tile_src(r), lane, d[0], d[1]);
          }
#pragma unroll
          for (int t = 0; t < NT; ++t)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              float v = d[h].a * static_cast<float>(U::dot(d[h], xv[t][h], xo[t][h]));
              if constexpr (U::kHasB) v = fmaf(d[h].b, ds[t][h].y, v);
              acc[r][t] = fmaf(ds[t][h].x, v, acc[r][t]);
            }
        }
      }
    }
    const int64_t xb = static_cast<int64_t>(tile) * 32 + lane;
    if (XB == 1 && xb < n_xb) {
      auto decode_row = [&](int r, Dec& d) { U::decode(tile_src(r), lane, d); };
      auto load_x = [&](int t, int(&xv)[8], int2& xo, float2& ds) {
        const int4* xq = reinterpret_cast<const int4*>(p.x.q + t * p.n_in) + 2 * xb;
        const int4 xa = __ldg(xq), xc = __ldg(xq + 1);
        ds = __ldg(p.x.ds + t * n_xb + xb);
        xv[0] = xa.x, xv[1] = xa.y, xv[2] = xa.z, xv[3] = xa.w;
        xv[4] = xc.x, xv[5] = xc.y, xv[6] = xc.z, xv[7] = xc.w;
        xo = U::xoff(xv);
      };
      auto fma_row = [&](const Dec& d, const int(&xv)[8], int2 xo, float2 ds, float& a) {
        float v = d.a * static_cast<float>(U::dot(d, xv, xo));
        if constexpr (U::kHasB) v = fmaf(d.b, ds.y, v);
        a = fmaf(ds.x, v, a);
      };
      // Keep the smaller of the two sets live: the NT tokens' x (10
      // registers each) with one decoded row at a time, or the KR decoded
      // rows (about 10 each) with one token's x at a time.
      if constexpr (NT < KR) {
        int xv[NT][8];
        int2 xo[NT];
        float2 ds[NT];
#pragma unroll
        for (int t = 0; t < NT; ++t) load_x(t, xv[t], xo[t], ds[t]);
#pragma unroll
        for (int r = 0; r < KR; ++r) {
          Dec d;
          decode_row(r, d);
#pragma unroll
          for (int t = 0; t < NT; ++t) fma_row(d, xv[t], xo[t], ds[t], acc[r][t]);
        }
      } else {
        Dec dec[KR];
#pragma unroll
        for (int r = 0; r < KR; ++r) decode_row(r, dec[r]);
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          int xv[8];
          int2 xo;
          float2 ds;
          load_x(t, xv, xo, ds);
#pragma unroll
          for (int r = 0; r < KR; ++r) fma_row(dec[r], xv, xo, ds, acc[r][t]);
        }
      }
    }
    if constexpr (!kDirect) {
      __syncwarp();  // the stage is read before it is copied over again
      if (stages == 1 && i + 1 < my_tiles) issue(tile + n_warps, wsm);
    }
  }

#pragma unroll
  for (int r = 0; r < KR; ++r)
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      float s = acc[r][t];
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
      if (lane == 0) part[warp][r * NT + t] = s;
    }
  __syncthreads();
  if (threadIdx.x < KR * NT) {
    const int r = threadIdx.x / NT, t = threadIdx.x % NT;
    const int64_t row = row0 + r;
    if (row < n_out) {
      float s = part[0][threadIdx.x];
#pragma unroll
      for (int w = 1; w < n_warps; ++w) s += part[w][threadIdx.x];
      Y[t * n_out + row] = s;
    }
  }
}

// Row group g of a launch: the matrix it falls in (the first, or one of
// p.more) and its index there. Unrolled, so p.more[i] is read from the
// parameter space: a loop with a run-time index made every thread copy p to
// local memory (128 bytes).
struct LaunchSeg {
  const uint8_t* W;
  float* Y;
  int64_t n_out, g, row_bytes;
  bool alt;
};
template <int KR>
__device__ __forceinline__ LaunchSeg launch_seg(const GemvQ8Params& p, int64_t g) {
  LaunchSeg s{p.w, p.y, p.n_out, g, p.row_bytes, false};
  bool found = false;
#pragma unroll
  for (int i = 0; i < GemvQ8Params::kMaxMore; ++i) {
    if (!found && i < p.n_more && s.g >= (s.n_out + KR - 1) / KR) {
      s.g -= (s.n_out + KR - 1) / KR;
      s.W = p.more[i].w, s.Y = p.more[i].y, s.n_out = p.more[i].n_out;
      s.alt = p.more[i].alt;
      if (s.alt) s.row_bytes = p.more[i].row_bytes;
    } else {
      found = true;
    }
  }
  return s;
}

// GemvQ8Params::ahead: the rows of row group blockIdx + ahead / (KR *
// row_bytes) of the launch (in whichever of its matrices that falls), asked
// of the L2, trimmed to 16-byte bounds inside them (the instruction's rule).
template <int KR>
__device__ __forceinline__ void prefetch_ahead(const GemvQ8Params& p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const LaunchSeg s = launch_seg<KR>(p, blockIdx.x + p.ahead / (KR * p.row_bytes));
  const uint8_t* W = s.W;
  const int64_t t = s.g, n_out = s.n_out, row_bytes = s.row_bytes;
  if (t * KR >= n_out) return;  // past the launch's last row
  const int64_t r1 = t * KR + KR < n_out ? t * KR + KR : n_out;
  const uintptr_t a = (reinterpret_cast<uintptr_t>(W + t * KR * row_bytes) + 15) & ~uintptr_t(15);
  const uintptr_t e = reinterpret_cast<uintptr_t>(W + r1 * row_bytes) & ~uintptr_t(15);
  if (e > a) l2_prefetch_bytes(reinterpret_cast<const void*>(a), static_cast<uint32_t>(e - a));
#else
  (void)p;
#endif
}

// T2 (a launch over matrices of two formats, the q, k of a Q4_K_M layer in
// Q4_K and its v in Q6_K or Q5_K): the segments with GemvQ8Params::Seg::alt set are
// in T2. One launch instead of two: the second's ramp, tail and wait go.
template <GgmlType T, int NT, int KR, int XB, bool kDirect = false, GgmlType T2 = T,
          bool kEarly = false, bool kStream = true>
__global__ void __launch_bounds__(kThreads, kDirect ? 4 : min_blocks(NT))
    gemv_q8_v5(GemvQ8Params p, int stages) {
  extern __shared__ __align__(16) uint8_t smem[];  // (n_warps, stages, KR, kSR)
  pdl_trigger();
  l2_prefetch_issue(p.pf);  // the next GEMV's first weights (kernels/l2_prefetch.cuh)
  if (p.ahead > 0 && threadIdx.x == 0) prefetch_ahead<KR>(p);
  // The matrix of this block's rows: the first, or one of p.more.
  const LaunchSeg s = launch_seg<KR>(p, blockIdx.x);
  const uint8_t* W = s.W;
  float* Y = s.Y;
  const int64_t n_out = s.n_out, g = s.g, row_bytes = s.row_bytes;
  [[maybe_unused]] const bool alt = s.alt;
  if constexpr (T2 != T) {
    if (alt) {
      gemv_q8_rows<T2, NT, KR, XB, kDirect, kEarly, true, kStream>(p, W, Y, n_out, g, row_bytes,
                                                                   stages, smem);
      return;
    }
  }
  gemv_q8_rows<T, NT, KR, XB, kDirect, kEarly, T2 != T, kStream>(p, W, Y, n_out, g, row_bytes,
                                                                 stages, smem);
}

// Wave fit (session 20). A launch of G blocks, B of which fit an SM, runs in
// ceil(G / (B * SMs)) waves, and the blocks of a last wave that is partly
// empty keep only part of the memory system busy while it runs: the 8b's
// Q8_0 down GEMV (1,024 blocks of 4 rows, 6 an SM with two 17.5 KiB stages a
// block: 1.29 waves) read at 0.70 of the copy bandwidth where its gate/up read
// at 0.88 (bench/results/2026-12-02-h200-s14.md). So where the default shape
// fits its waves badly, the launch takes one stage (8 blocks an SM) or 2 rows
// a block (twice the blocks) when that fits clearly better: the down GEMV
// then ran 17.4 against 21.0 us, the 8b Q8_0 decode ~1.5 % faster
// (bench/results/2026-12-03-h200-s20.md).
// LS_GEMV_WAVES=0 keeps the default shapes (A/B); GemvQ8Params::stages forces
// the stages (benches).
bool waves_auto() {
  static const bool on = [] {
    const char* e = std::getenv("LS_GEMV_WAVES");
    return !(e && std::strcmp(e, "0") == 0);
  }();
  return on;
}

// How full a launch's waves are: 1 when the last is full; 1 where unknown.
double wave_fit(int64_t groups, int per_sm) {
  const int sms = cuda_sm_count();
  if (per_sm <= 0 || sms <= 0 || groups <= 0) return 1.0;
  const double w = static_cast<double>(groups) / (static_cast<double>(per_sm) * sms);
  return w / std::ceil(w);
}

// One launch's shape: blocks, warps a block, stages, dynamic shared memory.
struct GemvShape {
  int64_t groups;
  int n_warps, stages;
  size_t smem;
};

// Blocks of this kernel an SM holds with n_warps (1-4) and `stages` (1-2)
// stages of shared memory: asked of the runtime once per shape, since
// launches outside a graph come here every time.
template <GgmlType T, int NT, int KR, int XB, bool kDirect, GgmlType T2>
int blocks_per_sm(int n_warps, int stages, size_t smem) {
  static std::atomic<int> cache[kWarps][2] = {};  // value + 1; 0: not asked yet
  std::atomic<int>& c = cache[n_warps - 1][stages - 1];
  if (const int v = c.load(std::memory_order_relaxed); v > 0) return v - 1;
  int n = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, gemv_q8_v5<T, NT, KR, XB, kDirect, T2>,
                                                    32 * n_warps, smem) != cudaSuccess) {
    cudaGetLastError();
    n = 0;
  }
  c.store(n + 1, std::memory_order_relaxed);
  return n;
}

template <GgmlType T, int NT, int KR, int XB, bool kDirect, GgmlType T2>
GemvShape gemv_shape(const GemvQ8Params& p) {
  constexpr int kSR = V5Tile<T, XB>::kStageRow;
  GemvShape sh;
  sh.groups = (p.n_out + KR - 1) / KR;
  for (int i = 0; i < p.n_more; ++i) sh.groups += (p.more[i].n_out + KR - 1) / KR;
  const int64_t n_tiles = (p.n_in / kActQ8Block + 32 * XB - 1) / (32 * XB);
  // XB 1: always 4 warps (as measured in run 1); XB 2: no more warps than
  // tiles (n_in 4096 has 2), so no warp sits idle.
  sh.n_warps = XB == 1 ? kWarps : static_cast<int>(n_tiles < kWarps ? n_tiles : kWarps);
  sh.stages = (n_tiles + sh.n_warps - 1) / sh.n_warps > 1 ? 2 : 1;
  auto smem = [&](int st) {
    return kDirect ? size_t{0} : static_cast<size_t>(sh.n_warps) * st * KR * kSR;
  };
  if (!kDirect && sh.stages == 2) {
    if (p.stages == 1 || p.stages == 2) {
      sh.stages = p.stages;
    } else if (waves_auto()) {
      const double two =
          wave_fit(sh.groups, blocks_per_sm<T, NT, KR, XB, kDirect, T2>(sh.n_warps, 2, smem(2)));
      const double one =
          wave_fit(sh.groups, blocks_per_sm<T, NT, KR, XB, kDirect, T2>(sh.n_warps, 1, smem(1)));
      if (one > two + 0.1) sh.stages = 1;
    }
  }
  sh.smem = smem(sh.stages);  // Q8_0: 35 KiB at KR 4, two stages
  return sh;
}

// How well a staged launch's waves fit (two_rows_fit_better).
template <GgmlType T, int KR>
double staged_fit(const GemvQ8Params& p) {
  const GemvShape sh = gemv_shape<T, 1, KR, 1, false, T>(p);
  return wave_fit(sh.groups, blocks_per_sm<T, 1, KR, 1, false, T>(sh.n_warps, sh.stages, sh.smem));
}

template <GgmlType T, int NT, int KR, int XB = 1, bool kDirect = false, GgmlType T2 = T,
          bool kEarly = false, bool kStream = true>
Status launch(const GemvQ8Params& p, cudaStream_t stream) {
  constexpr int kSR = V5Tile<T, XB>::kStageRow;
  const GemvShape sh = gemv_shape<T, NT, KR, XB, kDirect, T2>(p);
  if (sh.groups > 0x7fffffff)
    return make_error("gemv_q8: n_out %lld too large", (long long)p.n_out);
  // The most any launch of this kernel asks for (4 warps, 2 stages).
  constexpr size_t kMaxSmem = static_cast<size_t>(kWarps) * 2 * KR * kSR;
  if (sh.smem > 48 * 1024) {  // above the default limit (KR 8): allowed once per kernel
    static const cudaError_t e = cudaFuncSetAttribute(gemv_q8_v5<T, NT, KR, XB, kDirect>,
                                                      cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                      static_cast<int>(kMaxSmem));
    LS_CUDA_TRY(e);
  }
  LS_CUDA_TRY(launch_pdl(gemv_q8_v5<T, NT, KR, XB, kDirect, T2, kEarly, kStream>,
                         dim3(static_cast<unsigned>(sh.groups)), dim3(32 * sh.n_warps), sh.smem,
                         stream, p, sh.stages));
  return ok();
}

// The staged kernel at n_tok 1 (Q8_0, Q4_0) with 2 rows a block where the
// default 4 fit their waves badly (the 8b's Q8_0 q|k|v: 1,536 blocks, 1.45
// waves; with 2 rows 2.9). 2 rows cost ~15 % more time a byte (the 8b's
// Q8_0 q/o, one wave: 6.7 against 5.8 us; session 20 call 2), so only below
// 0.75: a gate/up alone at 3.4 waves (fit 0.85) lost with 2 rows (18.1
// against 16.8 us).
template <GgmlType T>
bool two_rows_fit_better(const GemvQ8Params& p) {
  if (!waves_auto() || p.n_tok != 1 || p.rows != 0 || p.stages != 0) return false;
  const double four = staged_fit<T, 4>(p);
  return four < 0.75 && staged_fit<T, 2>(p) > four + 0.15;
}

template <GgmlType T>
Status launch_type(const GemvQ8Params& p, cudaStream_t stream) {
  if (p.n_in % V5<T>::kBlockValues != 0)
    return make_error("gemv_q8: %s n_in %lld not a multiple of %d", ggml_type_name(T),
                      (long long)p.n_in, V5<T>::kBlockValues);
  if (p.lane_blocks != 0 && p.lane_blocks != 1 && p.lane_blocks != 2)
    return make_error("gemv_q8: lane_blocks %d (0, 1 or 2)", p.lane_blocks);
  if (p.version != 0 && p.version != 7)
    return make_error("gemv_q8: version %d (0 or 7)", p.version);
  bool two_formats = false;
  for (int i = 0; i < p.n_more; ++i) two_formats = two_formats || p.more[i].alt;
  // Early loads (GemvQ8Params::early): the direct form's default shape only.
  if (p.early && (p.version != 7 || p.rows != 0 || p.lane_blocks == 1))
    return make_error(
        "gemv_q8: early loads only in version 7's default shape (4 rows, two x-blocks a lane)");
  // The direct form's default shape (4 rows, two x-blocks a lane) at n_tok 1-2,
  // of one format or two, with early loads or not.
  // Its weight loads with the streaming hint (the default) or plain
  // (GemvQ8Params::plain_loads): kernels of their own, so each keeps the
  // registers ptxas gives it alone.
  auto direct4 = [&]<GgmlType T2>() -> Status {
    auto go = [&]<bool kStream>() -> Status {
      if (p.n_tok == 1)
        return p.early ? launch<T, 1, 4, 2, true, T2, true, kStream>(p, stream)
                       : launch<T, 1, 4, 2, true, T2, false, kStream>(p, stream);
      return p.early ? launch<T, 2, 4, 2, true, T2, true, kStream>(p, stream)
                     : launch<T, 2, 4, 2, true, T2, false, kStream>(p, stream);
    };
    return p.plain_loads ? go.template operator()<false>() : go.template operator()<true>();
  };
  if (two_formats) {  // the q, k (Q4_K) and v (Q6_K or Q5_K) of a Q4_K_M layer: v7, default shape
    if constexpr (T == GgmlType::Q4_K) {
      if (p.version == 7 && p.n_tok <= 2 && p.rows == 0 && p.lane_blocks != 1) {
        if (p.alt_type == GgmlType::Q6_K) return direct4.template operator()<GgmlType::Q6_K>();
        if (p.alt_type == GgmlType::Q5_K) return direct4.template operator()<GgmlType::Q5_K>();
      }
    }
    return make_error(
        "gemv_q8: one launch over %s and %s rows (only Q4_K with Q6_K or Q5_K, v7, n_tok <= 2)",
        ggml_type_name(T), ggml_type_name(p.alt_type));
  }
  if constexpr (has_pair<T>()) {
    if (p.version == 7) {  // v7: the direct form, n_tok 1-2, 4 rows a block (2, 8 as variants)
      if (p.n_tok > 2) return make_error("gemv_q8: version 7 takes n_tok <= 2");
      if (p.rows != 0 && (p.n_tok != 1 || (p.rows != 2 && p.rows != 8 && p.rows != 4)))
        return make_error("gemv_q8: version 7 takes 2 or 8 rows a block only at n_tok 1");
      if (p.lane_blocks == 1)
        return p.n_tok == 1 ? launch<T, 1, 4, 1, true>(p, stream)
                            : launch<T, 2, 4, 1, true>(p, stream);
      if (p.rows == 2) return launch<T, 1, 2, 2, true>(p, stream);
      if (p.rows == 8) return launch<T, 1, 8, 2, true>(p, stream);
      return direct4.template operator()<T>();
    }
  } else {
    if (p.version == 7) return make_error("gemv_q8: version 7 is for Q4_K, Q5_K and Q6_K");
  }
  if constexpr (has_pair<T>()) {
    if (p.lane_blocks != 1 && p.rows == 0 && p.n_tok <= 2)
      return p.n_tok == 1 ? launch<T, 1, 4, 2>(p, stream) : launch<T, 2, 4, 2>(p, stream);
    if (p.lane_blocks == 2 && p.n_tok == 1 && (p.rows == 2 || p.rows == 8))  // bench variants
      return p.rows == 2 ? launch<T, 1, 2, 2>(p, stream) : launch<T, 1, 8, 2>(p, stream);
  }
  if (p.rows == 2 || p.rows == 8) {  // bench variants
    if (p.n_tok != 1) return make_error("gemv_q8: %d rows per block only for n_tok 1", p.rows);
    return p.rows == 2 ? launch<T, 1, 2>(p, stream) : launch<T, 1, 8>(p, stream);
  }
  if (p.rows != 0 && p.rows != 4) return make_error("gemv_q8: rows %d (0, 2, 4 or 8)", p.rows);
  switch (p.n_tok) {
    case 1:
      return two_rows_fit_better<T>(p) ? launch<T, 1, 2>(p, stream) : launch<T, 1, 4>(p, stream);
    case 2:
      return launch<T, 2, 4>(p, stream);
    case 3:
      return launch<T, 3, 4>(p, stream);
    case 4:
      return launch<T, 4, 4>(p, stream);
    case 5:
      return launch<T, 5, 4>(p, stream);
    case 6:
      return launch<T, 6, 4>(p, stream);
    case 7:
      return launch<T, 7, 4>(p, stream);
    case 8:
      return launch<T, 8, 4>(p, stream);
    default:
      return make_error("gemv_q8: n_tok %d outside 1..%d", p.n_tok, kGemvMaxTok);
  }
}

}  // namespace

// Q4_K_M files keep v in Q6_K in some layers and Q5_K in others (the 70b
// preset: 40 and 40); a separate v launch cost ~4 us a layer (session 16,
// bench/results/2026-12-03-h200-s16.md).
bool gemv_q8_mixes(GgmlType t, GgmlType alt) {
  return t == GgmlType::Q4_K && (alt == GgmlType::Q6_K || alt == GgmlType::Q5_K);
}

bool gemv_q8_supports(GgmlType t) {
  return t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q6_K || t == GgmlType::Q8_0 ||
         t == GgmlType::Q4_0;
}

Status gemv_q8_launch(GgmlType type, const GemvQ8Params& p, cudaStream_t stream) {
  if (p.n_in <= 0 || p.n_out <= 0) return make_error("gemv_q8: empty shape");
  if (p.n_more < 0 || p.n_more > GemvQ8Params::kMaxMore)
    return make_error("gemv_q8: %d more matrices (at most %d)", p.n_more, GemvQ8Params::kMaxMore);
  for (int i = 0; i < p.n_more; ++i) {
    if (!p.more[i].w || !p.more[i].y || p.more[i].n_out <= 0 ||
        reinterpret_cast<uintptr_t>(p.more[i].w) % 16)
      return make_error("gemv_q8: matrix %d of the launch is empty or not 16-byte aligned", i + 1);
    if (p.more[i].alt &&
        p.more[i].row_bytes != static_cast<int64_t>(ggml_row_bytes(p.alt_type, p.n_in)))
      return make_error("gemv_q8: matrix %d's rows are not %s rows of %lld values", i + 1,
                        ggml_type_name(p.alt_type), static_cast<long long>(p.n_in));
  }
  if (reinterpret_cast<uintptr_t>(p.w) % 16 || reinterpret_cast<uintptr_t>(p.x.q) % 16 ||
      reinterpret_cast<uintptr_t>(p.x.ds) % 8)
    return make_error("gemv_q8: W and x.q must be 16-byte aligned, x.ds 8-byte");
  switch (type) {
    case GgmlType::Q8_0:
      return launch_type<GgmlType::Q8_0>(p, stream);
    case GgmlType::Q4_0:
      return launch_type<GgmlType::Q4_0>(p, stream);
    case GgmlType::Q4_K:
      return launch_type<GgmlType::Q4_K>(p, stream);
    case GgmlType::Q5_K:
      return launch_type<GgmlType::Q5_K>(p, stream);
    case GgmlType::Q6_K:
      return launch_type<GgmlType::Q6_K>(p, stream);
    default:
      return make_error("gemv_q8: no kernel for type %s", ggml_type_name(type));
  }
}

}  // namespace ls
