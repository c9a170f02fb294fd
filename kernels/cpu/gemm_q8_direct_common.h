// What the direct tile's files share (kernels/cpu/gemm_q8_direct_*.cpp, the
// kernel of gemm_q8.h's gemm_q8_direct_avx512): the target attribute, the
// tile's signature, and two small vector helpers. For x86 translation units
// built with these targets only.
// defines: LS_DIRECT, LS_DIRECT_UNROLL, DirectTileFn, direct_ld(), direct_hsum(),
//          direct_prefetch_at(), DirectForm, direct_pairs_min(),
//          gemm_q8_direct_q8_0_tile()
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/gemm_q8.h"

#define LS_DIRECT \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define LS_DIRECT_UNROLL _Pragma("GCC unroll 16")

namespace ls {

// Rows a and b (b may be a again: computed, not stored) x T tokens of the
// pairs panel x (token t: pair t / 2, half t & 1), nc chunks; y[t * ldy] is
// row a's output, y[t * ldy + 1] row b's where two.
using DirectTileFn = void (*)(const uint8_t* wa, const uint8_t* wb, const GemmQ8XPair* x,
                              int64_t nc, bool two, float* y, int64_t ldy);

LS_DIRECT inline __m512i direct_ld(const int32_t* p) {
  return _mm512_load_si512(p);
}

// The lane form's final sum of 8 lanes (q8_lanes_sum's tree).
LS_DIRECT inline float direct_hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Where chunk c of a tile's rows prefetches, as an offset from the chunk's
// blocks in each of its two rows (nc chunks of kb bytes a row): `ahead`
// bytes on (the packers' distance, pack_prefetch.h; at most a row), and
// past the row's end in the row two on, where the thread's next tile reads
// (rows a + 2 and b + 2). Not the row one on: row a's is b, which this tile
// reads itself, so prefetches past a's end fetched nothing new and the next
// tile's row b + 2 started cold (the 70b's n_in = 8192 rows, 32 chunks:
// half of it at the default 16). The tiles call prefetch_span with it
// themselves: GCC dropped the prefetches of a helper that made the calls,
// inlined or not (it takes code of nothing but prefetches for code without
// effects).
LS_DIRECT inline int64_t direct_prefetch_at(int64_t c, int64_t nc, int64_t kb, int64_t ahead) {
  const int64_t row = nc * kb;
  const int64_t d = ahead < row ? ahead : row;
  return d + (c * kb + d >= row ? row : 0);
}

// The two forms of the direct tiles' products (session 42), DirectForm<T,
// kPairs>, for the K-quants and Q8_0 alike. Accumulator i belongs to pair
// i / 2 of the pairs panel in both.
//   rows (kPairs false): accumulator t holds token t for row a (lanes 0-7)
//     and row b (8-15), as W holds the weights; token t's 32-byte slice is
//     broadcast to both halves for each vpdpbusd.
//   pairs (kPairs true): accumulator 2p + r holds row r for tokens 2p
//     (lanes 0-7) and 2p + 1 (8-15): a pair's slice is one 64-byte load of
//     the panel, the operand of vpdpbusd as it is, and each row's slice is
//     repeated in both halves of a register once a slice. At 8 tokens that
//     is 16 shuffles a chunk where the rows form has 64 broadcasts beside
//     its 64 vpdpbusd (and the x scales load as they are, not broadcast).
//     An odd T's last pair computes one token more (never stored).
// Each lane computes the same products and the same fused steps in both,
// so their bits are the same. On Zen 4, one thread from L2, the pairs form
// was 1.15-1.23x the rows form at 8 tokens, 1.06-1.10x at 4 and 0.91-0.98x
// at 2-3 (bench/results/2026-12-06-s42.md): the tiles take it from
// direct_pairs_min() tokens.
template <int T, bool kPairs>
struct DirectForm {
  static constexpr int NP = (T + 1) / 2;
  static constexpr int N = kPairs ? 2 * NP : T;  // accumulators

  // Accumulator i's weight-side factor from v = [row a | row b], by i & 1.
  LS_DIRECT static __m512 w(__m512 v, int r) {
    if constexpr (kPairs)
      return r == 0 ? _mm512_shuffle_f32x4(v, v, 0x44) : _mm512_shuffle_f32x4(v, v, 0xEE);
    return v;
  }
  // Accumulator i's x-side factor from f, 16 values of its pair (token
  // 2p's 8, then 2p + 1's); xi for int32 ones.
  LS_DIRECT static __m512 x(const float* f, int i) {
    if constexpr (kPairs) return _mm512_loadu_ps(f);
    return _mm512_broadcast_f32x8(_mm256_load_ps(f + 8 * (i & 1)));
  }
  LS_DIRECT static __m512i xi(const int32_t* f, int i) {
    if constexpr (kPairs) return _mm512_loadu_si512(f);
    return _mm512_broadcast_i32x8(
        _mm256_load_si256(reinterpret_cast<const __m256i*>(f + 8 * (i & 1))));
  }
  LS_DIRECT static void zero(__m512 (&a)[N]) {
    LS_DIRECT_UNROLL
    for (int i = 0; i < N; ++i) a[i] = _mm512_setzero_ps();
  }
  LS_DIRECT static void zero(__m512i (&a)[N]) {
    LS_DIRECT_UNROLL
    for (int i = 0; i < N; ++i) a[i] = _mm512_setzero_si512();
  }
  // A[i] += the products of slice `slice` of the chunk: W holds it for row
  // a (lanes 0-7) and row b (8-15), xc[p] is pair p's chunk.
  LS_DIRECT static void products(__m512i (&A)[N], __m512i W, const GemmQ8XPair* const (&xc)[NP],
                                 int slice) {
    if constexpr (kPairs) {
      products_rows(A, _mm512_shuffle_i64x2(W, W, 0x44), _mm512_shuffle_i64x2(W, W, 0xEE), xc,
                    slice);
    } else {
      LS_DIRECT_UNROLL
      for (int t = 0; t < T; ++t) {
        const __m512i X = _mm512_broadcast_i64x4(_mm256_load_si256(
            reinterpret_cast<const __m256i*>(xc[t / 2]->q + 64 * slice + 32 * (t & 1))));
        A[t] = _mm512_dpbusd_epi32(A[t], W, X);
      }
    }
  }
  // The pairs form's products from each row's slice in both halves.
  LS_DIRECT static void products_rows(__m512i (&A)[N], __m512i wa, __m512i wb,
                                      const GemmQ8XPair* const (&xc)[NP], int slice) {
    static_assert(kPairs, "the pairs form's");
    LS_DIRECT_UNROLL
    for (int p = 0; p < NP; ++p) {
      const __m512i X = _mm512_loadu_si512(xc[p]->q + 64 * slice);
      A[2 * p] = _mm512_dpbusd_epi32(A[2 * p], wa, X);
      A[2 * p + 1] = _mm512_dpbusd_epi32(A[2 * p + 1], wb, X);
    }
  }
  LS_DIRECT static __m256 half(__m512 v, int h) {
    return h ? _mm512_extractf32x8_ps(v, 1) : _mm512_castps512_ps256(v);
  }
  // Each token's outputs: y[t * ldy] row a's, y[t * ldy + 1] row b's where two.
  LS_DIRECT static void store(const __m512 (&acc)[N], bool two, float* y, int64_t ldy) {
    LS_DIRECT_UNROLL
    for (int t = 0; t < T; ++t) {
      if constexpr (kPairs) {
        const int p = t / 2, h = t & 1;
        y[t * ldy] = direct_hsum(half(acc[2 * p], h));
        if (two) y[t * ldy + 1] = direct_hsum(half(acc[2 * p + 1], h));
      } else {
        y[t * ldy] = direct_hsum(half(acc[t], 0));
        if (two) y[t * ldy + 1] = direct_hsum(half(acc[t], 1));
      }
    }
  }
};

// Tokens from which the tiles take the pairs form: 4, or
// LS_DIRECT_PAIRS_MIN (2-9; 9: never) for A/B.
int direct_pairs_min();

// The Q8_0 tile for n_tok tokens, in the pairs form or the rows form
// (gemm_q8_direct_q8_0_avx512.cpp).
DirectTileFn gemm_q8_direct_q8_0_tile(int n_tok, bool pairs);

}  // namespace ls
