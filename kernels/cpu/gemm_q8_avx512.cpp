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
// defines: gemm_q8_tile_avx512vnni (kernels/cpu/gemm_q8.h)
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
            acc[r][t] =
                _mm256_add_ps(acc[r][t], _mm256_mul_ps(f, _mm256_cvtepi32_ps(fold(A[r][t]))));
          }
        }
      }
      LS_UNROLL
      for (int r = 0; r < R; ++r) {
        const __m256 m = _mm256_load_ps(wc[r]->m), mh = _mm256_load_ps(wc[r]->m_hi);
        LS_UNROLL
        for (int t = 0; t < T; ++t) {
          __m256 a = _mm256_sub_ps(acc[r][t], _mm256_mul_ps(m, _mm256_load_ps(xc[t]->ds_lo)));
          acc[r][t] = _mm256_sub_ps(a, _mm256_mul_ps(mh, _mm256_load_ps(xc[t]->ds_hi)));
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
          __m256 a = _mm256_add_ps(acc[r][t], _mm256_mul_ps(f, _mm256_cvtepi32_ps(I)));
          if constexpr (!kQ8) a = _mm256_sub_ps(a, _mm256_mul_ps(m, _mm256_load_ps(xc[t]->ds)));
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

}  // namespace ls

#else  // not x86: never called (gemm_q8_kernel does not pick it), but must link.

namespace ls {
void gemm_q8_tile_avx512vnni(GgmlType t, const GemmQ8WChunk* w, int n_rows, const GemmQ8XChunk* x,
                             int n_tok, int64_t nc, float* y, int64_t ldy) {
  gemm_q8_tile_scalar(t, w, n_rows, x, n_tok, nc, y, ldy);
}
}  // namespace ls

#endif
