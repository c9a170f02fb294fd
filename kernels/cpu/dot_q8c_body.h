// The chunk-form dot (kernels/cpu/dot_q8c.h) as one body over a vector
// policy V, for dot_q8c_avx2.cpp (V: 256-bit ymm) and dot_q8c_avx512.cpp
// (V: 512-bit zmm, VNNI) to instantiate: each includes it after defining
// LS_Q8C_TARGET (its target attribute) and V, so the AVX-512 variant, which
// this repo's CI machine cannot run, is the AVX2 variant's algorithm with
// only V's one-line primitives changed. Everything here has internal
// linkage, so the two copies never mix.
//
// Per chunk c of 256 values (one super-block), decoded ONCE for all n_tok
// tokens. The quants are unpacked with AVX2 in both variants (Q8cChunk::u:
// ymm k holds values 32k .. 32k + 31, natural order, as x.qc), then joined
// into the 256 / V::W registers u_v of V::I (V::join: ymm parts in order):
//   u_v   Q4_K / Q5_K: u (0..31, unsigned); Q6_K: u' = u - 32 (signed)
//   s_v   int16 words, each the scale of the value pair under it: the 8
//         (Q4_K / Q5_K) or 16 (Q6_K) scales as words, broadcast to every
//         128-bit lane and spread by one vpshufb per register
//   a0    Q4_K / Q5_K: 0;  Q6_K: -128 * sum_i sc(i) u'_i (int32 partials)
// Then per token t (q_v: x.qc of the chunk, the same W values as u_v):
//   Q4_K, Q5_K:  acc = sum_v madd(maddubs(u_v, q_v), s_v)
//   Q6_K:        acc = a0 + sum_v madd(maddubs(q_v ^ 0x80, u'_v), s_v)
// (q ^ 0x80 is q + 128 as an unsigned byte, so maddubs' unsigned operand
// holds x and its signed one u': sum sc u' (q + 128) - 128 sum sc u' = A.
// No int16 saturation: a maddubs pair is at most 2 * 31 * 127 (Q5_K) or
// 2 * 255 * 32 (Q6_K), a0's pairs 2 * 128 * 32, all < 32767; int32 sums
// wrap modulo 2^32 and A, B fit, so the total is exact.)
// Each token's acc folds to a ymm (V::fold), then (Q4_K / Q5_K) to 4 lanes
// beside the 4 lanes of madd(bsc_t, mins) (B's partials), or (Q6_K) stays
// as is; a vphaddd tree over 4 tokens at a time leaves token t's A and B
// (Q6_K: A's two parts) in lane t of two ymm, so the float step runs for
// all tokens in one ymm, lane t being token t's chain:
//   a = a + float(A) * (d * dx_c);   a = a - float(B) * (dmin * dx_c)
// each a separate IEEE operation (the including file turns contraction
// off): the roundings and order of dot_q8c_scalar.
// One token alone (decode's width) keeps 8 chunks' (A, B) and runs the
// tree and the products once per 8 chunks, chunk k in lane k, then its
// chain of additions in scalar code, in chunk order: the same operations.
// Per chunk and token (Q4_K): 8 (AVX2) or 4 (AVX-512) x (load-maddubs +
// madd-add), ~10 for the fold and B, and a share of the tree and the float
// step (~20 per chunk at 1 token, ~4 per token at 8); per chunk ~45 for the
// decode (scales, quants, d / dmin) and the prefetch.
//
// V provides: I (the register type), W (bytes per register), join(const
// __m256i* parts) (W / 32 ymm, low part first), bcast128(xmm) (in every
// 128-bit lane), zero(), load(const int8_t*), xor_(a, b), sub32(a, b)
// (int32 lanes), set1_8(c), shuffle8(a, idx) (vpshufb, within 128-bit
// lanes), maddubs(u8, s8) (vpmaddubsw), madd_acc(acc, a, b) = acc +
// vpmaddwd(a, b), fold(I) (a ymm whose int32 lanes have the same total).
// defines (internal): dot_q8c_body<V>
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cassert>
#include <cstdint>

#include "kernels/cpu/dot_q8c.h"
#include "kernels/cpu/k4_scales.h"
#include "kernels/cpu/q45_k_avx2.h"
#include "kernels/cpu/q6_k_avx2.h"
#include "kernels/cpu/row_prefetcher.h"
#include "kernels/quant_blocks.h"

#ifndef LS_Q8C_TARGET
#error "define LS_Q8C_TARGET before including dot_q8c_body.h"
#endif

// Loops over tokens and vectors have fixed trip counts; unrolled, the
// accumulators and weights stay in registers.
#define LS_Q8C_UNROLL _Pragma("GCC unroll 16")

namespace ls {
namespace {

// One super-block decoded (see the top): ymm k is values 32k .. 32k + 31.
struct Q8cChunk {
  __m256i u[8];
  __m128i sw[2];  // the scales as int16: Q4_K / Q5_K 8 (per 32) in sw[0];
                  // Q6_K 16 (per 16), groups 0-7 in sw[0], 8-15 in sw[1]
  __m128i mn;
  float d, dmin;
};

LS_Q8C_TARGET inline __m128i q8c_load16(const void* p) {
  return _mm_loadu_si128(static_cast<const __m128i*>(p));
}
LS_Q8C_TARGET inline __m256i q8c_load32(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}
// vpshufb patterns for register v of a chunk (values W v .. W v + W - 1,
// W bytes a register), applied to the 8 scale words of Q8cChunk::sw
// broadcast to every 128-bit lane: each word of the lane holding values
// i .. i + 15 takes the word of i's scale, word i / 32 (Q4_K / Q5_K) or
// (i / 16) % 8 (Q6_K, from sw[i / 128]: one half per register, as W <= 64).
// In memory: vpshufb operands, not rebuilt per chunk.
template <int W>
struct Q8cPatterns {
  alignas(64) int8_t k45[256 / W][W];
  alignas(64) int8_t q6[256 / W][W];
  constexpr Q8cPatterns() : k45(), q6() {
    for (int v = 0; v < 256 / W; ++v)
      for (int b = 0; b < W; ++b) {
        const int i = W * v + b;
        k45[v][b] = static_cast<int8_t>(2 * (i / 32) + b % 2);
        q6[v][b] = static_cast<int8_t>(2 * (i / 16 % 8) + b % 2);
      }
  }
};
template <int W>
constexpr Q8cPatterns<W> kQ8cPatterns;

// Q4_K / Q5_K. The 8 scales and mins as words; the quants by q45_k_values
// (block 2c: low nibbles of qs[32c ..], 2c + 1: high; Q5_K's 5th bit).
template <bool kFive, class Block>
LS_Q8C_TARGET inline void q8c_decode_k45(const uint8_t* p, Q8cChunk& ch) {
  const Block* b = reinterpret_cast<const Block*>(p);
  uint64_t s8, m8;
  k4_scale_min_bytes(b->scales, &s8, &m8);
  ch.sw[0] = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(s8)));
  ch.sw[1] = ch.sw[0];
  ch.mn = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(m8)));
  __m256i h = _mm256_setzero_si256();
  if constexpr (kFive) h = q8c_load32(reinterpret_cast<const BlockQ5_K*>(p)->qh);
  LS_Q8C_UNROLL
  for (int c = 0; c < 4; ++c) q45_k_values<kFive>(b->qs, h, c, &ch.u[2 * c], &ch.u[2 * c + 1]);
  ch.d = _cvtsh_ss(b->d);
  ch.dmin = _cvtsh_ss(b->dmin);
}

// Q6_K: the values by q6_k_values, minus 32. The 16 signed scales as words.
LS_Q8C_TARGET inline void q8c_decode_q6_k(const uint8_t* p, Q8cChunk& ch) {
  const BlockQ6_K* b = reinterpret_cast<const BlockQ6_K*>(p);
  const __m128i sc = q8c_load16(b->scales);
  ch.sw[0] = _mm_cvtepi8_epi16(sc);
  ch.sw[1] = _mm_cvtepi8_epi16(_mm_srli_si128(sc, 8));
  const __m256i thirty_two = _mm256_set1_epi8(32);
  LS_Q8C_UNROLL
  for (int k = 0; k < 8; ++k) ch.u[k] = _mm256_sub_epi8(q6_k_values(*b, k), thirty_two);
  ch.mn = _mm_setzero_si128();
  ch.d = _cvtsh_ss(b->d);
  ch.dmin = 0;
}

template <GgmlType T>
LS_Q8C_TARGET inline void q8c_decode(const uint8_t* p, Q8cChunk& ch) {
  if constexpr (T == GgmlType::Q4_K)
    q8c_decode_k45<false, BlockQ4_K>(p, ch);
  else if constexpr (T == GgmlType::Q5_K)
    q8c_decode_k45<true, BlockQ5_K>(p, ch);
  else
    q8c_decode_q6_k(p, ch);
}

// What a chunk gives besides its registers: the mins as words (Q4_K /
// Q5_K), d and dmin.
struct Q8cChunkRest {
  __m128i mn;
  float d, dmin;
};

// A chunk into the registers of V: u (the quants, values W v .. W v + W - 1
// in register v; Q6_K: u - 32) and s (each word the scale of the value pair
// under it). A policy with its own decode (V::kOwnDecode: the AVX-512 one
// reads the block straight into zmm) gives the same registers; the rest
// decode 32 values at a time with AVX2 and join them.
template <class V, GgmlType T>
LS_Q8C_TARGET inline void q8c_decode_regs(const uint8_t* p, typename V::I* u, typename V::I* s,
                                          Q8cChunkRest& rest) {
  if constexpr (V::kOwnDecode) {
    V::template decode<T>(p, u, s, rest.mn, rest.d, rest.dmin);
  } else {
    using I = typename V::I;
    constexpr int kVec = 256 / V::W, kPart = V::W / 32;
    Q8cChunk ch;
    q8c_decode<T>(p, ch);
    const I sw[2] = {V::bcast128(ch.sw[0]), V::bcast128(ch.sw[1])};
    LS_Q8C_UNROLL
    for (int v = 0; v < kVec; ++v) {
      u[v] = V::join(ch.u + kPart * v);
      s[v] = T != GgmlType::Q6_K
                 ? V::shuffle8(sw[0], V::load(kQ8cPatterns<V::W>.k45[v]))
                 : V::shuffle8(sw[V::W * v / 128], V::load(kQ8cPatterns<V::W>.q6[v]));
    }
    rest.mn = ch.mn;
    rest.d = ch.d;
    rest.dmin = ch.dmin;
  }
}

// y[0..3] -> [low-half totals of y0..y3 | high-half totals of y0..y3].
LS_Q8C_TARGET inline __m256i q8c_tree4(const __m256i* y) {
  return _mm256_hadd_epi32(_mm256_hadd_epi32(y[0], y[1]), _mm256_hadd_epi32(y[2], y[3]));
}

// Lane t: p[t][c] (0 past NT).
template <int NT>
LS_Q8C_TARGET inline __m256 q8c_lanes(const float* const* p, int64_t c) {
  const auto at = [&](int t) { return t < NT ? p[t < NT ? t : 0][c] : 0.0f; };
  return _mm256_setr_ps(at(0), at(1), at(2), at(3), at(4), at(5), at(6), at(7));
}

template <class V, GgmlType T, int NT>
LS_Q8C_TARGET void q8c_dot(const uint8_t* row, const ActQ8View& x, int64_t t0, float* y,
                           int64_t ldy, const RowPrefetch& pf) {
  using I = typename V::I;
  constexpr int kVec = 256 / V::W;  // registers per chunk
  constexpr bool kMin = T != GgmlType::Q6_K;
  const int64_t n = x.n, n_chunks = n / 256;
  const uint64_t chunk_bytes = ggml_row_bytes(T, 256);
  const int8_t* q[NT];
  const int16_t* bs[NT];
  const float* dc[NT];
  LS_Q8C_UNROLL
  for (int t = 0; t < NT; ++t) {
    q[t] = x.qc_at(t0 + t);
    bs[t] = x.bsc_at(t0 + t);
    dc[t] = x.dc_at(t0 + t);
  }
  const I x80 = V::set1_8(static_cast<char>(0x80));
  __m256 acc = _mm256_setzero_ps();  // lane t: token t's a
  // One token: the (A, B) ymm of 8 chunks at a time, so the tree and the
  // products run once per 8 chunks with chunk k in lane k; the chain of
  // additions stays scalar, in chunk order (flush below).
  __m256i ring[8];
  alignas(32) float ring_d[8], ring_dm[8];
  float a1 = 0.0f;  // the one token's a
  auto flush = [&](int64_t c_end, int m) LS_Q8C_TARGET {
    for (int k = m; k < 8; ++k) {
      ring[k] = ring[0];
      ring_d[k] = ring_dm[k] = 0.0f;
    }
    const __m256i g0 = q8c_tree4(ring), g1 = q8c_tree4(ring + 4);
    const __m256i lo = _mm256_permute2x128_si256(g0, g1, 0x20);  // lane k: chunk k
    const __m256i hi = _mm256_permute2x128_si256(g0, g1, 0x31);
    alignas(32) float dxs[8] = {};
    std::copy(dc[0] + c_end - m, dc[0] + c_end, dxs);
    const __m256 dx = _mm256_load_ps(dxs);
    alignas(32) float pa[8], pb[8];
    if constexpr (kMin) {
      _mm256_store_ps(
          pa, _mm256_mul_ps(_mm256_cvtepi32_ps(lo), _mm256_mul_ps(_mm256_load_ps(ring_d), dx)));
      _mm256_store_ps(
          pb, _mm256_mul_ps(_mm256_cvtepi32_ps(hi), _mm256_mul_ps(_mm256_load_ps(ring_dm), dx)));
      for (int k = 0; k < m; ++k) {
        a1 = a1 + pa[k];
        a1 = a1 - pb[k];
      }
    } else {
      _mm256_store_ps(pa, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(lo, hi)),
                                        _mm256_mul_ps(_mm256_load_ps(ring_d), dx)));
      for (int k = 0; k < m; ++k) a1 = a1 + pa[k];
    }
  };
  RowPrefetcher pre(pf, n);
  for (int64_t c = 0; c < n_chunks; ++c) {
    pre.advance();
    I u[kVec], s[kVec], a[NT];
    Q8cChunkRest ch;
    q8c_decode_regs<V, T>(row + c * chunk_bytes, u, s, ch);
    // Accumulators start at 0, or for Q6_K at -128 sum sc u' (see the top).
    I a0 = V::zero();
    if constexpr (!kMin) {
      I corr = V::zero();
      LS_Q8C_UNROLL
      for (int v = 0; v < kVec; ++v) corr = V::madd_acc(corr, V::maddubs(x80, u[v]), s[v]);
      a0 = V::sub32(a0, corr);
    }
    LS_Q8C_UNROLL
    for (int t = 0; t < NT; ++t) a[t] = a0;
    LS_Q8C_UNROLL
    for (int v = 0; v < kVec; ++v) {
      LS_Q8C_UNROLL
      for (int t = 0; t < NT; ++t) {
        const I qv = V::load(q[t] + 256 * c + V::W * v);
        const I p = kMin ? V::maddubs(u[v], qv) : V::maddubs(V::xor_(qv, x80), u[v]);
        a[t] = V::madd_acc(a[t], p, s[v]);
      }
    }
    // Per token a ymm whose halves' totals are (A, B) (Q6_K: A's two parts).
    __m256i yv[8];
    LS_Q8C_UNROLL
    for (int t = 0; t < NT; ++t) {
      const __m256i f = V::fold(a[t]);
      if constexpr (kMin) {
        const __m128i a4 = _mm_add_epi32(_mm256_castsi256_si128(f), _mm256_extracti128_si256(f, 1));
        const __m128i b4 = _mm_madd_epi16(q8c_load16(bs[t] + 8 * c), ch.mn);
        yv[t] = _mm256_setr_m128i(a4, b4);
      } else {
        yv[t] = f;
      }
    }
    if constexpr (NT == 1) {
      const int k = static_cast<int>(c % 8);
      ring[k] = yv[0];
      ring_d[k] = ch.d;
      ring_dm[k] = ch.dmin;
      if (k == 7 || c + 1 == n_chunks) flush(c + 1, k + 1);
      continue;
    }
    LS_Q8C_UNROLL
    for (int t = NT; t < 8; ++t) yv[t] = yv[0];  // lanes past NT: never stored
    const __m256i g0 = q8c_tree4(yv);
    const __m256i g1 = NT > 4 ? q8c_tree4(yv + 4) : g0;
    const __m256i lo = _mm256_permute2x128_si256(g0, g1, 0x20);  // lane t: token t
    const __m256i hi = _mm256_permute2x128_si256(g0, g1, 0x31);
    const __m256 dx = q8c_lanes<NT>(dc, c);
    if constexpr (kMin) {
      acc = _mm256_add_ps(
          acc, _mm256_mul_ps(_mm256_cvtepi32_ps(lo), _mm256_mul_ps(_mm256_set1_ps(ch.d), dx)));
      acc = _mm256_sub_ps(
          acc, _mm256_mul_ps(_mm256_cvtepi32_ps(hi), _mm256_mul_ps(_mm256_set1_ps(ch.dmin), dx)));
    } else {
      acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(lo, hi)),
                                             _mm256_mul_ps(_mm256_set1_ps(ch.d), dx)));
    }
  }
  if constexpr (NT == 1) {
    y[0] = a1;
    return;
  }
  alignas(32) float out[8];
  _mm256_store_ps(out, acc);
  LS_Q8C_UNROLL
  for (int t = 0; t < NT; ++t) y[t * ldy] = out[t];
}

template <class V, int NT>
LS_Q8C_TARGET void q8c_dot_type(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0,
                                float* y, int64_t ldy, const RowPrefetch& pf) {
  switch (t) {
    case GgmlType::Q4_K:
      return q8c_dot<V, GgmlType::Q4_K, NT>(row, x, t0, y, ldy, pf);
    case GgmlType::Q5_K:
      return q8c_dot<V, GgmlType::Q5_K, NT>(row, x, t0, y, ldy, pf);
    case GgmlType::Q6_K:
      return q8c_dot<V, GgmlType::Q6_K, NT>(row, x, t0, y, ldy, pf);
    default:
      assert(false && "dot_q8c: not a K-quant");
  }
}

template <class V>
void dot_q8c_body(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                  float* y, int64_t ldy, const RowPrefetch& pf) {
  assert(n_tok >= 1 && n_tok <= kDotMaxTokens && x.qc && x.n % 256 == 0);
  switch (n_tok) {
    case 1:
      return q8c_dot_type<V, 1>(t, row, x, t0, y, ldy, pf);
    case 2:
      return q8c_dot_type<V, 2>(t, row, x, t0, y, ldy, pf);
    case 3:
      return q8c_dot_type<V, 3>(t, row, x, t0, y, ldy, pf);
    case 4:
      return q8c_dot_type<V, 4>(t, row, x, t0, y, ldy, pf);
    case 5:
      return q8c_dot_type<V, 5>(t, row, x, t0, y, ldy, pf);
    case 6:
      return q8c_dot_type<V, 6>(t, row, x, t0, y, ldy, pf);
    case 7:
      return q8c_dot_type<V, 7>(t, row, x, t0, y, ldy, pf);
    default:
      return q8c_dot_type<V, 8>(t, row, x, t0, y, ldy, pf);
  }
}

}  // namespace
}  // namespace ls
