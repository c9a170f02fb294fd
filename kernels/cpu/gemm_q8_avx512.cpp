// AVX-512 VNNI GEMM tile (kernels/cpu/gemm_q8.h): R = 4 rows × T = 4 tokens
// over the interleaved layouts, the lane form of kernels/cpu/q8_lanes.h.
//
// A zmm holds two slices (64 bytes: 8 values of each of the 8 blocks), so a
// chunk is 4 zmm per operand. Per zmm k: R weight and T token vectors loaded,
// R · T vpdpbusd (u8 × s8, 4 products summed into each int32 lane, no
// overflow) into R · T int32 accumulators whose lane j (and j + 8) gather
// block j's products. Per chunk and (row, token): the two 256-bit halves
// added (I, exact), then the lane form's float step on 8 lanes (ymm), as the
// AVX2 tile. Q6_K takes its lo groups (zmm 0-1) and hi groups (zmm 2-3) in
// turn, adding each group's term as it is done: the lane form's order.
// Q8_0: vpdpbusd wants an unsigned operand, so the weights go in as q + 128
// (their sign bit flipped) and the exact sum comes back as I - 128 · sum(q_x).
// At the end, the horizontal sum with q8_lanes_sum's tree.
// Contraction off: a multiply then an add, as the lane form says.
//
// The same tile over token pairs (gemm_q8_tile_avx512vnni_pairs; the
// default where the CPU has AVX-512 DQ too, GemmQ8Tuning::pairs; measured
// 1.1-1.45x the tile above at 8-32 tokens on the GPU machine's Xeon,
// bench/results/2026-12-03-h200-s21.md). The tile above puts two slices of
// one token in a zmm, so each (row, token) sum comes out in two halves to
// fold (an extract and an add) before the float step, which then runs on 8
// lanes: 8 vector
// operations per (row, token) and chunk against its 16 vpdpbusd (session 8's
// AMX record puts the GEMM's loss at 8-32 tokens in that float step). The
// pairs tile puts one slice of two tokens in a zmm (token 2p in lanes 0-7,
// 2p + 1 in 8-15) and broadcasts the row's slice to both halves: whole
// lanes, no fold, and the float step two tokens an operation (6 operations
// per row and pair); the same vpdpbusd, and one load per pair and slice
// shared by the 4 rows: its x panel holds the pair's two tokens side by side
// (GemmQ8XPair, gemm_q8_pack_x_pairs), where two loads and an insert made
// that zmm (session 32: GEMM from L2 on Zen 4 the same at 8 tokens, +6-12 %
// at 16-32 for Q4_K; on the 1b's shapes at 64 and 256 tokens, 2 threads,
// +2-13 %). Per lane the lane form's operations in its order: the same
// bits. It needs AVX-512 DQ too (gemm_q8_pairs_supported).
// defines: gemm_q8_tile_avx512vnni, gemm_q8_tile_avx512vnni_pairs (kernels/cpu/gemm_q8.h)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <cassert>

#include "kernels/cpu/gemm_q8.h"

#if defined(__x86_64__) || defined(__i386__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593, see dot_avx512.cpp
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#define LS_UNROLL _Pragma("GCC unroll 16")

#define LS_VNNI512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define LS_VNNI512_DQ \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))

namespace ls {
namespace {

LS_VNNI512 inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// The two halves of a zmm of int32 added: lane j = block j's sum.
LS_VNNI512 inline __m256i fold(__m512i a) {
  return _mm256_add_epi32(_mm512_castsi512_si256(a), _mm512_extracti64x4_epi64(a, 1));
}

// zmm k0 .. k1 - 1 of the chunk into A (int32, from zero).
template <bool kQ8, int R, int T>
LS_VNNI512 inline void products(const GemmQ8WChunk* const* wc, const GemmQ8XChunk* const* xc,
                                int k0, int k1, __m512i (&A)[R][T]) {
  LS_UNROLL
  for (int r = 0; r < R; ++r) LS_UNROLL
  for (int t = 0; t < T; ++t) A[r][t] = _mm512_setzero_si512();
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  // A real loop (as the AVX2 tile's): unrolled, GCC hoists the loads ahead
  // and spills them.
#pragma GCC unroll 1
  for (int k = k0; k < k1; ++k) {
    __m512i W[R];
    LS_UNROLL
    for (int r = 0; r < R; ++r) {
      W[r] = _mm512_loadu_si512(wc[r]->u + 64 * k);
      if constexpr (kQ8) W[r] = _mm512_xor_si512(W[r], flip);
    }
    LS_UNROLL
    for (int t = 0; t < T; ++t) {
      const __m512i X = _mm512_loadu_si512(xc[t]->q + 64 * k);
      LS_UNROLL
      for (int r = 0; r < R; ++r) A[r][t] = _mm512_dpbusd_epi32(A[r][t], W[r], X);
    }
  }
}

template <GgmlType TY, int R, int T>
LS_VNNI512 void tile(const GemmQ8WChunk* w, const GemmQ8XChunk* x, int64_t nc, float* y,
                     int64_t ldy) {
  constexpr bool kQ6 = TY == GgmlType::Q6_K, kQ8 = TY == GgmlType::Q8_0;
  __m256 acc[R][T];
  LS_UNROLL
  for (int r = 0; r < R; ++r) LS_UNROLL
  for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  for (int64_t c = 0; c < nc; ++c) {
    const GemmQ8WChunk* wc[R];
    const GemmQ8XChunk* xc[T];
    LS_UNROLL
    for (int r = 0; r < R; ++r) wc[r] = w + r * nc + c;
    LS_UNROLL
    for (int t = 0; t < T; ++t) xc[t] = x + t * nc + c;
    __m512i A[R][T];
    if constexpr (kQ6) {
      // lo groups, then hi groups, each added to acc as it is done.
      LS_UNROLL
      for (int h = 0; h < 2; ++h) {
        products<false, R, T>(wc, xc, 2 * h, 2 * h + 2, A);
        LS_UNROLL
        for (int r = 0; r < R; ++r) {
          const __m256 s = _mm256_load_ps(h ? wc[r]->s_hi : wc[r]->s);
          LS_UNROLL
          for (int t = 0; t < T; ++t) {
            const __m256 f = _mm256_mul_ps(s, _mm256_load_ps(xc[t]->d));
            acc[r][t] = _mm256_fmadd_ps(f, _mm256_cvtepi32_ps(fold(A[r][t])), acc[r][t]);
          }
        }
      }
      LS_UNROLL
      for (int r = 0; r < R; ++r) {
        const __m256 m = _mm256_load_ps(wc[r]->m), mh = _mm256_load_ps(wc[r]->m_hi);
        LS_UNROLL
        for (int t = 0; t < T; ++t) {
          __m256 a = _mm256_fnmadd_ps(m, _mm256_load_ps(xc[t]->ds_lo), acc[r][t]);
          acc[r][t] = _mm256_fnmadd_ps(mh, _mm256_load_ps(xc[t]->ds_hi), a);
        }
      }
    } else {
      products<kQ8, R, T>(wc, xc, 0, 4, A);
      LS_UNROLL
      for (int r = 0; r < R; ++r) {
        const __m256 s = _mm256_load_ps(wc[r]->s), m = _mm256_load_ps(wc[r]->m);
        LS_UNROLL
        for (int t = 0; t < T; ++t) {
          __m256i I = fold(A[r][t]);
          if constexpr (kQ8)  // (q + 128) · x summed: take 128 · sum(x) back off
            I = _mm256_sub_epi32(
                I, _mm256_slli_epi32(
                       _mm256_load_si256(reinterpret_cast<const __m256i*>(xc[t]->sum)), 7));
          const __m256 f = _mm256_mul_ps(s, _mm256_load_ps(xc[t]->d));
          __m256 a = _mm256_fmadd_ps(f, _mm256_cvtepi32_ps(I), acc[r][t]);
          if constexpr (!kQ8) a = _mm256_fnmadd_ps(m, _mm256_load_ps(xc[t]->ds), a);
          acc[r][t] = a;
        }
      }
    }
  }
  LS_UNROLL
  for (int r = 0; r < R; ++r) LS_UNROLL
  for (int t = 0; t < T; ++t) y[t * ldy + r] = hsum(acc[r][t]);
}

template <GgmlType TY, int R>
LS_VNNI512 void tile_r(const GemmQ8WChunk* w, const GemmQ8XChunk* x, int n_tok, int64_t nc,
                       float* y, int64_t ldy) {
  switch (n_tok) {
    case 1:
      return tile<TY, R, 1>(w, x, nc, y, ldy);
    case 2:
      return tile<TY, R, 2>(w, x, nc, y, ldy);
    case 3:
      return tile<TY, R, 3>(w, x, nc, y, ldy);
    default:
      return tile<TY, R, 4>(w, x, nc, y, ldy);
  }
}

template <GgmlType TY>
LS_VNNI512 void tile_any(const GemmQ8WChunk* w, int n_rows, const GemmQ8XChunk* x, int n_tok,
                         int64_t nc, float* y, int64_t ldy) {
  switch (n_rows) {
    case 1:
      return tile_r<TY, 1>(w, x, n_tok, nc, y, ldy);
    case 2:
      return tile_r<TY, 2>(w, x, n_tok, nc, y, ldy);
    case 3:
      return tile_r<TY, 3>(w, x, n_tok, nc, y, ldy);
    default:
      return tile_r<TY, 4>(w, x, n_tok, nc, y, ldy);
  }
}

// ---- The tile over token pairs ----

// One row's 8 floats in both halves.
LS_VNNI512_DQ inline __m512 both_ps(const float* a) {
  return _mm512_broadcast_f32x8(_mm256_load_ps(a));
}

// Slices v0 .. v1 - 1 of the chunk into A (int32, from zero): A[r][p] lane j
// (j + 8) is block j's sum of row r with token 2p (2p + 1). A pair's slice
// is one load from the pairs panel (GemmQ8XPair).
template <bool kQ8, int R, int NP>
LS_VNNI512_DQ inline void pair_products(const GemmQ8WChunk* const* wc, const GemmQ8XPair* const* xc,
                                        int v0, int v1, __m512i (&A)[R][NP]) {
  LS_UNROLL
  for (int r = 0; r < R; ++r) LS_UNROLL
  for (int p = 0; p < NP; ++p) A[r][p] = _mm512_setzero_si512();
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 1
  for (int v = v0; v < v1; ++v) {
    __m512i X[NP];
    LS_UNROLL
    for (int p = 0; p < NP; ++p) X[p] = _mm512_loadu_si512(xc[p]->q + 64 * v);
    LS_UNROLL
    for (int r = 0; r < R; ++r) {
      __m512i W = _mm512_broadcast_i64x4(
          _mm256_load_si256(reinterpret_cast<const __m256i*>(wc[r]->u + 32 * v)));
      if constexpr (kQ8) W = _mm512_xor_si512(W, flip);
      LS_UNROLL
      for (int p = 0; p < NP; ++p) A[r][p] = _mm512_dpbusd_epi32(A[r][p], W, X[p]);
    }
  }
}

// fma(s · d, float(I), acc), the lane form's step for one group.
LS_VNNI512_DQ inline __m512 pair_step(__m512 acc, __m512 s, __m512 d, __m512i I) {
  return _mm512_fmadd_ps(_mm512_mul_ps(s, d), _mm512_cvtepi32_ps(I), acc);
}

// x: NP pairs of the pairs panel (a pair's second token may repeat its
// first: the tile computes it and does not store it).
template <GgmlType TY, int R, int NP>
LS_VNNI512_DQ void pair_tile(const GemmQ8WChunk* w, const GemmQ8XPair* x, int n_tok, int64_t nc,
                             float* y, int64_t ldy) {
  constexpr bool kQ6 = TY == GgmlType::Q6_K, kQ8 = TY == GgmlType::Q8_0;
  __m512 acc[R][NP];
  LS_UNROLL
  for (int r = 0; r < R; ++r) LS_UNROLL
  for (int p = 0; p < NP; ++p) acc[r][p] = _mm512_setzero_ps();
  for (int64_t c = 0; c < nc; ++c) {
    const GemmQ8WChunk* wc[R];
    const GemmQ8XPair* xc[NP];
    LS_UNROLL
    for (int r = 0; r < R; ++r) wc[r] = w + r * nc + c;
    LS_UNROLL
    for (int p = 0; p < NP; ++p) xc[p] = x + p * nc + c;
    __m512 d[NP];
    LS_UNROLL
    for (int p = 0; p < NP; ++p) d[p] = _mm512_loadu_ps(xc[p]->d);
    __m512i A[R][NP];
    if constexpr (kQ6) {
      // lo groups (slices 0-3), then hi groups (4-7), each added as it is done.
      LS_UNROLL
      for (int h = 0; h < 2; ++h) {
        pair_products<false, R, NP>(wc, xc, 4 * h, 4 * h + 4, A);
        LS_UNROLL
        for (int r = 0; r < R; ++r) {
          const __m512 s = both_ps(h ? wc[r]->s_hi : wc[r]->s);
          LS_UNROLL
          for (int p = 0; p < NP; ++p) acc[r][p] = pair_step(acc[r][p], s, d[p], A[r][p]);
        }
      }
      LS_UNROLL
      for (int p = 0; p < NP; ++p) {
        const __m512 dl = _mm512_loadu_ps(xc[p]->ds_lo);
        const __m512 dh = _mm512_loadu_ps(xc[p]->ds_hi);
        LS_UNROLL
        for (int r = 0; r < R; ++r) {
          const __m512 a = _mm512_fnmadd_ps(both_ps(wc[r]->m), dl, acc[r][p]);
          acc[r][p] = _mm512_fnmadd_ps(both_ps(wc[r]->m_hi), dh, a);
        }
      }
    } else {
      pair_products<kQ8, R, NP>(wc, xc, 0, 8, A);
      LS_UNROLL
      for (int p = 0; p < NP; ++p) {
        __m512i sum128{};
        if constexpr (kQ8)  // (q + 128) · x summed: take 128 · sum(x) back off
          sum128 = _mm512_slli_epi32(_mm512_loadu_si512(xc[p]->sum), 7);
        __m512 ds{};
        if constexpr (!kQ8) ds = _mm512_loadu_ps(xc[p]->ds);
        LS_UNROLL
        for (int r = 0; r < R; ++r) {
          __m512i I = A[r][p];
          if constexpr (kQ8) I = _mm512_sub_epi32(I, sum128);
          __m512 a = pair_step(acc[r][p], both_ps(wc[r]->s), d[p], I);
          if constexpr (!kQ8) a = _mm512_fnmadd_ps(both_ps(wc[r]->m), ds, a);
          acc[r][p] = a;
        }
      }
    }
  }
  LS_UNROLL
  for (int r = 0; r < R; ++r) LS_UNROLL
  for (int p = 0; p < NP; ++p) {
    y[(2 * p) * ldy + r] = hsum(_mm512_castps512_ps256(acc[r][p]));
    if (2 * p + 1 < n_tok) y[(2 * p + 1) * ldy + r] = hsum(_mm512_extractf32x8_ps(acc[r][p], 1));
  }
}

template <GgmlType TY, int R>
LS_VNNI512_DQ void pair_tile_r(const GemmQ8WChunk* w, const GemmQ8XPair* x, int n_tok, int64_t nc,
                               float* y, int64_t ldy) {
  if (n_tok <= 2) return pair_tile<TY, R, 1>(w, x, n_tok, nc, y, ldy);
  return pair_tile<TY, R, 2>(w, x, n_tok, nc, y, ldy);
}

template <GgmlType TY>
LS_VNNI512_DQ void pair_tile_any(const GemmQ8WChunk* w, int n_rows, const GemmQ8XPair* x, int n_tok,
                                 int64_t nc, float* y, int64_t ldy) {
  switch (n_rows) {
    case 1:
      return pair_tile_r<TY, 1>(w, x, n_tok, nc, y, ldy);
    case 2:
      return pair_tile_r<TY, 2>(w, x, n_tok, nc, y, ldy);
    case 3:
      return pair_tile_r<TY, 3>(w, x, n_tok, nc, y, ldy);
    default:
      return pair_tile_r<TY, 4>(w, x, n_tok, nc, y, ldy);
  }
}

}  // namespace

void gemm_q8_tile_avx512vnni(GgmlType t, const GemmQ8WChunk* w, int n_rows, const GemmQ8XChunk* x,
                             int n_tok, int64_t nc, float* y, int64_t ldy) {
  assert(n_rows >= 1 && n_rows <= 4 && n_tok >= 1 && n_tok <= 4);
  switch (t) {
    case GgmlType::Q4_0:
      return tile_any<GgmlType::Q4_0>(w, n_rows, x, n_tok, nc, y, ldy);
    case GgmlType::Q8_0:
      return tile_any<GgmlType::Q8_0>(w, n_rows, x, n_tok, nc, y, ldy);
    case GgmlType::Q4_K:
      return tile_any<GgmlType::Q4_K>(w, n_rows, x, n_tok, nc, y, ldy);
    case GgmlType::Q5_K:
      return tile_any<GgmlType::Q5_K>(w, n_rows, x, n_tok, nc, y, ldy);
    case GgmlType::Q6_K:
      return tile_any<GgmlType::Q6_K>(w, n_rows, x, n_tok, nc, y, ldy);
    default:
      assert(false && "gemm_q8_tile_avx512vnni: unsupported type");
  }
}

void gemm_q8_tile_avx512vnni_pairs(GgmlType t, const GemmQ8WChunk* w, int n_rows,
                                   const GemmQ8XChunk* x, int n_tok, int64_t nc, float* y,
                                   int64_t ldy) {
  assert(n_rows >= 1 && n_rows <= 4 && n_tok >= 1 && n_tok <= 4);
  // x points at an even token of a pairs panel: the same bytes, read as pairs.
  const GemmQ8XPair* xp = reinterpret_cast<const GemmQ8XPair*>(x);
  switch (t) {
    case GgmlType::Q4_0:
      return pair_tile_any<GgmlType::Q4_0>(w, n_rows, xp, n_tok, nc, y, ldy);
    case GgmlType::Q8_0:
      return pair_tile_any<GgmlType::Q8_0>(w, n_rows, xp, n_tok, nc, y, ldy);
    case GgmlType::Q4_K:
      return pair_tile_any<GgmlType::Q4_K>(w, n_rows, xp, n_tok, nc, y, ldy);
    case GgmlType::Q5_K:
      return pair_tile_any<GgmlType::Q5_K>(w, n_rows, xp, n_tok, nc, y, ldy);
    case GgmlType::Q6_K:
      return pair_tile_any<GgmlType::Q6_K>(w, n_rows, xp, n_tok, nc, y, ldy);
    default:
      assert(false && "gemm_q8_tile_avx512vnni_pairs: unsupported type");
  }
}

}  // namespace ls

#else  // not x86: never called (gemm_q8_kernel does not pick it), but must link.

namespace ls {
void gemm_q8_tile_avx512vnni(GgmlType t, const GemmQ8WChunk* w, int n_rows, const GemmQ8XChunk* x,
                             int n_tok, int64_t nc, float* y, int64_t ldy) {
  gemm_q8_tile_scalar(t, w, n_rows, x, n_tok, nc, y, ldy);
}
void gemm_q8_tile_avx512vnni_pairs(GgmlType t, const GemmQ8WChunk* w, int n_rows,
                                   const GemmQ8XChunk* x, int n_tok, int64_t nc, float* y,
                                   int64_t ldy) {
  gemm_q8_tile_scalar(t, w, n_rows, x, n_tok, nc, y, ldy);
}
}  // namespace ls

#endif
