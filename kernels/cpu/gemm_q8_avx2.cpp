// AVX2 GEMM tile (kernels/cpu/gemm_q8.h): R = 2 rows × T = 4 tokens over
// the interleaved layouts, the lane form of kernels/cpu/q8_lanes.h.
//
// Per chunk of 256 values, per slice v (32 bytes: 4 values of each of the 8
// blocks), R weight vectors and T token vectors are loaded and R · T maddubs
// (u8 × s8, pairs summed into int16) go into R · T int16 accumulators. The
// int16 sums are exact while they stay below 2^15: a pair is at most 2 · 15 ·
// 127 for Q4_0 / Q4_K (8 slices fit: 30480), 2 · 31 · 127 for Q5_K (4 fit),
// 2 · 63 · 127 for Q6_K (2 fit); Q8_0 (|w| up to 128, x's sign flipped where
// w < 0) takes one. Then madd by ones widens them into int32 lane j = block
// j's partial sum, so no horizontal step is needed (the interleaving did it).
// Per chunk and (row, token), the lane form's float step on 8 lanes:
//   acc = fma(s * d_x, float(I), acc);   acc = fma(-m, ds, acc)
// (Q6_K: its lo and hi groups in turn). At the end, the horizontal sum with
// q8_lanes_sum's tree.
//
// Reuse: each weight vector feeds T maddubs, each token vector R; the tile
// (2 × 256 bytes per chunk) stays in L1 across the token tiles of a block.
// Contraction off: a multiply then an add, as the lane form says.
// defines: gemm_q8_tile_avx2, gemm_q8_tile_avx2_vnni, cpu_has_avx_vnni (kernels/cpu/gemm_q8.h)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <cassert>

#include "kernels/cpu/gemm_q8.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>

// Loops over rows, tokens and slices have fixed trip counts; unrolled, their
// accumulators stay in registers.
#define LS_UNROLL _Pragma("GCC unroll 16")

#define LS_AVX2 __attribute__((target("avx2,fma,f16c")))
// The same tile with AVX-VNNI's 256-bit vpdpbusd (Intel's client cores
// from Alder Lake, AMD's from Zen 4): the products go straight into int32,
// one instruction where maddubs, add and (per group) madd were, with no
// int16 group to flush. The lane form's I is the same exact integer, so the
// same bits.
#define LS_AVX2_VNNI __attribute__((target("avx2,fma,f16c,avxvnni")))

namespace ls {
namespace {

LS_AVX2 inline __m256i load32(const void* p) {
  return _mm256_load_si256(static_cast<const __m256i*>(p));
}
LS_AVX2 inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Slices summed in int16 before widening (see the top).
template <GgmlType T>
constexpr int kGroup = T == GgmlType::Q5_K   ? 4
                       : T == GgmlType::Q6_K ? 2
                       : T == GgmlType::Q8_0 ? 1
                                             : 8;

// Slices [v0, v1) of a chunk into the int16 sums P (from zero). A real loop
// over the slices: fully unrolled, GCC hoists every load of the chunk ahead
// and spills them (the tile has 8 accumulators, 2 weight and 1 token vector
// live in 16 registers).
template <bool kQ8, int R, int T>
LS_AVX2 inline void slices(const uint8_t* const* w, const int8_t* const* x, int v0, int v1,
                           __m256i (&P)[R][T]) {
  LS_UNROLL
  for (int r = 0; r < R; ++r) LS_UNROLL
  for (int t = 0; t < T; ++t) P[r][t] = _mm256_setzero_si256();
#pragma GCC unroll 1
  for (int v = v0; v < v1; ++v) {
    __m256i W[R], S[R];
    LS_UNROLL
    for (int r = 0; r < R; ++r) {
      W[r] = load32(w[r] + 32 * v);
      if constexpr (kQ8) {
        S[r] = W[r];
        W[r] = _mm256_abs_epi8(W[r]);
      }
    }
    LS_UNROLL
    for (int t = 0; t < T; ++t) {
      const __m256i X = load32(x[t] + 32 * v);
      LS_UNROLL
      for (int r = 0; r < R; ++r)
        P[r][t] = _mm256_add_epi16(_mm256_maddubs_epi16(W[r], kQ8 ? _mm256_sign_epi8(X, S[r]) : X),
                                   P[r][t]);
    }
  }
}

// Chunk c of the tile's rows and tokens, for both tiles.
template <int R, int T>
struct ChunkAt {
  const GemmQ8WChunk* wc[R];
  const GemmQ8XChunk* xc[T];
  const uint8_t* wu[R];
  const int8_t* xq[T];
  ChunkAt(const GemmQ8WChunk* w, const GemmQ8XChunk* x, int64_t nc, int64_t c) {
    LS_UNROLL
    for (int r = 0; r < R; ++r) wc[r] = w + r * nc + c, wu[r] = wc[r]->u;
    LS_UNROLL
    for (int t = 0; t < T; ++t) xc[t] = x + t * nc + c, xq[t] = xc[t]->q;
  }
};

// Slices [v0, v1) into int32 sums with vpdpbusd (AVX-VNNI), from zero.
// Q8_0's signed weights as in slices: |w| times x with w's sign.
template <bool kQ8, int R, int T>
LS_AVX2_VNNI inline void slices_vnni(const uint8_t* const* w, const int8_t* const* x, int v0,
                                     int v1, __m256i (&P)[R][T]) {
  LS_UNROLL
  for (int r = 0; r < R; ++r) LS_UNROLL
  for (int t = 0; t < T; ++t) P[r][t] = _mm256_setzero_si256();
#pragma GCC unroll 1
  for (int v = v0; v < v1; ++v) {
    __m256i W[R], S[R];
    LS_UNROLL
    for (int r = 0; r < R; ++r) {
      W[r] = _mm256_load_si256(reinterpret_cast<const __m256i*>(w[r] + 32 * v));
      if constexpr (kQ8) {
        S[r] = W[r];
        W[r] = _mm256_abs_epi8(W[r]);
      }
    }
    LS_UNROLL
    for (int t = 0; t < T; ++t) {
      const __m256i X = _mm256_load_si256(reinterpret_cast<const __m256i*>(x[t] + 32 * v));
      LS_UNROLL
      for (int r = 0; r < R; ++r)
        P[r][t] = _mm256_dpbusd_avx_epi32(P[r][t], W[r], kQ8 ? _mm256_sign_epi8(X, S[r]) : X);
    }
  }
}

// The float part of a chunk (the lane form's step on 8 lanes), for both tiles.
template <GgmlType TY, int R, int T>
LS_AVX2 inline void float_step(const GemmQ8WChunk* const* wc, const GemmQ8XChunk* const* xc,
                               const __m256i (&I)[R][T], const __m256i (&Ih)[R][T],
                               __m256 (&acc)[R][T]) {
  constexpr bool kQ6 = TY == GgmlType::Q6_K, kQ8 = TY == GgmlType::Q8_0;
  LS_UNROLL
  for (int r = 0; r < R; ++r) {
    const __m256 s = _mm256_load_ps(wc[r]->s), m = _mm256_load_ps(wc[r]->m);
    LS_UNROLL
    for (int t = 0; t < T; ++t) {
      const __m256 dx = _mm256_load_ps(xc[t]->d);
      __m256 a = acc[r][t];
      a = _mm256_fmadd_ps(_mm256_mul_ps(s, dx), _mm256_cvtepi32_ps(I[r][t]), a);
      if constexpr (kQ6) {
        const __m256 sh = _mm256_load_ps(wc[r]->s_hi), mh = _mm256_load_ps(wc[r]->m_hi);
        a = _mm256_fmadd_ps(_mm256_mul_ps(sh, dx), _mm256_cvtepi32_ps(Ih[r][t]), a);
        a = _mm256_fnmadd_ps(m, _mm256_load_ps(xc[t]->ds_lo), a);
        a = _mm256_fnmadd_ps(mh, _mm256_load_ps(xc[t]->ds_hi), a);
      } else if constexpr (!kQ8) {
        a = _mm256_fnmadd_ps(m, _mm256_load_ps(xc[t]->ds), a);
      }
      acc[r][t] = a;
    }
  }
}

template <GgmlType TY, int R, int T>
LS_AVX2_VNNI void tile_vnni(const GemmQ8WChunk* w, const GemmQ8XChunk* x, int64_t nc, float* y,
                            int64_t ldy) {
  constexpr bool kQ6 = TY == GgmlType::Q6_K, kQ8 = TY == GgmlType::Q8_0;
  __m256 acc[R][T];
  LS_UNROLL
  for (int r = 0; r < R; ++r) LS_UNROLL
  for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  for (int64_t c = 0; c < nc; ++c) {
    const ChunkAt<R, T> at(w, x, nc, c);
    const GemmQ8WChunk* const* wc = at.wc;
    const GemmQ8XChunk* const* xc = at.xc;
    const uint8_t* const* wu = at.wu;
    const int8_t* const* xq = at.xq;
    __m256i I[R][T], Ih[R][T] = {};
    if constexpr (kQ6) {
      slices_vnni<false, R, T>(wu, xq, 0, 4, I);
      slices_vnni<false, R, T>(wu, xq, 4, 8, Ih);
    } else {
      slices_vnni<kQ8, R, T>(wu, xq, 0, 8, I);
    }
    float_step<TY, R, T>(wc, xc, I, Ih, acc);
  }
  LS_UNROLL
  for (int r = 0; r < R; ++r) LS_UNROLL
  for (int t = 0; t < T; ++t) y[t * ldy + r] = hsum(acc[r][t]);
}

template <GgmlType TY, int R, int T>
LS_AVX2 void tile(const GemmQ8WChunk* w, const GemmQ8XChunk* x, int64_t nc, float* y, int64_t ldy) {
  constexpr int G = kGroup<TY>;
  constexpr bool kQ6 = TY == GgmlType::Q6_K, kQ8 = TY == GgmlType::Q8_0;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[R][T];
  LS_UNROLL
  for (int r = 0; r < R; ++r) LS_UNROLL
  for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  for (int64_t c = 0; c < nc; ++c) {
    const ChunkAt<R, T> at(w, x, nc, c);
    const GemmQ8WChunk* const* wc = at.wc;
    const GemmQ8XChunk* const* xc = at.xc;
    const uint8_t* const* wu = at.wu;
    const int8_t* const* xq = at.xq;
    // Integer part: I (Q6_K: I of the lo groups, Ih of the hi ones).
    __m256i I[R][T] = {}, Ih[R][T] = {};  // (set below; zero for the compiler)
    for (int v0 = 0; v0 < 8; v0 += G) {
      __m256i P[R][T];
      slices<kQ8, R, T>(wu, xq, v0, v0 + G, P);
      LS_UNROLL
      for (int r = 0; r < R; ++r) LS_UNROLL
      for (int t = 0; t < T; ++t) {
        const __m256i m = _mm256_madd_epi16(P[r][t], ones);
        if (kQ6 && v0 >= 4)
          Ih[r][t] = v0 == 4 ? m : _mm256_add_epi32(Ih[r][t], m);
        else
          I[r][t] = v0 == 0 ? m : _mm256_add_epi32(I[r][t], m);
      }
    }
    float_step<TY, R, T>(wc, xc, I, Ih, acc);
  }
  LS_UNROLL
  for (int r = 0; r < R; ++r) LS_UNROLL
  for (int t = 0; t < T; ++t) y[t * ldy + r] = hsum(acc[r][t]);
}

using TileFn = void (*)(const GemmQ8WChunk*, const GemmQ8XChunk*, int64_t, float*, int64_t);
// (rows, tokens) -> instance; n_rows in 1..2, n_tok in 1..4.
template <GgmlType TY, bool kVnni>
constexpr TileFn kShapes[8] = {
    kVnni ? tile_vnni<TY, 1, 1> : tile<TY, 1, 1>, kVnni ? tile_vnni<TY, 1, 2> : tile<TY, 1, 2>,
    kVnni ? tile_vnni<TY, 1, 3> : tile<TY, 1, 3>, kVnni ? tile_vnni<TY, 1, 4> : tile<TY, 1, 4>,
    kVnni ? tile_vnni<TY, 2, 1> : tile<TY, 2, 1>, kVnni ? tile_vnni<TY, 2, 2> : tile<TY, 2, 2>,
    kVnni ? tile_vnni<TY, 2, 3> : tile<TY, 2, 3>, kVnni ? tile_vnni<TY, 2, 4> : tile<TY, 2, 4>};

template <bool kVnni>
void tile_type(GgmlType t, const GemmQ8WChunk* w, int n_rows, const GemmQ8XChunk* x, int n_tok,
               int64_t nc, float* y, int64_t ldy) {
  assert(n_rows >= 1 && n_rows <= 2 && n_tok >= 1 && n_tok <= 4);
  const int shape = (n_rows - 1) * 4 + (n_tok - 1);
  switch (t) {
    case GgmlType::Q4_0:
      return kShapes<GgmlType::Q4_0, kVnni>[shape](w, x, nc, y, ldy);
    case GgmlType::Q8_0:
      return kShapes<GgmlType::Q8_0, kVnni>[shape](w, x, nc, y, ldy);
    case GgmlType::Q4_K:
      return kShapes<GgmlType::Q4_K, kVnni>[shape](w, x, nc, y, ldy);
    case GgmlType::Q5_K:
      return kShapes<GgmlType::Q5_K, kVnni>[shape](w, x, nc, y, ldy);
    case GgmlType::Q6_K:
      return kShapes<GgmlType::Q6_K, kVnni>[shape](w, x, nc, y, ldy);
    default:
      assert(false && "gemm_q8_tile_avx2: unsupported type");
  }
}

}  // namespace

void gemm_q8_tile_avx2(GgmlType t, const GemmQ8WChunk* w, int n_rows, const GemmQ8XChunk* x,
                       int n_tok, int64_t nc, float* y, int64_t ldy) {
  tile_type<false>(t, w, n_rows, x, n_tok, nc, y, ldy);
}

void gemm_q8_tile_avx2_vnni(GgmlType t, const GemmQ8WChunk* w, int n_rows, const GemmQ8XChunk* x,
                            int n_tok, int64_t nc, float* y, int64_t ldy) {
  tile_type<true>(t, w, n_rows, x, n_tok, nc, y, ldy);
}

bool cpu_has_avx_vnni() {
  // CPUID leaf 7, subleaf 1, EAX bit 4: AVX-VNNI. Read directly because
  // clang 14 (the sanitizer build's compiler) has no "avxvnni" in
  // __builtin_cpu_supports; the YMM state is the AVX2 check's.
  static const bool has = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return cpu_isa_supported(CpuIsa::Avx2) && __get_cpuid_count(7, 1, &a, &b, &c, &d) &&
           (a & (1u << 4)) != 0;
  }();
  return has;
}

}  // namespace ls

#else  // not x86: never called (gemm_q8_kernel does not pick it), but must link.

namespace ls {
void gemm_q8_tile_avx2(GgmlType t, const GemmQ8WChunk* w, int n_rows, const GemmQ8XChunk* x,
                       int n_tok, int64_t nc, float* y, int64_t ldy) {
  gemm_q8_tile_scalar(t, w, n_rows, x, n_tok, nc, y, ldy);
}
void gemm_q8_tile_avx2_vnni(GgmlType t, const GemmQ8WChunk* w, int n_rows, const GemmQ8XChunk* x,
                            int n_tok, int64_t nc, float* y, int64_t ldy) {
  gemm_q8_tile_scalar(t, w, n_rows, x, n_tok, nc, y, ldy);
}
bool cpu_has_avx_vnni() {
  return false;
}
}  // namespace ls

#endif
