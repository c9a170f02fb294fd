// gemv_q: y (n_tok, n_out) = x (n_tok, n_in) · Wᵀ for decode batches
// (n_tok <= 8), W in any GGUF type, dequantized on the fly and never written
// out. Decode is bound by reading W once, so the kernel reads each weight
// byte exactly once for all n_tok tokens and keeps everything else in
// registers and L1.
//
// v5 (int8 x, __dp4a) is in kernels/gemv_q8.cu: matmul_cuda runs it instead
// of this file's kernels for Q4_K, Q5_K, Q6_K, Q8_0 and Q4_0 unless
// LS_GEMV_VERSION=2. This file stays the path of the other types and the A/B
// baseline.
//
// Versions (GemvParams::version picks one; 0 = the default: v4 for Q8_0
// when x fits its shared memory, NT · n_in · 4 <= 100 KiB, else v2; the
// environment variable LS_GEMV_VERSION=2 makes v2 the default everywhere,
// for A/B timing). Measurements: bench/results/2026-11-30-h200-gemv.md.
//
// v4 (default for Q8_0): v2's row groups and units, with x staged once per block in
//   shared memory. Blocks are persistent (as many as fit on the device) and
//   hold two 128-thread teams that walk row groups 2·blockIdx + team,
//   + 2·gridDim, ...; a team meets at its own named barrier for the
//   reduction. Why: v2 read x through L1 with 16-byte loads whose 32 lanes
//   hit 16 (Q4_K: 8 lanes per super-block, each on 16-value runs 64 bytes
//   apart) or 32 (Q8_0: one 34-byte block per lane, x 128 bytes apart)
//   different 128-byte lines, 16-32 L1 wavefronts per load. On the H200 its
//   time grew about linearly with n_tok for Q4_K and Q8_0 while Q6_K (lanes
//   on consecutive 8-value chunks: coalesced x) barely moved. In v4 x comes
//   from L2 once per block, coalesced, and every later read is an LDS.128
//   that a bank swizzle (x_swizzle) keeps conflict-free.
//   Q4_K and Q8_0 also factor the scales out of the inner loop: per 16-value
//   half sub-block (Q4_K) or 32-value block (Q8_0) the thread forms
//   S = sum q·x with q the exact integer quant as an f32 (one PRMT + one
//   FADD), then adds dl·S − ml·X, where X = sum x over the same values is
//   computed once per token and shared by the kR rows: v2's dequantizing
//   FFMA per weight goes, and the sums are still exact products rounded in
//   f32, as the reference's.
//   Outcome (H200, one run): whole 8b decodes 157.9 tok/s Q8_0 (v2 150.5),
//   125.4 tok/s Q4_K_M (v2 145.6). Per-shape times were not measured (the
//   bench stopped at the first v4 shape whose x did not fit). Suspects for
//   Q4_K: 124 registers at n_tok = 1 (v2: 80), so 2 blocks of 8 warps per
//   SM; for Q6_K (generic units) the x staging buys nothing, its x was
//   already coalesced.
//
// v3 (tried 2026-11-30, removed): v2 with a persistent grid and the next
//   item's weights double-buffered in registers. Same speed or slower than
//   v2 on every shape (Q8_0 4096 x 128256: 0.46 vs 0.64 of the copy
//   bandwidth): the kernel was not waiting on DRAM latency, and the second
//   buffer cost registers (occupancy). See bench/results/2026-11-30-h200-gemv.md.
//
// Mapping (v2, and v4 within a row group): one 128-thread block per kR = 4 consecutive output rows.
// A row is cut into units (GemvUnit<T>::kValues consecutive values: 32 for Q4_K and Q8_0, 8 = one
// decode8 chunk for the other types); thread i takes units i, i + 128, ..., and for each unit first
// loads it from all kR rows (independent loads in flight), then walks its 8-value pieces: the 8
// activations of each token (two float4 __ldg, served by L1) are loaded
// once per piece and used for all kR rows, so x traffic per weight byte is
// a quarter of v1's. f32 accumulation per (row, token); a butterfly shuffle
// per warp, then the 4 warps' partial sums meet in shared memory.
//
// Units: Q4_K — 8 threads per 144-byte super-block; each reads the 16-byte
// header (d, dmin, 12 scale bytes; the 8 threads hit one sector) and one
// 16-byte slice qs[16j ..] with two 16-byte loads, decodes the two 6-bit
// scale/min pairs once, and yields 32 values (16 low nibbles, 16 high).
// Q8_0 — one 34-byte block per thread as nine aligned 4-byte words (the
// block starts 2 bytes off a word every other block; a funnel shift
// realigns the quants). The aligned word past an even block's end may read
// 2 bytes of the next block (or, for the buffer's last block, of the 4-byte
// granule that holds its end): they are never used.
//
// v1 (one warp per row, lanes on 8-value chunks, x read once per row) ran
// at 0.14-0.56 of the copy bandwidth on the H200: bench/results/
// 2026-11-29-h200-matmul.md. It does not quantize x to int8 for dp4a as
// MMVQ-style kernels do: with f32 activations the result matches the f32
// reference to rounding.
// defines: gemv_q_f32_launch
#include "kernels/gemv_q.cuh"

#include "kernels/quant_decode.cuh"
#include "runtime/cuda_util.cuh"

#include <cstdlib>
#include <type_traits>

namespace ls {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kR = 4;  // rows per block

// s + v . (a, b), one fmaf a term in order (the rounding every GEMV form
// here shares).
__device__ __forceinline__ float fma8(const float (&v)[8], float4 a, float4 b, float s) {
  s = fmaf(v[0], a.x, s);
  s = fmaf(v[1], a.y, s);
  s = fmaf(v[2], a.z, s);
  s = fmaf(v[3], a.w, s);
  s = fmaf(v[4], b.x, s);
  s = fmaf(v[5], b.y, s);
  s = fmaf(v[6], b.z, s);
  return fmaf(v[7], b.w, s);
}

__device__ __forceinline__ uint32_t byte_of(uint32_t w, int i) {
  return (w >> (8 * i)) & 0xFFu;
}
// Byte i of w as an exact f32: one PRMT builds the float 2^23 + byte, an FADD
// takes 2^23 off. The int-to-float converter runs at 1/8 of the FMA rate on
// sm_90 and was the v2 limit (one conversion per weight).
__device__ __forceinline__ float byte_to_float(uint32_t w, int i) {
  return __uint_as_float(__byte_perm(w, 0x4B00u, static_cast<uint32_t>(i) | 0x5440u)) - 8388608.f;
}

// A unit gives its values in 8-value pieces in one of two forms: piece()
// (v2, and v4 for the types other than Q4_K and Q8_0): the dequantized
// weights; quants() + scale() (kFactored, v4): the exact integer quants as f32, and per group of
// kPiecesPerScale pieces the f32 scale dl and min ml, weight = dl·q − ml.

// Generic unit for v2: one decode8 chunk (the loads happen in piece()).
template <GgmlType T>
struct GemvUnit {
  static constexpr int kValues = 8;
  static constexpr bool kFactored = false;
  struct Raw {
    const uint8_t* row;
    int64_t c;
  };
  static __device__ __forceinline__ void load(const uint8_t* __restrict__ row, int64_t u, Raw& r) {
    r.row = row;
    r.c = u;
  }
  // Piece k's first value, relative to the unit's first value (8u).
  static __device__ __forceinline__ int pos(int k) { return 8 * k; }
  static __device__ __forceinline__ void piece(const Raw& r, int, float v[8]) {
    decode8<T>(r.row, r.c, v);
  }
};

// Q4_K: unit u is slice j = u & 7 of super-block u >> 3: qs bytes 16j ..
// 16j + 15, in 64-value group g = j >> 1, half h = j & 1: low nibbles are
// values 64g + 16h + i (sub-block 2g), high nibbles 64g + 32 + 16h + i
// (sub-block 2g + 1), i = 0..15.
template <>
struct GemvUnit<GgmlType::Q4_K> {
  static constexpr int kValues = 32;
  static constexpr bool kFactored = true;
  static constexpr int kPiecesPerScale = 2;  // pieces 0, 1: sub-block 2g; 2, 3: 2g + 1
  static constexpr bool kHasMin = true;
  struct Raw {
    uint32_t q[4];
    float dl0, ml0, dl1, ml1;
  };
  static __device__ __forceinline__ void load(const uint8_t* __restrict__ row, int64_t u, Raw& r) {
    const uint8_t* blk = row + (u >> 3) * sizeof(BlockQ4_K);
    const int j = static_cast<int>(u & 7);
    const uint4 hd = __ldg(reinterpret_cast<const uint4*>(blk));
    const uint4 qs = __ldg(reinterpret_cast<const uint4*>(blk + 16 + 16 * j));
    r.q[0] = qs.x, r.q[1] = qs.y, r.q[2] = qs.z, r.q[3] = qs.w;
    const float d = __half2float(__ushort_as_half(static_cast<uint16_t>(hd.x & 0xFFFFu)));
    const float dmin = __half2float(__ushort_as_half(static_cast<uint16_t>(hd.x >> 16)));
    const int g = j >> 1;  // sub-blocks 2g (< 4 when g < 2) and 2g + 1
    uint32_t sc0, m0, sc1, m1;
    if (g < 2) {  // both sub-blocks < 4: plain 6-bit fields
      sc0 = byte_of(hd.y, 2 * g) & 63, m0 = byte_of(hd.z, 2 * g) & 63;
      sc1 = byte_of(hd.y, 2 * g + 1) & 63, m1 = byte_of(hd.z, 2 * g + 1) & 63;
    } else {  // sub-blocks 4..7: jj = j - 4
      const int a = 2 * g - 4, b = a + 1;
      sc0 = (byte_of(hd.w, a) & 0xF) | ((byte_of(hd.y, a) >> 6) << 4);
      m0 = (byte_of(hd.w, a) >> 4) | ((byte_of(hd.z, a) >> 6) << 4);
      sc1 = (byte_of(hd.w, b) & 0xF) | ((byte_of(hd.y, b) >> 6) << 4);
      m1 = (byte_of(hd.w, b) >> 4) | ((byte_of(hd.z, b) >> 6) << 4);
    }
    r.dl0 = d * static_cast<float>(sc0), r.ml0 = dmin * static_cast<float>(m0);
    r.dl1 = d * static_cast<float>(sc1), r.ml1 = dmin * static_cast<float>(m1);
  }
  // Unit u's values start at 256 (u >> 3) + 64 g + 16 h; pieces: k = 0, 1 low
  // nibbles of bytes 8k .., k = 2, 3 high nibbles of bytes 8 (k - 2) ...
  static __device__ __forceinline__ int pos(int k) { return (k & 1) * 8 + (k >> 1) * 32; }
  static __device__ __forceinline__ void piece(const Raw& r, int k, float v[8]) {
    const int sh = 4 * (k >> 1);
    const uint32_t lo = (r.q[2 * (k & 1)] >> sh) & 0x0F0F0F0Fu,
                   hi = (r.q[2 * (k & 1) + 1] >> sh) & 0x0F0F0F0Fu;
    const float dl = (k >> 1) ? r.dl1 : r.dl0, ml = (k >> 1) ? r.ml1 : r.ml0;
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = dl * byte_to_float(i < 4 ? lo : hi, i & 3) - ml;
  }
  static __device__ __forceinline__ void quants(const Raw& r, int k, float q[8]) {
    const int sh = 4 * (k >> 1);
    const uint32_t lo = (r.q[2 * (k & 1)] >> sh) & 0x0F0F0F0Fu,
                   hi = (r.q[2 * (k & 1) + 1] >> sh) & 0x0F0F0F0Fu;
#pragma unroll
    for (int i = 0; i < 8; ++i) q[i] = byte_to_float(i < 4 ? lo : hi, i & 3);
  }
  static __device__ __forceinline__ void scale(const Raw& r, int s, float& dl, float& ml) {
    dl = s ? r.dl1 : r.dl0;
    ml = s ? r.ml1 : r.ml0;
  }
};

// Q8_0: unit u is block u (32 values); pieces are qs[8k .. 8k + 7].
template <>
struct GemvUnit<GgmlType::Q8_0> {
  static constexpr int kValues = 32;
  static constexpr bool kFactored = true;
  static constexpr int kPiecesPerScale = 4;  // one scale per block
  static constexpr bool kHasMin = false;
  struct Raw {
    uint32_t q[8];
    float d;
  };
  static __device__ __forceinline__ void load(const uint8_t* __restrict__ row, int64_t u, Raw& r) {
    const uint8_t* blk = row + u * sizeof(BlockQ8_0);
    const bool odd = (reinterpret_cast<uintptr_t>(blk) & 2) != 0;
    const uint32_t* wp =
        reinterpret_cast<const uint32_t*>(reinterpret_cast<uintptr_t>(blk) & ~uintptr_t(3));
    uint32_t w[9];
#pragma unroll
    for (int i = 0; i < 9; ++i) w[i] = __ldg(wp + i);
      // Block at a word boundary: d = low half of w0, quants 2 bytes into w0.
      // Two bytes past one: d = high half of w0, quants are w1 .. w8.
#pragma unroll
    for (int i = 0; i < 8; ++i) r.q[i] = odd ? w[i + 1] : __funnelshift_r(w[i], w[i + 1], 16);
    r.d = __half2float(
        __ushort_as_half(static_cast<uint16_t>(odd ? (w[0] >> 16) : (w[0] & 0xFFFFu))));
  }
  static __device__ __forceinline__ int pos(int k) {
    return 8 * k;
  }
  static __device__ __forceinline__ void piece(const Raw& r, int k, float v[8]) {
    // int8 b as (b ^ 0x80) - 128, exact in f32.
    const uint32_t lo = r.q[2 * k] ^ 0x80808080u, hi = r.q[2 * k + 1] ^ 0x80808080u;
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = r.d * (byte_to_float(i < 4 ? lo : hi, i & 3) - 128.f);
  }
  // (b ^ 0x80) is q + 128; the float 2^23 + q + 128 minus (2^23 + 128), both
  // exact, is q: one PRMT and one FADD per value.
  static __device__ __forceinline__ void quants(const Raw& r, int k, float q[8]) {
    const uint32_t lo = r.q[2 * k] ^ 0x80808080u, hi = r.q[2 * k + 1] ^ 0x80808080u;
#pragma unroll
    for (int i = 0; i < 8; ++i)
      q[i] = __uint_as_float(
                 __byte_perm(i < 4 ? lo : hi, 0x4B00u, static_cast<uint32_t>(i & 3) | 0x5440u)) -
             8388736.f;
  }
  static __device__ __forceinline__ void scale(const Raw& r, int, float& dl, float& ml) {
    dl = r.d;
    ml = 0.f;
  }
};

// First value of unit u in the row.
template <GgmlType T>
__device__ __forceinline__ int64_t unit_base(int64_t u) {
  if constexpr (T == GgmlType::Q4_K) {
    const int j = static_cast<int>(u & 7);
    return (u >> 3) * 256 + 64 * (j >> 1) + 16 * (j & 1);
  } else {
    return u * GemvUnit<T>::kValues;
  }
}

template <GgmlType T, int NT>
__global__ void __launch_bounds__(kThreads) gemv_q_f32(GemvParams p) {
  using U = GemvUnit<T>;
  constexpr int kPieces = U::kValues / 8;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kR;
  const uint8_t* __restrict__ wrow[kR];
#pragma unroll
  for (int r = 0; r < kR; ++r) {
    // A row past n_out re-reads the last row (its sum is never stored).
    const int64_t row = row0 + r < p.n_out ? row0 + r : p.n_out - 1;
    wrow[r] = p.w + row * p.row_bytes;
  }
  const float* __restrict__ x = p.x;
  const int64_t n_units = p.n_in / U::kValues;

  float acc[kR][NT];
#pragma unroll
  for (int r = 0; r < kR; ++r)
#pragma unroll
    for (int t = 0; t < NT; ++t) acc[r][t] = 0.f;

#pragma unroll(NT <= 2 ? 2 : 1)  // two units in flight where registers allow
  for (int64_t u = tid; u < n_units; u += kThreads) {
    typename U::Raw raw[kR];
#pragma unroll
    for (int r = 0; r < kR; ++r) U::load(wrow[r], u, raw[r]);
    const int64_t base = unit_base<T>(u);
#pragma unroll
    for (int k = 0; k < kPieces; ++k) {
      const int64_t e = base + U::pos(k);  // first of 8 values, a multiple of 8
      float4 xa[NT], xb[NT];
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        const float4* x4 = reinterpret_cast<const float4*>(x + t * p.n_in + e);
        xa[t] = __ldg(x4);
        xb[t] = __ldg(x4 + 1);
      }
#pragma unroll
      for (int r = 0; r < kR; ++r) {
        float v[8];
        U::piece(raw[r], k, v);
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          acc[r][t] = fma8(v, xa[t], xb[t], acc[r][t]);
        }
      }
    }
  }

  __shared__ float part[kWarps][kR * NT];
#pragma unroll
  for (int r = 0; r < kR; ++r)
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      float s = acc[r][t];
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
      if (lane == 0) part[warp][r * NT + t] = s;
    }
  __syncthreads();
  if (tid < kR * NT) {
    const int r = tid / NT, t = tid % NT;
    const int64_t row = row0 + r;
    if (row < p.n_out) {
      float s = part[0][tid];
#pragma unroll
      for (int w = 1; w < kWarps; ++w) s += part[w][tid];
      p.y[t * p.n_out + row] = s;
    }
  }
}

// One unit of kR rows (raw) against NT tokens of x: acc[r][t] += sum over
// the unit's values of w[r][i] x[t][i]. base: the unit's first value.
template <typename U, int NT, typename XL>
__device__ __forceinline__ void unit_dot(const typename U::Raw (&raw)[kR], XL xl, int64_t base,
                                         float (&acc)[kR][NT]) {
  constexpr int kPieces = U::kValues / 8;
  if constexpr (U::kFactored) {
    constexpr int kPS = U::kPiecesPerScale;
#pragma unroll
    for (int sb = 0; sb < kPieces / kPS; ++sb) {
      float S[kR][NT], X[NT];
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        X[t] = 0.f;
#pragma unroll
        for (int r = 0; r < kR; ++r) S[r][t] = 0.f;
      }
#pragma unroll
      for (int kk = 0; kk < kPS; ++kk) {
        const int k = sb * kPS + kk;
        const int64_t e = base + U::pos(k);
        float4 xa[NT], xb[NT];
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          xl(t, e, xa[t], xb[t]);
          if constexpr (U::kHasMin)
            X[t] += ((xa[t].x + xa[t].y) + (xa[t].z + xa[t].w)) +
                    ((xb[t].x + xb[t].y) + (xb[t].z + xb[t].w));
        }
#pragma unroll
        for (int r = 0; r < kR; ++r) {
          float q[8];
          U::quants(raw[r], k, q);
#pragma unroll
          for (int t = 0; t < NT; ++t) {
            S[r][t] = fma8(q, xa[t], xb[t], S[r][t]);
          }
        }
      }
#pragma unroll
      for (int r = 0; r < kR; ++r) {
        float dl, ml;
        U::scale(raw[r], sb, dl, ml);
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          float a = fmaf(dl, S[r][t], acc[r][t]);
          if constexpr (U::kHasMin) a = fmaf(-ml, X[t], a);
          acc[r][t] = a;
        }
      }
    }
  } else {
#pragma unroll
    for (int k = 0; k < kPieces; ++k) {
      const int64_t e = base + U::pos(k);
      float4 xa[NT], xb[NT];
#pragma unroll
      for (int t = 0; t < NT; ++t) xl(t, e, xa[t], xb[t]);
#pragma unroll
      for (int r = 0; r < kR; ++r) {
        float v[8];
        U::piece(raw[r], k, v);
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          acc[r][t] = fma8(v, xa[t], xb[t], acc[r][t]);
        }
      }
    }
  }
}

// Where float4 c of a token's x row sits in shared memory (v4): an XOR of
// its low bits with higher bits, so that the 8 lanes of a quarter warp, which
// read float4s 16 apart (Q4_K: slices j of one super-block), 8 apart (Q8_0:
// consecutive blocks) or 2 apart (8-value units), hit 8 different 16-byte
// bank groups: one LDS.128 is then 4 conflict-free phases. The XOR stays
// inside an aligned group of 8 (Q4_K, Q8_0: n_in a multiple of 32) or 2
// (n_in a multiple of 8) float4s, so it permutes [0, n_in / 4).
template <typename U>
__device__ __forceinline__ int64_t x_swizzle(int64_t c) {
  if constexpr (std::is_same_v<U, GemvUnit<GgmlType::Q4_K>>)
    return c ^ ((c >> 4) & 3);
  else if constexpr (std::is_same_v<U, GemvUnit<GgmlType::Q8_0>>)
    return c ^ ((c >> 3) & 7);
  else
    return c ^ ((c >> 3) & 1);
}

constexpr int kTeams = 2;  // v4: 128-thread teams per block, sharing the staged x

// v4: v2's row groups and units, x staged in shared memory. The block is
// persistent (as many as fit on the device) and made of two 128-thread teams
// that walk row groups 2·blockIdx + team, + 2·gridDim, ...; each team meets
// at its own named barrier for the reduction. Why: v2 and v3 read x through
// L1 with 16-byte loads whose 32 lanes hit 16 (Q4_K) or 32 (Q8_0) different
// 128-byte lines, so each x load costs 16-32 L1 wavefronts; time grew
// linearly with n_tok while Q6_K (coalesced x) barely moved. Here x is read
// from DRAM/L2 once per block, coalesced, and each later read is an LDS.128.
template <GgmlType T, int NT>
__global__ void __launch_bounds__(kThreads* kTeams) gemv_q_f32_v4(GemvParams p, int64_t n_groups) {
  using U = GemvUnit<T>;
  extern __shared__ float4 xs[];  // (NT, n_in / 4), swizzled by x_swizzle
  __shared__ float part[kTeams][kWarps][kR * NT];
  const int team = threadIdx.x / kThreads, tid = threadIdx.x % kThreads, lane = tid & 31,
            warp = tid >> 5;
  const int64_t n4 = p.n_in / 4;
  {
    const float4* x4 = reinterpret_cast<const float4*>(p.x);
    for (int64_t i = threadIdx.x; i < NT * n4; i += kThreads * kTeams) {
      const int64_t t = i / n4, c = i - t * n4;
      xs[t * n4 + x_swizzle<U>(c)] = __ldg(x4 + i);
    }
  }
  __syncthreads();
  auto xl = [&](int t, int64_t e, float4& a, float4& b) {
    const int64_t c = e >> 2;
    a = xs[t * n4 + x_swizzle<U>(c)];
    b = xs[t * n4 + x_swizzle<U>(c + 1)];
  };
  const int64_t n_units = p.n_in / U::kValues;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * kTeams + team; g < n_groups;
       g += static_cast<int64_t>(gridDim.x) * kTeams) {
    const uint8_t* __restrict__ wrow[kR];
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      // A row past n_out re-reads the last row (its sum is never stored).
      const int64_t row = g * kR + r < p.n_out ? g * kR + r : p.n_out - 1;
      wrow[r] = p.w + row * p.row_bytes;
    }
    float acc[kR][NT];
#pragma unroll
    for (int r = 0; r < kR; ++r)
#pragma unroll
      for (int t = 0; t < NT; ++t) acc[r][t] = 0.f;
#pragma unroll(NT <= 2 ? 2 : 1)  // two units in flight where registers allow
    for (int64_t u = tid; u < n_units; u += kThreads) {
      typename U::Raw raw[kR];
#pragma unroll
      for (int r = 0; r < kR; ++r) U::load(wrow[r], u, raw[r]);
      unit_dot<U, NT>(raw, xl, unit_base<T>(u), acc);
    }
#pragma unroll
    for (int r = 0; r < kR; ++r)
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        float s = acc[r][t];
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
        if (lane == 0) part[team][warp][r * NT + t] = s;
      }
    // The team's own barrier (ids 1, 2; 0 is __syncthreads): teams run
    // different numbers of groups.
    asm volatile("bar.sync %0, %1;" ::"r"(team + 1), "r"(kThreads) : "memory");
    if (tid < kR * NT) {
      const int r = tid / NT, t = tid % NT;
      const int64_t row = g * kR + r;
      if (row < p.n_out) {
        float s = part[team][0][tid];
#pragma unroll
        for (int w = 1; w < kWarps; ++w) s += part[team][w][tid];
        p.y[t * p.n_out + row] = s;
      }
    }
    asm volatile("bar.sync %0, %1;" ::"r"(team + 1), "r"(kThreads)
                 : "memory");  // part is rewritten next
  }
}

// v4 takes at most this much shared memory for x (NT · n_in f32): two blocks
// of 16 warps per SM at the limit; larger x goes to v2.
constexpr int64_t kV4MaxXBytes = 100 * 1024;

// Per-SM facts for v4's persistent grid, found once per instantiation (the
// queries cost microseconds, and decode launches ~200 GEMVs per token):
// the SM count, shared memory per SM, and the blocks per SM that the
// kernel's registers allow.
struct V4Limits {
  int sms = 0, smem_per_sm = 0, blocks_by_regs = 0;
  bool ok = false;
};
template <GgmlType T, int NT>
const V4Limits& v4_limits() {
  static const V4Limits lim = [] {
    V4Limits l;
    int dev = 0;
    auto kernel = gemv_q_f32_v4<T, NT>;
    l.ok = cudaGetDevice(&dev) == cudaSuccess &&
           cudaDeviceGetAttribute(&l.sms, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess &&
           cudaDeviceGetAttribute(&l.smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor,
                                  dev) == cudaSuccess &&
           cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                static_cast<int>(kV4MaxXBytes)) == cudaSuccess &&
           cudaOccupancyMaxActiveBlocksPerMultiprocessor(&l.blocks_by_regs, kernel,
                                                         kThreads * kTeams, 0) == cudaSuccess &&
           l.blocks_by_regs > 0;
    return l;
  }();
  return lim;
}

template <GgmlType T, int NT>
Status launch_nt(const GemvParams& p, cudaStream_t stream) {
  const int64_t groups = (p.n_out + kR - 1) / kR;
  if (groups > 0x7fffffff) return make_error("gemv_q: n_out %lld too large", (long long)p.n_out);
  if (p.n_in % GemvUnit<T>::kValues != 0)
    return make_error("gemv_q: n_in %lld not a multiple of %d", (long long)p.n_in,
                      GemvUnit<T>::kValues);
  if (p.version != 0 && p.version != 2 && p.version != 4)
    return make_error("gemv_q: no version %d (2 or 4)", p.version);
  const int64_t x_bytes = static_cast<int64_t>(NT) * p.n_in * 4;
  if (p.version == 4 && x_bytes > kV4MaxXBytes)
    return make_error("gemv_q: v4 stages x in shared memory, %lld bytes > %lld", (long long)x_bytes,
                      (long long)kV4MaxXBytes);
  // The default is v4 for Q8_0 only: whole 8b decodes on the H200 (same run,
  // LS_GEMV_VERSION A/B) were 5 % faster with v4 for Q8_0 but 14 % slower
  // for Q4_K_M (Q4_K + Q6_K), so v2 stays the default elsewhere.
  const bool v4_default = T == GgmlType::Q8_0;
  if (p.version == 2 || x_bytes > kV4MaxXBytes || (p.version == 0 && !v4_default)) {
    gemv_q_f32<T, NT><<<static_cast<unsigned>(groups), kThreads, 0, stream>>>(p);
  } else {
    const V4Limits& l = v4_limits<T, NT>();
    if (!l.ok) return make_error("gemv_q: device queries failed for v4 (%s)", ggml_type_name(T));
    // Blocks per SM: the register limit and the shared-memory limit (x and
    // the 1 KiB the runtime reserves per block), at least 1.
    int64_t per_sm =
        l.smem_per_sm /
        (x_bytes + 1024 + static_cast<int64_t>(sizeof(float)) * kTeams * kWarps * kR * NT);
    per_sm = per_sm < l.blocks_by_regs ? per_sm : l.blocks_by_regs;
    per_sm = per_sm > 0 ? per_sm : 1;
    const int64_t team_groups = (groups + kTeams - 1) / kTeams;
    const int64_t blocks = team_groups < per_sm * l.sms ? team_groups : per_sm * l.sms;
    gemv_q_f32_v4<T, NT><<<static_cast<unsigned>(blocks), kThreads * kTeams,
                           static_cast<size_t>(x_bytes), stream>>>(p, groups);
  }
  LS_CUDA_TRY(cudaGetLastError());
  return ok();
}

template <GgmlType T>
Status launch_type(const GemvParams& p, cudaStream_t stream) {
  switch (p.n_tok) {
    case 1:
      return launch_nt<T, 1>(p, stream);
    case 2:
      return launch_nt<T, 2>(p, stream);
    case 3:
      return launch_nt<T, 3>(p, stream);
    case 4:
      return launch_nt<T, 4>(p, stream);
    case 5:
      return launch_nt<T, 5>(p, stream);
    case 6:
      return launch_nt<T, 6>(p, stream);
    case 7:
      return launch_nt<T, 7>(p, stream);
    case 8:
      return launch_nt<T, 8>(p, stream);
    default:
      return make_error("gemv_q: n_tok %d outside 1..%d", p.n_tok, kGemvMaxTok);
  }
}

}  // namespace

int gemv_env_version() {
  static const int v = [] {
    const char* e = std::getenv("LS_GEMV_VERSION");
    return e ? std::atoi(e) : 0;
  }();
  return v;
}

Status gemv_q_f32_launch(GgmlType type, const GemvParams& p, cudaStream_t stream) {
  // LS_GEMV_VERSION=2 sends the calls that ask for the default to v2, so a
  // whole decode can be timed on both (A/B runs).
  GemvParams q = p;
  if (q.version == 0 && gemv_env_version() == 2) q.version = 2;
  return dispatch_decodable(type, "gemv_q",
                            [&]<GgmlType T>() -> Status { return launch_type<T>(q, stream); });
}

}  // namespace ls
