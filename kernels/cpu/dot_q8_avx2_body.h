// The AVX2 lane-form dot's body (kernels/cpu/dot_q8_avx2.cpp: the
// arithmetic and its bits are described there), written once for two
// builds: dot_q8_avx2.cpp (maddubs and madd) and dot_q8_avx2_vnni.cpp
// (AVX-VNNI's vpdpbusd: Intel's client cores from Alder Lake, Zen 4 and
// later). The includer defines LS_AVX2 (the functions' target attribute)
// and LS_DOT_AVX_VNNI (0 or 1), in a file that has turned contraction off.
// (no defines: a body for dot_q8_avx2.cpp and dot_q8_avx2_vnni.cpp)
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cassert>

#include "kernels/cpu/dot_q8.h"
#include "kernels/cpu/k4_scales.h"
#include "kernels/cpu/q6_k_avx2.h"
#include "kernels/quant_blocks.h"

// Loops over tokens and vectors have fixed trip counts; unrolled, their
// accumulators and weights stay in registers (an indexed array would live on
// the stack, and each FMA would wait for a store).
#define LS_UNROLL _Pragma("GCC unroll 16")

// Internal to the file that includes it: the two builds differ in their ISA.
namespace ls {
namespace {

LS_AVX2 inline __m256 u8x8_to_ps(uint64_t bytes) {
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(bytes))));
}
LS_AVX2 inline __m256i load32(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}
LS_AVX2 inline __m128i load16(const void* p) {
  return _mm_loadu_si128(static_cast<const __m128i*>(p));
}
LS_AVX2 inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
// u8 x s8 -> 8 int32 lanes, each the exact sum of 4 neighbouring
// products: maddubs then madd by ones, or AVX-VNNI's vpdpbusd (no int16
// step; the same sums, since no maddubs pair saturates: see the top).
LS_AVX2 inline __m256i dot4(__m256i w, __m256i x) {
#if LS_DOT_AVX_VNNI
  return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), w, x);
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1));
#endif
}

// Per chunk: the 8 blocks' scales s and min/offset factors m (lane j: block j).
struct Scales {
  __m256 s;
  __m256 m;
};

template <GgmlType T>
struct Q;  // per type: kBytes (per chunk), scales(), block() (32 unsigned quants), kOffset

// Q4_K's and Q5_K's scales: d * sc and dmin * mn of the 8 blocks (the two
// block types share d, dmin and the packed 6-bit scales).
template <class B>
LS_AVX2 inline void k4_scales(const uint8_t* p, Scales& sc) {
  const B* b = reinterpret_cast<const B*>(p);
  uint64_t s8, m8;
  k4_scale_min_bytes(b->scales, &s8, &m8);
  sc.s = _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(b->d)), u8x8_to_ps(s8));
  sc.m = _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(b->dmin)), u8x8_to_ps(m8));
}

template <>
struct Q<GgmlType::Q4_K> {
  LS_AVX2 static void scales(const uint8_t* p, Scales& sc) { k4_scales<BlockQ4_K>(p, sc); }
  // Block k: qs[32 (k/2) ..] low nibbles (k even) or high (k odd).
  LS_AVX2 static __m256i block(const uint8_t* p, int k) {
    const __m256i v = load32(reinterpret_cast<const BlockQ4_K*>(p)->qs + 32 * (k / 2));
    return _mm256_and_si256(k % 2 ? _mm256_srli_epi16(v, 4) : v, _mm256_set1_epi8(0x0F));
  }
};

template <>
struct Q<GgmlType::Q5_K> {
  LS_AVX2 static void scales(const uint8_t* p, Scales& sc) { k4_scales<BlockQ5_K>(p, sc); }
  // As Q4_K, plus 16 where bit k of qh[l] is set (bit 2c for the low
  // nibbles of 64-value chunk c, 2c + 1 for the high ones: bit k for block k).
  LS_AVX2 static __m256i block(const uint8_t* p, int k) {
    const BlockQ5_K* b = reinterpret_cast<const BlockQ5_K*>(p);
    const __m256i v = load32(b->qs + 32 * (k / 2));
    const __m256i lo =
        _mm256_and_si256(k % 2 ? _mm256_srli_epi16(v, 4) : v, _mm256_set1_epi8(0x0F));
    const __m256i bit = _mm256_set1_epi8(static_cast<char>(1u << k));
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(load32(b->qh), bit), bit);
    return _mm256_or_si256(lo, _mm256_and_si256(set, _mm256_set1_epi8(16)));
  }
};

// Q4_0 / Q8_0: 8 blocks per chunk, one fp16 scale each.
template <class Block>
LS_AVX2 inline void legacy_scales(const uint8_t* p, Scales& sc, float offset) {
  alignas(16) uint16_t h[8];
  LS_UNROLL
  for (int k = 0; k < 8; ++k) __builtin_memcpy(&h[k], p + k * sizeof(Block), 2);
  sc.s = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(h)));
  sc.m = _mm256_mul_ps(sc.s, _mm256_set1_ps(offset));  // exact: a power of two (or 0)
}

template <>
struct Q<GgmlType::Q4_0> {
  LS_AVX2 static void scales(const uint8_t* p, Scales& sc) {
    legacy_scales<BlockQ4_0>(p, sc, 8.0f);
  }
  // Low nibbles are values 0-15, high ones 16-31 (offset 8).
  LS_AVX2 static __m256i block(const uint8_t* p, int k) {
    const __m128i v = load16(reinterpret_cast<const BlockQ4_0*>(p)[k].qs);
    const __m256i z = _mm256_inserti128_si256(_mm256_castsi128_si256(v), _mm_srli_epi16(v, 4), 1);
    return _mm256_and_si256(z, _mm256_set1_epi8(0x0F));
  }
};

template <>
struct Q<GgmlType::Q8_0> {
  LS_AVX2 static void scales(const uint8_t* p, Scales& sc) {
    legacy_scales<BlockQ8_0>(p, sc, 0.0f);
  }
  // Signed: the caller uses |w| and moves the sign onto x.
  LS_AVX2 static __m256i block(const uint8_t* p, int k) {
    return load32(reinterpret_cast<const BlockQ8_0*>(p)[k].qs);
  }
};

// The vphaddd tree: p[k] holds block k's products in 8 int32 lanes (0-3 its
// first 16 values, 4-7 the next 16). Returns lo = the first halves' sums of
// blocks 0..7, hi = the second halves' (each level adds neighbouring lanes
// within 128-bit halves; the last step puts blocks 0-3 and 4-7 side by side).
LS_AVX2 inline void block_sums(const __m256i* p, __m256i* lo, __m256i* hi) {
  const __m256i e0 =
      _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
  const __m256i e1 =
      _mm256_hadd_epi32(_mm256_hadd_epi32(p[4], p[5]), _mm256_hadd_epi32(p[6], p[7]));
  *lo = _mm256_permute2x128_si256(e0, e1, 0x20);
  *hi = _mm256_permute2x128_si256(e0, e1, 0x31);
}

// Spreads prefetches of the next row over this row's chunks.
struct Prefetcher {
  const uint8_t* p;
  int64_t end, cur = 0, step16, at16 = 0;
  Prefetcher(const RowPrefetch& pf, int64_t n)
      : p(pf.p), end(pf.bytes), step16(n > 0 ? (pf.bytes << 16) / n * 256 : 0) {}
  LS_AVX2 inline void advance() {
    if (!end) return;
    at16 += step16;
    for (const int64_t to = std::min<int64_t>(end, (at16 >> 16) + 64); cur < to; cur += 64)
      _mm_prefetch(reinterpret_cast<const char*>(p + cur), _MM_HINT_T0);
  }
};

// w[k] (block k's 32 values, natural order) -> out[v]: dword v of every
// block, lane k (an 8 x 8 transpose of dwords: unpacks within 128-bit
// halves, then the halves exchanged).
LS_AVX2 inline void transpose8(const __m256i* w, __m256i* out) {
  __m256i t[8], u[8];
  LS_UNROLL
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_epi32(w[2 * i], w[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_epi32(w[2 * i], w[2 * i + 1]);
  }
  LS_UNROLL
  for (int h = 0; h < 2; ++h) {  // blocks 0-3, 4-7
    const __m256i* a = t + 4 * h;
    u[4 * h + 0] = _mm256_unpacklo_epi64(a[0], a[2]);  // v = 0 | 4
    u[4 * h + 1] = _mm256_unpackhi_epi64(a[0], a[2]);  // v = 1 | 5
    u[4 * h + 2] = _mm256_unpacklo_epi64(a[1], a[3]);  // v = 2 | 6
    u[4 * h + 3] = _mm256_unpackhi_epi64(a[1], a[3]);  // v = 3 | 7
  }
  LS_UNROLL
  for (int v = 0; v < 4; ++v) {
    out[v] = _mm256_permute2x128_si256(u[v], u[4 + v], 0x20);
    out[v + 4] = _mm256_permute2x128_si256(u[v], u[4 + v], 0x31);
  }
}

// Slices whose maddubs pairs an int16 sum can take without overflow: a pair
// is at most 2 * 127 * (the largest unsigned quant), 32767 in all.
template <GgmlType T>
constexpr int kSlices16 = T == GgmlType::Q4_0 || T == GgmlType::Q4_K ? 8  // 2 * 127 * 15
                          : T == GgmlType::Q5_K                      ? 4  // 2 * 127 * 31
                          : T == GgmlType::Q6_K                      ? 2  // 2 * 127 * 63
                                                                     : 1;                      // Q8_0: 128

// Sum over slices V0 .. V0 + N - 1 of the interleaved form, in int32 lanes
// (N a multiple of kSlices16<T>, or smaller than it).
template <GgmlType T, int V0, int N>
LS_AVX2 inline __m256i il_sums(const __m256i* w, const int8_t* xq) {
  constexpr int G = kSlices16<T> < N ? kSlices16<T> : N;
  static_assert(N % G == 0, "whole groups of slices");
  __m256i i32 = _mm256_setzero_si256();
#if LS_DOT_AVX_VNNI
  // vpdpbusd accumulates each slice's 4-product sums in int32 lanes: the
  // int16 groups (and their madd) are not needed.
  LS_UNROLL
  for (int v = V0; v < V0 + N; ++v) {
    __m256i xv = load32(xq + 32 * v), wv = w[v];
    if constexpr (T == GgmlType::Q8_0) {
      xv = _mm256_sign_epi8(xv, wv);
      wv = _mm256_abs_epi8(wv);
    }
    i32 = _mm256_dpbusd_avx_epi32(i32, wv, xv);
  }
#else
  const __m256i ones = _mm256_set1_epi16(1);
  LS_UNROLL
  for (int g = V0; g < V0 + N; g += G) {
    __m256i s16 = _mm256_setzero_si256();
    LS_UNROLL
    for (int v = g; v < g + G; ++v) {
      __m256i xv = load32(xq + 32 * v), wv = w[v];
      if constexpr (T == GgmlType::Q8_0) {
        xv = _mm256_sign_epi8(xv, wv);
        wv = _mm256_abs_epi8(wv);
      }
      s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(wv, xv));
    }
    i32 = _mm256_add_epi32(i32, _mm256_madd_epi16(s16, ones));
  }
#endif
  return i32;
}

// Types with one scale per 32 values; IL: the interleaved form (the top).
template <GgmlType T, int NT, bool IL = false>
LS_AVX2 void dot32(const uint8_t* row, const ActQ8View& x, int64_t t0, float* y, int64_t ldy,
                   const RowPrefetch& pf) {
  const int64_t n = x.n, n_chunks = n / 256;
  const uint64_t chunk_bytes = ggml_row_bytes(T, 256);
  Prefetcher pre(pf, n);
  __m256 acc[NT];
  LS_UNROLL
  for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t c = 0; c < n_chunks; ++c) {
    pre.advance();
    const uint8_t* p = row + c * chunk_bytes;
    Scales sc;
    Q<T>::scales(p, sc);
    __m256i w[8];
    LS_UNROLL
    for (int k = 0; k < 8; ++k) w[k] = Q<T>::block(p, k);
    if constexpr (IL) {
      __m256i wt[8];
      transpose8(w, wt);
      LS_UNROLL
      for (int v = 0; v < 8; ++v) w[v] = wt[v];
    }
    LS_UNROLL
    for (int t = 0; t < NT; ++t) {
      __m256i sum;
      if constexpr (IL) {
        sum = il_sums<T, 0, 8>(w, x.qil_at(t0 + t) + 256 * c);
      } else {
        const int8_t* xq = x.q_at(t0 + t) + 256 * c;
        __m256i pk[8];
        LS_UNROLL
        for (int k = 0; k < 8; ++k) {
          __m256i xv = load32(xq + 32 * k), wk = w[k];
          if constexpr (T == GgmlType::Q8_0) {
            xv = _mm256_sign_epi8(xv, wk);
            wk = _mm256_abs_epi8(wk);
          }
          pk[k] = dot4(wk, xv);
        }
        __m256i lo, hi;
        block_sums(pk, &lo, &hi);
        sum = _mm256_add_epi32(lo, hi);
      }
      const __m256 f = _mm256_mul_ps(sc.s, _mm256_loadu_ps(x.d_at(t0 + t) + 8 * c));
      acc[t] = _mm256_fmadd_ps(f, _mm256_cvtepi32_ps(sum), acc[t]);
      if constexpr (T != GgmlType::Q8_0)
        acc[t] = _mm256_fnmadd_ps(sc.m, _mm256_loadu_ps(x.ds_at(t0 + t) + 8 * c), acc[t]);
    }
  }
  LS_UNROLL
  for (int t = 0; t < NT; ++t) {
    if constexpr (T == GgmlType::Q4_0 || T == GgmlType::Q8_0) {
      if (n % 256) {
        alignas(32) float a[8];
        _mm256_store_ps(a, acc[t]);
        y[t * ldy] = dot_q8_lanes_tail(T, row, x, t0 + t, a);
        continue;
      }
    }
    y[t * ldy] = hsum(acc[t]);
  }
}

// Q6_K: block k of a super-block, j = k % 4 within its 128-value half h:
// from A = ql[64h ..], B = ql[64h + 32 ..], H = qh[32h ..]
//   j = 0: A & 15 | (H & 3) << 4        j = 1: B & 15 | (H >> 2 & 3) << 4
//   j = 2: A >> 4 | (H >> 4 & 3) << 4   j = 3: B >> 4 | (H >> 6 & 3) << 4
// Unsigned 0..63, offset 32; a scale per 16 values (two per block: the lo
// and hi groups of the lane form).
// IL: the interleaved form; slices 0-3 are every block's lo group, 4-7 its
// hi group.
template <int NT, bool IL = false>
LS_AVX2 void dot_q6_k(const uint8_t* row, const ActQ8View& x, int64_t t0, float* y, int64_t ldy,
                      const RowPrefetch& pf) {
  const int64_t n = x.n, n_chunks = n / 256;
  // Scale bytes 0..15 -> even ones (lo groups) then odd ones (hi groups).
  const __m128i evens_odds = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  const __m256 thirty_two = _mm256_set1_ps(32.0f);
  Prefetcher pre(pf, n);
  __m256 acc[NT];
  LS_UNROLL
  for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  const BlockQ6_K* blocks = reinterpret_cast<const BlockQ6_K*>(row);
  for (int64_t c = 0; c < n_chunks; ++c) {
    pre.advance();
    const BlockQ6_K& b = blocks[c];
    const __m256 d = _mm256_set1_ps(_cvtsh_ss(b.d));
    const __m128i sc8 = _mm_shuffle_epi8(load16(b.scales), evens_odds);
    const __m256 s_lo = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc8)));
    const __m256 s_hi =
        _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc8, 8))));
    const __m256 m_lo = _mm256_mul_ps(s_lo, thirty_two);  // exact: a power of two
    const __m256 m_hi = _mm256_mul_ps(s_hi, thirty_two);
    __m256i w[8];
    LS_UNROLL
    for (int k = 0; k < 8; ++k) w[k] = q6_k_values(b, k);
    if constexpr (IL) {
      __m256i wt[8];
      transpose8(w, wt);
      LS_UNROLL
      for (int v = 0; v < 8; ++v) w[v] = wt[v];
    }
    LS_UNROLL
    for (int t = 0; t < NT; ++t) {
      __m256i i_lo, i_hi;
      if constexpr (IL) {
        const int8_t* xq = x.qil_at(t0 + t) + 256 * c;
        i_lo = il_sums<GgmlType::Q6_K, 0, 4>(w, xq);
        i_hi = il_sums<GgmlType::Q6_K, 4, 4>(w, xq);
      } else {
        const int8_t* xq = x.q_at(t0 + t) + 256 * c;
        __m256i pk[8];
        LS_UNROLL
        for (int k = 0; k < 8; ++k) pk[k] = dot4(w[k], load32(xq + 32 * k));
        block_sums(pk, &i_lo, &i_hi);
      }
      const __m256 dx = _mm256_loadu_ps(x.d_at(t0 + t) + 8 * c);
      acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(s_lo, dx), _mm256_cvtepi32_ps(i_lo), acc[t]);
      acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(s_hi, dx), _mm256_cvtepi32_ps(i_hi), acc[t]);
      // ds16 of groups 0..15 -> even groups (lo) and odd ones (hi).
      const float* ds16 = x.ds16_at(t0 + t) + 16 * c;
      const __m256 g0 = _mm256_loadu_ps(ds16), g1 = _mm256_loadu_ps(ds16 + 8);
      const __m256 ds_lo = _mm256_castpd_ps(_mm256_permute4x64_pd(
          _mm256_castps_pd(_mm256_shuffle_ps(g0, g1, _MM_SHUFFLE(2, 0, 2, 0))),
          _MM_SHUFFLE(3, 1, 2, 0)));
      const __m256 ds_hi = _mm256_castpd_ps(_mm256_permute4x64_pd(
          _mm256_castps_pd(_mm256_shuffle_ps(g0, g1, _MM_SHUFFLE(3, 1, 3, 1))),
          _MM_SHUFFLE(3, 1, 2, 0)));
      acc[t] = _mm256_fnmadd_ps(m_lo, ds_lo, acc[t]);
      acc[t] = _mm256_fnmadd_ps(m_hi, ds_hi, acc[t]);
    }
  }
  LS_UNROLL
  for (int t = 0; t < NT; ++t) y[t * ldy] = hsum(acc[t]);
}

template <GgmlType T, int NT>
LS_AVX2 void dot32_any(const uint8_t* row, const ActQ8View& x, int64_t t0, float* y, int64_t ldy,
                       const RowPrefetch& pf, bool il) {
  if (il) return dot32<T, NT, true>(row, x, t0, y, ldy, pf);
  return dot32<T, NT>(row, x, t0, y, ldy, pf);
}

template <int NT>
LS_AVX2 void dot_type(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, float* y,
                      int64_t ldy, const RowPrefetch& pf) {
  // The chunk's transpose is shared by the tokens: from 2 of them for the
  // 4- and 5-bit types, from 4 for Q6_K and Q8_0, whose int16 sums hold 2
  // slices and 1 (kSlices16), so the tree they replace was cheaper. One VM
  // core (Zen 4) from L2, bench/results/2026-12-04-h200-s29.md: Q4_K +25 %
  // at 2 tokens, +38 % at 4; Q6_K -30 % at 2, +10 % at 4.
  const bool il = x.qil && dot_q8_interleaved();
  const bool il2 = il && NT >= 2, il4 = il && NT >= 4;
  switch (t) {
    case GgmlType::Q4_0:
      return dot32_any<GgmlType::Q4_0, NT>(row, x, t0, y, ldy, pf, il2);
    case GgmlType::Q8_0:
      return dot32_any<GgmlType::Q8_0, NT>(row, x, t0, y, ldy, pf, il4);
    case GgmlType::Q4_K:
      return dot32_any<GgmlType::Q4_K, NT>(row, x, t0, y, ldy, pf, il2);
    case GgmlType::Q5_K:
      return dot32_any<GgmlType::Q5_K, NT>(row, x, t0, y, ldy, pf, il2);
    case GgmlType::Q6_K:
      if (il4) return dot_q6_k<NT, true>(row, x, t0, y, ldy, pf);
      return dot_q6_k<NT>(row, x, t0, y, ldy, pf);
    default:
      assert(false && "dot_q8_avx2: unsupported type");
  }
}

// n_tok (1..kDotMaxTokens) tokens' dot: the build's entry point.
LS_AVX2 void dot_tokens(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                        float* y, int64_t ldy, const RowPrefetch& pf) {
  assert(n_tok >= 1 && n_tok <= kDotMaxTokens);
  dot_q8_by_tokens(n_tok,
                   [&](auto nt) { dot_type<decltype(nt)::value>(t, row, x, t0, y, ldy, pf); });
}

}  // namespace
}  // namespace ls
