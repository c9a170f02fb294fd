// AVX-512 VNNI GEMM tile over token pairs (kernels/cpu/gemm_q8.h): R = 4 rows
// × T = 4 tokens, the lane form of kernels/cpu/q8_lanes.h, the same bits as
// gemm_q8_avx512.cpp's tile. An experiment (GemmQ8Tuning::pairs,
// LS_GEMM_PAIRS=1) until it is measured on an AVX-512 machine.
//
// Why: the tile of gemm_q8_avx512.cpp puts two slices of one token in a zmm,
// so each (row, token) sum comes out in two halves that must be folded
// (an extract and an add) before the lane form's float step, which then runs
// on 8 lanes: 8 vector operations per (row, token) and chunk against the 16
// vpdpbusd of the products (session 8's AMX record puts the GEMM's loss at
// 8-32 tokens in that float step). Here a zmm holds one slice of two tokens
// (token 2p in lanes 0-7, token 2p + 1 in lanes 8-15) and the row's slice is
// broadcast to both halves, so vpdpbusd leaves each pair's exact sums I_j in
// whole lanes: no fold, and the float step runs on 16 lanes, two tokens an
// operation (6 operations per row and pair). The vpdpbusd count is the same;
// the x pairs cost an insert each per slice, shared by the 4 rows.
//
// Same bits: per lane, the operations of the lane form in its order (a
// multiply then an add, contraction off), I_j the same exact integer; the
// final sum of each token's 8 lanes by q8_lanes_sum's tree.
// defines: gemm_q8_tile_avx512vnni_pairs (kernels/cpu/gemm_q8.h)
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

#define LS_VNNI512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma")))

namespace ls {
namespace {

// q8_lanes_sum's tree on one token's 8 lanes.
LS_VNNI512 inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Two tokens' 8 floats (or int32s) side by side: a in lanes 0-7, b in 8-15.
LS_VNNI512 inline __m512 pair_ps(const float* a, const float* b) {
  return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_load_ps(a)), _mm256_load_ps(b), 1);
}
LS_VNNI512 inline __m512i pair_si(const void* a, const void* b) {
  return _mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_load_si256(reinterpret_cast<const __m256i*>(a))),
      _mm256_load_si256(reinterpret_cast<const __m256i*>(b)), 1);
}
// One row's 8 floats in both halves.
LS_VNNI512 inline __m512 both_ps(const float* a) {
  return _mm512_broadcast_f32x8(_mm256_load_ps(a));
}

// Slices v0 .. v1 - 1 of the chunk into A (int32, from zero): A[r][p] lane j
// (j + 8) is block j's sum of row r with token 2p (2p + 1).
template <bool kQ8, int R, int NP>
LS_VNNI512 inline void products(const GemmQ8WChunk* const* wc, const GemmQ8XChunk* const* xc,
                                int v0, int v1, __m512i (&A)[R][NP]) {
  LS_UNROLL
  for (int r = 0; r < R; ++r) LS_UNROLL
  for (int p = 0; p < NP; ++p) A[r][p] = _mm512_setzero_si512();
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 1
  for (int v = v0; v < v1; ++v) {
    __m512i X[NP];
    LS_UNROLL
    for (int p = 0; p < NP; ++p) X[p] = pair_si(xc[2 * p]->q + 32 * v, xc[2 * p + 1]->q + 32 * v);
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

// acc + (s · d) · float(I), the lane form's step for one group.
LS_VNNI512 inline __m512 step(__m512 acc, __m512 s, __m512 d, __m512i I) {
  return _mm512_add_ps(acc, _mm512_mul_ps(_mm512_mul_ps(s, d), _mm512_cvtepi32_ps(I)));
}

// xc: 2 · NP token chunks (a pair's second token may repeat its first: the
// tile computes it and does not store it).
template <GgmlType TY, int R, int NP>
LS_VNNI512 void tile(const GemmQ8WChunk* w, const GemmQ8XChunk* x, int n_tok, int64_t nc, float* y,
                     int64_t ldy) {
  constexpr bool kQ6 = TY == GgmlType::Q6_K, kQ8 = TY == GgmlType::Q8_0;
  __m512 acc[R][NP];
  LS_UNROLL
  for (int r = 0; r < R; ++r) LS_UNROLL
  for (int p = 0; p < NP; ++p) acc[r][p] = _mm512_setzero_ps();
  for (int64_t c = 0; c < nc; ++c) {
    const GemmQ8WChunk* wc[R];
    const GemmQ8XChunk* xc[2 * NP];
    LS_UNROLL
    for (int r = 0; r < R; ++r) wc[r] = w + r * nc + c;
    LS_UNROLL
    for (int t = 0; t < 2 * NP; ++t) xc[t] = x + (t < n_tok ? t : n_tok - 1) * nc + c;
    __m512 d[NP];
    LS_UNROLL
    for (int p = 0; p < NP; ++p) d[p] = pair_ps(xc[2 * p]->d, xc[2 * p + 1]->d);
    __m512i A[R][NP];
    if constexpr (kQ6) {
      // lo groups (slices 0-3), then hi groups (4-7), each added as it is done.
      LS_UNROLL
      for (int h = 0; h < 2; ++h) {
        products<false, R, NP>(wc, xc, 4 * h, 4 * h + 4, A);
        LS_UNROLL
        for (int r = 0; r < R; ++r) {
          const __m512 s = both_ps(h ? wc[r]->s_hi : wc[r]->s);
          LS_UNROLL
          for (int p = 0; p < NP; ++p) acc[r][p] = step(acc[r][p], s, d[p], A[r][p]);
        }
      }
      LS_UNROLL
      for (int p = 0; p < NP; ++p) {
        const __m512 dl = pair_ps(xc[2 * p]->ds_lo, xc[2 * p + 1]->ds_lo);
        const __m512 dh = pair_ps(xc[2 * p]->ds_hi, xc[2 * p + 1]->ds_hi);
        LS_UNROLL
        for (int r = 0; r < R; ++r) {
          const __m512 a = _mm512_sub_ps(acc[r][p], _mm512_mul_ps(both_ps(wc[r]->m), dl));
          acc[r][p] = _mm512_sub_ps(a, _mm512_mul_ps(both_ps(wc[r]->m_hi), dh));
        }
      }
    } else {
      products<kQ8, R, NP>(wc, xc, 0, 8, A);
      LS_UNROLL
      for (int p = 0; p < NP; ++p) {
        __m512i sum128{};
        if constexpr (kQ8)  // (q + 128) · x summed: take 128 · sum(x) back off
          sum128 = _mm512_slli_epi32(pair_si(xc[2 * p]->sum, xc[2 * p + 1]->sum), 7);
        __m512 ds{};
        if constexpr (!kQ8) ds = pair_ps(xc[2 * p]->ds, xc[2 * p + 1]->ds);
        LS_UNROLL
        for (int r = 0; r < R; ++r) {
          __m512i I = A[r][p];
          if constexpr (kQ8) I = _mm512_sub_epi32(I, sum128);
          __m512 a = step(acc[r][p], both_ps(wc[r]->s), d[p], I);
          if constexpr (!kQ8) a = _mm512_sub_ps(a, _mm512_mul_ps(both_ps(wc[r]->m), ds));
          acc[r][p] = a;
        }
      }
    }
  }
  LS_UNROLL
  for (int r = 0; r < R; ++r) LS_UNROLL
  for (int p = 0; p < NP; ++p) {
    y[(2 * p) * ldy + r] = hsum8(_mm512_castps512_ps256(acc[r][p]));
    if (2 * p + 1 < n_tok) y[(2 * p + 1) * ldy + r] = hsum8(_mm512_extractf32x8_ps(acc[r][p], 1));
  }
}

template <GgmlType TY, int R>
LS_VNNI512 void tile_r(const GemmQ8WChunk* w, const GemmQ8XChunk* x, int n_tok, int64_t nc,
                       float* y, int64_t ldy) {
  if (n_tok <= 2) return tile<TY, R, 1>(w, x, n_tok, nc, y, ldy);
  return tile<TY, R, 2>(w, x, n_tok, nc, y, ldy);
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

}  // namespace

void gemm_q8_tile_avx512vnni_pairs(GgmlType t, const GemmQ8WChunk* w, int n_rows,
                                   const GemmQ8XChunk* x, int n_tok, int64_t nc, float* y,
                                   int64_t ldy) {
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
      assert(false && "gemm_q8_tile_avx512vnni_pairs: unsupported type");
  }
}

}  // namespace ls

#else  // not x86: never called (gemm_q8_parts does not pick it), but must link.

namespace ls {
void gemm_q8_tile_avx512vnni_pairs(GgmlType t, const GemmQ8WChunk* w, int n_rows,
                                   const GemmQ8XChunk* x, int n_tok, int64_t nc, float* y,
                                   int64_t ldy) {
  gemm_q8_tile_scalar(t, w, n_rows, x, n_tok, nc, y, ldy);
}
}  // namespace ls

#endif
