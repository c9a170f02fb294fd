// The GEMM's operand layouts (kernels/cpu/gemm_q8.h) with AVX2: the same
// bytes and floats as the portable packers of gemm_q8_pack.cpp (a test
// compares them), for the AVX2 and AVX-512 tiles. A weight row is packed
// once per token block, so at a block of 16 tokens (an 8192-value row's
// panel in half of a 512 KiB L2) its packing is a visible share of the
// work; here a chunk is the unpacker's 32-byte vectors, an 8 × 8 transpose
// of 4-byte groups (unpack 32 / 64 bits, then swap 128-bit halves) and the
// scales split into lanes with two shuffles.
// defines: gemm_q8_pack_w_avx2, gemm_q8_pack_x_avx2 (kernels/cpu/gemm_q8.h)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <algorithm>
#include <cassert>
#include <type_traits>

#include "kernels/cpu/gemm_q8.h"
#include "kernels/cpu/k4_scales.h"
#include "kernels/cpu/pack_prefetch.h"
#include "kernels/cpu/unpack.h"
#include "kernels/quant_blocks.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include "kernels/cpu/q45_k_avx2.h"

#define LS_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace ls {
namespace {

// r[j] = block j (32 bytes: 4-byte groups v = 0..7) -> out slice v = group v
// of blocks 0..7: the interleaved order.
LS_AVX2 inline void transpose8x8_epi32(const __m256i* r, uint8_t* out) {
  const __m256i t0 = _mm256_unpacklo_epi32(r[0], r[1]), t1 = _mm256_unpackhi_epi32(r[0], r[1]);
  const __m256i t2 = _mm256_unpacklo_epi32(r[2], r[3]), t3 = _mm256_unpackhi_epi32(r[2], r[3]);
  const __m256i t4 = _mm256_unpacklo_epi32(r[4], r[5]), t5 = _mm256_unpackhi_epi32(r[4], r[5]);
  const __m256i t6 = _mm256_unpacklo_epi32(r[6], r[7]), t7 = _mm256_unpackhi_epi32(r[6], r[7]);
  // u: groups (v, v + 4) of blocks 0-3 (u0..u3) and 4-7 (u4..u7), v = 0..3.
  const __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
  const __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
  const __m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
  const __m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
  const __m256i lo[4] = {u0, u1, u2, u3}, hi[4] = {u4, u5, u6, u7};
  for (int v = 0; v < 4; ++v) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(out + 32 * v),
                       _mm256_permute2x128_si256(lo[v], hi[v], 0x20));
    _mm256_store_si256(reinterpret_cast<__m256i*>(out + 32 * (v + 4)),
                       _mm256_permute2x128_si256(lo[v], hi[v], 0x31));
  }
}

// 16 floats (one per 16 values) -> the even ones and the odd ones.
LS_AVX2 inline void evens_odds(const float* p, __m256* even, __m256* odd) {
  const __m256 a = _mm256_loadu_ps(p), b = _mm256_loadu_ps(p + 8);
  const int order = _MM_SHUFFLE(3, 1, 2, 0);
  *even = _mm256_castpd_ps(_mm256_permute4x64_pd(
      _mm256_castps_pd(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0))), order));
  *odd = _mm256_castpd_ps(_mm256_permute4x64_pd(
      _mm256_castps_pd(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1))), order));
}

// Q4_K / Q5_K straight from a block into a chunk: the block's 32-byte
// nibble vectors are the chunk's blocks 2c (low nibbles) and 2c + 1 (high),
// and its 8 scales and mins are the 8 lanes of s and m, so nothing goes
// through the unpacker's buffer and its per-16 pairs (the general path
// below spends about half its time there: 26.6 -> 17.2 ns a chunk on the
// GPU machine's Xeon, bench/results/2026-12-02-h200-gemm-pack.md). Same bytes and floats: d * sc
// and dmin * mn, one multiply each, as the unpacker's (tests/unit/kernels/test_cpu_gemm_q8.cpp
// compares the packers).
template <bool kFive>
LS_AVX2 inline void pack_q45_k_chunk(const uint8_t* block, GemmQ8WChunk& o, bool natural) {
  using Block = std::conditional_t<kFive, BlockQ5_K, BlockQ4_K>;
  const Block& b = *reinterpret_cast<const Block*>(block);
  __m256i h = _mm256_setzero_si256();
  if constexpr (kFive) h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh));
  __m256i r[8];
  for (int c = 0; c < 4; ++c) q45_k_values<kFive>(b.qs, h, c, &r[2 * c], &r[2 * c + 1]);
  if (natural)
    for (int j = 0; j < 8; ++j) _mm256_store_si256(reinterpret_cast<__m256i*>(o.u + 32 * j), r[j]);
  else
    transpose8x8_epi32(r, o.u);
  uint64_t sc, mn;
  k4_scale_min_bytes(b.scales, &sc, &mn);
  const __m256 scf =
      _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(sc))));
  const __m256 mnf =
      _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(mn))));
  _mm256_store_ps(o.s, _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(b.d)), scf));
  _mm256_store_ps(o.m, _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(b.dmin)), mnf));
  _mm256_store_ps(o.s_hi, _mm256_setzero_ps());
  _mm256_store_ps(o.m_hi, _mm256_setzero_ps());
}

}  // namespace

LS_AVX2 void gemm_q8_pack_w_avx2(GgmlType t, const uint8_t* row, int64_t n, GemmQ8WChunk* out,
                                 bool natural, int64_t stride) {
  const int64_t full = n / QK_K;
  const uint64_t chunk_bytes = ggml_row_bytes(t, QK_K);
  const bool has_min = g16_has_min(t);
  const __m256i offset = _mm256_set1_epi8(t == GgmlType::Q4_0 ? 8 : t == GgmlType::Q6_K ? 32 : 0);
  alignas(32) int8_t q[QK_K];
  alignas(32) float s[QK_K / 16], m[QK_K / 16];
  const G16Row u{q, s, has_min ? m : nullptr};
  const int64_t ahead = static_cast<int64_t>(chunk_bytes) * cpu_pack_ahead();
  if (t == GgmlType::Q4_K || t == GgmlType::Q5_K) {
    for (int64_t c = 0; c < full; ++c, row += chunk_bytes) {
      if (ahead > 0) prefetch_span(row, ahead, static_cast<int64_t>(chunk_bytes));
      t == GgmlType::Q4_K ? pack_q45_k_chunk<false>(row, out[c * stride], natural)
                          : pack_q45_k_chunk<true>(row, out[c * stride], natural);
    }
    return;  // whole chunks only: a K-quant row is a multiple of 256
  }
  for (int64_t c = 0; c < full; ++c, row += chunk_bytes) {
    if (ahead > 0) prefetch_span(row, ahead, static_cast<int64_t>(chunk_bytes));
    unpack_g16_avx2(t, row, QK_K, u);
    __m256i r[8];
    for (int j = 0; j < 8; ++j)
      r[j] =
          _mm256_add_epi8(_mm256_load_si256(reinterpret_cast<const __m256i*>(q + 32 * j)), offset);
    GemmQ8WChunk& o = out[c * stride];
    if (natural)
      for (int j = 0; j < 8; ++j)
        _mm256_store_si256(reinterpret_cast<__m256i*>(o.u + 32 * j), r[j]);
    else
      transpose8x8_epi32(r, o.u);
    __m256 s_lo, s_hi;
    evens_odds(s, &s_lo, &s_hi);
    _mm256_store_ps(o.s, s_lo);
    switch (t) {
      case GgmlType::Q4_0:
        _mm256_store_ps(o.m, _mm256_mul_ps(s_lo, _mm256_set1_ps(8.0f)));
        _mm256_store_ps(o.s_hi, _mm256_setzero_ps());
        _mm256_store_ps(o.m_hi, _mm256_setzero_ps());
        break;
      case GgmlType::Q6_K:
        _mm256_store_ps(o.s_hi, s_hi);
        _mm256_store_ps(o.m, _mm256_mul_ps(s_lo, _mm256_set1_ps(32.0f)));
        _mm256_store_ps(o.m_hi, _mm256_mul_ps(s_hi, _mm256_set1_ps(32.0f)));
        break;
      default: {
        __m256 m_lo = _mm256_setzero_ps(), m_hi;
        if (has_min) evens_odds(m, &m_lo, &m_hi);
        _mm256_store_ps(o.m, m_lo);
        _mm256_store_ps(o.s_hi, _mm256_setzero_ps());
        _mm256_store_ps(o.m_hi, _mm256_setzero_ps());
      }
    }
  }
  // A Q4_0 / Q8_0 row that ends inside a chunk: its last chunk as the
  // portable packer makes it.
  if (full * QK_K < n)
    gemm_q8_pack_w(t, row, n - full * QK_K, out + full * stride, CpuIsa::Portable, natural, stride);
}

LS_AVX2 void gemm_q8_pack_x_avx2(const ActQ8View& x, int64_t t0, int64_t t1, GemmQ8XChunk* panel) {
  const int64_t n = x.n, nc = gemm_q8_chunks(n), full = n / QK_K;
  const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
  for (int64_t t = t0; t < t1; ++t) {
    const int8_t* q = x.q_at(t);
    for (int64_t c = 0; c < full; ++c) {
      GemmQ8XChunk& o = panel[t * nc + c];
      __m256i r[8], sums[8];
      for (int j = 0; j < 8; ++j) {
        r[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 256 * c + 32 * j));
        // sum of block j's q: |q| * sign via maddubs with ones, then pairs.
        sums[j] = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, r[j]), ones16);
      }
      transpose8x8_epi32(r, reinterpret_cast<uint8_t*>(o.q));
      // 8 vectors of 8 partial sums -> the 8 block sums (exact integers).
      const __m256i h0 = _mm256_hadd_epi32(_mm256_hadd_epi32(sums[0], sums[1]),
                                           _mm256_hadd_epi32(sums[2], sums[3]));
      const __m256i h1 = _mm256_hadd_epi32(_mm256_hadd_epi32(sums[4], sums[5]),
                                           _mm256_hadd_epi32(sums[6], sums[7]));
      _mm256_store_si256(reinterpret_cast<__m256i*>(o.sum),
                         _mm256_add_epi32(_mm256_permute2x128_si256(h0, h1, 0x20),
                                          _mm256_permute2x128_si256(h0, h1, 0x31)));
      _mm256_store_ps(o.d, _mm256_loadu_ps(x.d_at(t) + 8 * c));
      _mm256_store_ps(o.ds, _mm256_loadu_ps(x.ds_at(t) + 8 * c));
      __m256 lo, hi;
      evens_odds(x.ds16_at(t) + 16 * c, &lo, &hi);
      _mm256_store_ps(o.ds_lo, lo);
      _mm256_store_ps(o.ds_hi, hi);
    }
  }
  // A last partial chunk (Q4_0 / Q8_0 rows): the portable packer pads it.
  if (full < nc) gemm_q8_pack_x_from(x, t0, t1, full, panel);
}

}  // namespace ls

#else  // not x86: never called (gemm_q8_parts packs with these only on AVX2 CPUs), but must link.

namespace ls {
void gemm_q8_pack_w_avx2(GgmlType t, const uint8_t* row, int64_t n, GemmQ8WChunk* out, bool natural,
                         int64_t stride) {
  gemm_q8_pack_w(t, row, n, out, CpuIsa::Portable, natural, stride);
}
void gemm_q8_pack_x_avx2(const ActQ8View& x, int64_t t0, int64_t t1, GemmQ8XChunk* panel) {
  gemm_q8_pack_x_from(x, t0, t1, 0, panel);
}
}  // namespace ls

#endif
