// Int8-activation dot with AVX-512 VNNI (kernels/cpu/dot_q8.h), the lane
// form of kernels/cpu/q8_lanes.h: 64 weights per zmm, 64 multiply-adds per
// vpdpbusd. Per chunk of 256 values (one K-quant super-block, or 8 blocks of
// Q4_0 / Q8_0) the packed bytes become 4 zmm of unsigned quants (values
// 64k .. 64k+63 in zmm k; for Q4_K / Q5_K the 32-blocks in kActQ8K4Order,
// matched by x's qk4 copy: no lane shuffle), plus the 8 blocks' scales s and
// min/offset factors m (lane j: block j); then per token:
//   p_k = vpdpbusd(0, w_k, x_k)          16 int32 lanes: 8 per block, 4
//                                        products each
//   I   = block sums of p_0..p_3         a permute tree (block_sums), exact
//   acc = fma(s * d_x, float(I), acc)    8 lanes (ymm), one per block
//   acc = fma(-m, ds, acc)               (min or offset; none for Q8_0)
// and the horizontal sum with q8_lanes_sum's tree. From 2 tokens on, Q4_0,
// Q4_K and Q5_K (Q6_K from 4) take the interleaved form instead (Interleave below): the
// chunk's 4 zmm are transposed once, by 4-byte groups, into the layout of
// ActQ8View::qil, so that per token
//   acc = vpdpbusd over the 4 zmm         lanes j and 8 + j: block j
//   I   = lanes 0-7 + lanes 8-15          (no permute tree)
// the same exact I, so the same bits: 8 permutes and 4 blends a chunk,
// shared by the tokens, against 7 permutes and 4 adds a token (LS_DOT_IL=0
// keeps the tree at every width, for A/B timing). In the interleaved form
// the tokens go in pairs (token pairs, dot_q8_pairs; LS_DOT_PAIRS=0 turns
// them off): the two tokens' block sums meet in one zmm (a shuffle of
// halves each and an add) and their float steps run in its two halves, so
// a pair costs 5 zmm float operations where two tokens cost 10 ymm ones,
// the same trick as the GEMM's pairs tile (gemm_q8_avx512.cpp, 1.1-1.45x on
// the GPU machine's Xeon, whose 512-bit units take a zmm operation at the
// rate of a ymm one; on the dev VM's Zen 4, which splits a zmm operation in
// two, it measures even). Q8_0 stays signed, as
// the lane form has it: |w| times x with w's sign (a masked negate). The
// weights are decoded once per chunk and used for every token, so a row is
// read once whatever n_tok is. The next row is prefetched over this one.
// defines: dot_q8_avx512vnni (kernels/cpu/dot_q8.h)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <algorithm>
#include <cassert>

#include "kernels/cpu/dot_q8.h"
#include "kernels/quant_blocks.h"

#if defined(__x86_64__) || defined(__i386__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593, see dot_avx512.cpp
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "kernels/cpu/k4_scales_avx512.h"
#include "kernels/cpu/row_prefetcher.h"

// Loops over tokens and vectors have fixed trip counts; unrolled, their
// accumulators and weights stay in registers (an indexed array would live on
// the stack, and each FMA would wait for a store).
#define LS_UNROLL _Pragma("GCC unroll 16")

#define LS_VNNI512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))

namespace ls {
namespace {

// One chunk of 256 values, decoded.
struct Chunk {
  __m512i w[4];      // unsigned quants, 64 per zmm (see the top); Q8_0: |q|
  __mmask64 neg[4];  // Q8_0: where q < 0
  __m256 s;          // lane j: block j's scale
  __m256 m;          // lane j: block j's min / offset factor (subtracted times ds)
};

// The upper 8 floats (extractf32x8 would need AVX-512 DQ).
LS_VNNI512 inline __m256 hi256(__m512 v) {
  return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}
LS_VNNI512 inline __m512i load64(const uint8_t* p) {
  return _mm512_loadu_si512(p);
}
LS_VNNI512 inline __m256i load32(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
LS_VNNI512 inline __m128i load16(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// 8 fp16 scales at a stride (Q4_0 / Q8_0 blocks), as f32.
LS_VNNI512 inline __m256 halves8(const uint8_t* p, int stride) {
  alignas(16) uint16_t h[8];
  LS_UNROLL
  for (int k = 0; k < 8; ++k) __builtin_memcpy(&h[k], p + k * stride, 2);
  return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(h)));
}

// Q4_K / Q5_K: 128 bytes of nibbles. qs[32c + l] holds value 64c + l (low)
// and 64c + 32 + l (high): the low nibbles of the first 64 bytes are values
// 0-31 and 64-95 (32-blocks 0 and 2), the high ones 32-63 and 96-127 (1 and
// 3). The kernel takes them in that order, and x in the same (ActQ8View::qk4,
// kActQ8K4Order), so no lane shuffle is needed: zmm k holds blocks
// kActQ8K4Order[2k] and [2k + 1].
LS_VNNI512 inline void nibbles_k(const uint8_t* qs, __m512i* w) {
  const __m512i lo_mask = _mm512_set1_epi8(0x0F);
  LS_UNROLL
  for (int h = 0; h < 2; ++h) {
    const __m512i z = load64(qs + 64 * h);
    w[2 * h] = _mm512_and_si512(z, lo_mask);
    w[2 * h + 1] = _mm512_and_si512(_mm512_srli_epi16(z, 4), lo_mask);
  }
}

template <GgmlType T>
LS_VNNI512 inline void decode(const uint8_t* p, Chunk& c);

// Q4_K / Q5_K scales and mins as one zmm, [d * sc_0..7 | dmin * m_0..7],
// from the block's first 16 bytes without a scalar step
// (kernels/cpu/k4_scales_avx512.h gives the bytes).
LS_VNNI512 inline __m512 k4_scales(const uint8_t* block) {
  const __m128i v = load16(block);
  const __m128i bytes = k4_scale_min_xmm(v);
  // [d, dmin, ., .] as f32, spread: lanes 0-7 d, 8-15 dmin.
  const __m512 dd =
      _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
                            _mm512_castps128_ps512(_mm_cvtph_ps(v)));
  return _mm512_mul_ps(dd, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes)));
}

LS_VNNI512 inline void split_scales(__m512 sm, Chunk& c) {
  c.s = _mm512_castps512_ps256(sm);
  c.m = hi256(sm);
}

template <>
LS_VNNI512 inline void decode<GgmlType::Q4_K>(const uint8_t* p, Chunk& c) {
  split_scales(k4_scales(p), c);
  nibbles_k(reinterpret_cast<const BlockQ4_K*>(p)->qs, c.w);
}

// Q5_K: Q4_K plus 16 where the 5th bit is set: bit j of qh[l] for value
// 32j + l. zmm k holds blocks a = kActQ8K4Order[2k] (bytes 0-31, l = byte)
// and b = kActQ8K4Order[2k + 1] (bytes 32-63, l = byte - 32): bit a of the
// 32 qh bytes, then bit b of the same bytes.
template <>
LS_VNNI512 inline void decode<GgmlType::Q5_K>(const uint8_t* p, Chunk& c) {
  const BlockQ5_K* b = reinterpret_cast<const BlockQ5_K*>(p);
  split_scales(k4_scales(p), c);
  nibbles_k(b->qs, c.w);
  const __m512i qh = _mm512_broadcast_i64x4(load32(b->qh));
  const __m512i sixteen = _mm512_set1_epi8(16);
  LS_UNROLL
  for (int k = 0; k < 4; ++k) {
    const __m512i bit = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_set1_epi8(static_cast<char>(1u << kActQ8K4Order[2 * k]))),
        _mm256_set1_epi8(static_cast<char>(1u << kActQ8K4Order[2 * k + 1])), 1);
    const __mmask64 set = _mm512_test_epi8_mask(qh, bit);
    c.w[k] = _mm512_mask_add_epi8(c.w[k], set, c.w[k], sixteen);
  }
}

// Q4_0: 8 blocks of 18 bytes. Two blocks per zmm: [qs_b | qs_b+1] (ymm), low
// nibbles then high in a zmm = lanes (lo_b, lo_b+1, hi_b, hi_b+1), reordered to
// (lo_b, hi_b, lo_b+1, hi_b+1) = values in order. Offset 8.
template <>
LS_VNNI512 inline void decode<GgmlType::Q4_0>(const uint8_t* p, Chunk& c) {
  const BlockQ4_0* b = reinterpret_cast<const BlockQ4_0*>(p);
  const __m512i lo_mask = _mm512_set1_epi8(0x0F);
  LS_UNROLL
  for (int k = 0; k < 4; ++k) {
    const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(load16(b[2 * k].qs)),
                                              load16(b[2 * k + 1].qs), 1);
    const __m512i z = _mm512_and_si512(
        _mm512_inserti64x4(_mm512_castsi256_si512(v), _mm256_srli_epi16(v, 4), 1), lo_mask);
    c.w[k] = _mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(3, 1, 2, 0));
  }
  c.s = halves8(p, sizeof(BlockQ4_0));
  c.m = _mm256_mul_ps(c.s, _mm256_set1_ps(8.0f));  // exact: a power of two
}

// Q8_0: 8 blocks of 34 bytes; signed, so |q| (abs(-128) is 128 as an
// unsigned byte) and the mask of its negative bytes, which the dot moves
// onto x.
template <>
LS_VNNI512 inline void decode<GgmlType::Q8_0>(const uint8_t* p, Chunk& c) {
  const BlockQ8_0* b = reinterpret_cast<const BlockQ8_0*>(p);
  LS_UNROLL
  for (int k = 0; k < 4; ++k) {
    const __m512i z = _mm512_inserti64x4(
        _mm512_castsi256_si512(load32(reinterpret_cast<const uint8_t*>(b[2 * k].qs))),
        load32(reinterpret_cast<const uint8_t*>(b[2 * k + 1].qs)), 1);
    c.neg[k] = _mm512_movepi8_mask(z);
    c.w[k] = _mm512_abs_epi8(z);
  }
  c.s = halves8(p, sizeof(BlockQ8_0));
  c.m = _mm256_setzero_ps();
}

// The block sums of a chunk: p[k] has 8 int32 lanes for each of its two
// 32-blocks (lanes 0-7 and 8-15, 4 products a lane; for Q6_K lanes 0-3 and
// 4-7 of a block are its lo and hi groups). Two levels of "add the even lanes
// to the odd ones" over pairs of vectors (vpermt2d) leave 2 partial sums per
// block, in zmm order (block a of zmm 0, block b of zmm 0, a of zmm 1, ...);
// a last permute puts partial 0 of blocks 0..7 in lanes 0-7 and partial 1 in
// 8-15, in block order (pos[j]: where block j is in zmm order). So lo + hi is
// I, and for Q6_K lo and hi are its two groups' sums.
struct BlockSums {
  __m512i even, odd, last;
  LS_VNNI512 explicit BlockSums(const int* pos) {
    even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    alignas(64) int32_t l[16];
    for (int j = 0; j < 8; ++j) l[j] = 2 * pos[j], l[8 + j] = 2 * pos[j] + 1;
    last = _mm512_load_si512(l);
  }
  LS_VNNI512 inline __m512i pairs(__m512i a, __m512i b) const {
    return _mm512_add_epi32(_mm512_permutex2var_epi32(a, even, b),
                            _mm512_permutex2var_epi32(a, odd, b));
  }
  LS_VNNI512 inline void operator()(const __m512i* p, __m256i* lo, __m256i* hi) const {
    const __m512i t = _mm512_permutexvar_epi32(last, pairs(pairs(p[0], p[1]), pairs(p[2], p[3])));
    *lo = _mm512_castsi512_si256(t);
    *hi = _mm512_extracti64x4_epi64(t, 1);
  }
};

// The chunk's 4 zmm (block at position p in zmm p / 2, half p % 2: pos[j]
// is block j's position) into ActQ8View::qil's layout: zmm o, lane i holds
// group v = 2o + i / 8 (values 4v..4v+3) of block j = i % 8. Blocks 0-3 lie
// in zmm 0-1 and 4-7 in zmm 2-3 in both orders used here, so each output is
// a two-source permute of each pair (one index: a position's place within
// its pair) and a blend.
struct Interleave {
  __m512i idx[4];
  LS_VNNI512 explicit Interleave(const int* pos) {
    for (int o = 0; o < 4; ++o) {
      alignas(64) int32_t l[16];
      for (int i = 0; i < 16; ++i) {
        const int p = pos[i % 8], v = 2 * o + i / 8;
        l[i] = (p / 2 % 2) * 16 + 8 * (p % 2) + v;
      }
      idx[o] = _mm512_load_si512(l);
    }
  }
  LS_VNNI512 inline void operator()(const __m512i* w, __m512i* out) const {
    LS_UNROLL
    for (int o = 0; o < 4; ++o)
      out[o] = _mm512_mask_blend_epi32(0xF0F0, _mm512_permutex2var_epi32(w[0], idx[o], w[1]),
                                       _mm512_permutex2var_epi32(w[2], idx[o], w[3]));
  }
};

// One token's products in the interleaved form: a over zmm 0-1 (groups
// v = 0-3 of every block), b over zmm 2-3 (v = 4-7). Two chains of two: the
// products of a chain wait on each other.
LS_VNNI512 inline void il_chains(const __m512i* wi, const int8_t* xq, __m512i* a, __m512i* b) {
  *a = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wi[0], _mm512_loadu_si512(xq));
  *b = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wi[2], _mm512_loadu_si512(xq + 128));
  *a = _mm512_dpbusd_epi32(*a, wi[1], _mm512_loadu_si512(xq + 64));
  *b = _mm512_dpbusd_epi32(*b, wi[3], _mm512_loadu_si512(xq + 192));
}

// Token pairs (dot_q8_pairs): two tokens' lane-form float steps in one zmm,
// token 2p in lanes 0-7 and 2p + 1 in lanes 8-15, each lane the same IEEE
// operations in the same order as the one-token ymm step, so the same bits.
// The two tokens' block sums, each a zmm of two partials per block (lanes j
// and 8 + j), meet in one: its halves swapped across the pair and added.
LS_VNNI512 inline __m512i pair_sums(__m512i t0, __m512i t1) {
  return _mm512_add_epi32(_mm512_shuffle_i64x2(t0, t1, _MM_SHUFFLE(1, 0, 1, 0)),
                          _mm512_shuffle_i64x2(t0, t1, _MM_SHUFFLE(3, 2, 3, 2)));
}
// 8 floats of each token: [a | b].
LS_VNNI512 inline __m512 pair_load(const float* a, const float* b) {
  return _mm512_castpd_ps(
      _mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(_mm256_loadu_ps(a))),
                         _mm256_castps_pd(_mm256_loadu_ps(b)), 1));
}
LS_VNNI512 inline __m512 both_halves(__m256 v) {
  return _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(v)));
}
// The lanes of token 2p + h of a pair accumulator.
LS_VNNI512 inline __m256 pair_half(__m512 v, int h) {
  return h == 0 ? _mm512_castps512_ps256(v) : hi256(v);
}

template <GgmlType T>
constexpr bool kK4Order = T == GgmlType::Q4_K || T == GgmlType::Q5_K;
template <GgmlType T>
constexpr bool kIlType = T == GgmlType::Q4_0 || T == GgmlType::Q4_K || T == GgmlType::Q5_K;
constexpr int kNaturalPos[8] = {0, 1, 2, 3, 4, 5, 6, 7};

LS_VNNI512 inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Types with one scale per 32 values (all but Q6_K). P: token pairs (the
// interleaved form only; an odd last token goes alone).
template <GgmlType T, int NT, bool IL = false, bool P = false>
LS_VNNI512 void dot32(const uint8_t* row, const ActQ8View& x, int64_t t0, float* y, int64_t ldy,
                      const RowPrefetch& pf) {
  static_assert(!IL || kIlType<T>, "the interleaved form is for Q4_0, Q4_K and Q5_K");
  static_assert(!P || IL, "token pairs are for the interleaved form");
  constexpr int kPairs = P ? NT / 2 : 0;
  const int64_t n = x.n, n_chunks = n / 256;
  const uint64_t chunk_bytes = ggml_row_bytes(T, 256);
  // kActQ8K4Order is its own inverse: block j sits at position kActQ8K4Order[j].
  const BlockSums sums(kK4Order<T> ? kActQ8K4Order : kNaturalPos);
  const Interleave il(kK4Order<T> ? kActQ8K4Order : kNaturalPos);
  __m256 acc[NT];
  __m512 accp[kPairs > 0 ? kPairs : 1];
  LS_UNROLL
  for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  LS_UNROLL
  for (int q = 0; q < kPairs; ++q) accp[q] = _mm512_setzero_ps();
  RowPrefetcher pre(pf, n);
  for (int64_t c = 0; c < n_chunks; ++c) {
    pre.advance();
    Chunk ch;
    decode<T>(row + c * chunk_bytes, ch);
    __m512i wi[4];
    if constexpr (IL) il(ch.w, wi);
    if constexpr (P) {
      const __m512 s2 = both_halves(ch.s), m2 = both_halves(ch.m);
      LS_UNROLL
      for (int q = 0; q < kPairs; ++q) {
        const int64_t ta = t0 + 2 * q, tb = ta + 1;
        __m512i a0, b0, a1, b1;
        il_chains(wi, x.qil_at(ta) + 256 * c, &a0, &b0);
        il_chains(wi, x.qil_at(tb) + 256 * c, &a1, &b1);
        const __m512i I = pair_sums(_mm512_add_epi32(a0, b0), _mm512_add_epi32(a1, b1));
        const __m512 f = _mm512_mul_ps(s2, pair_load(x.d_at(ta) + 8 * c, x.d_at(tb) + 8 * c));
        accp[q] = _mm512_fmadd_ps(f, _mm512_cvtepi32_ps(I), accp[q]);
        if constexpr (T != GgmlType::Q8_0)
          accp[q] =
              _mm512_fnmadd_ps(m2, pair_load(x.ds_at(ta) + 8 * c, x.ds_at(tb) + 8 * c), accp[q]);
      }
    }
    LS_UNROLL
    for (int t = 2 * kPairs; t < NT; ++t) {
      __m256i lo, hi;
      if constexpr (IL) {
        __m512i a, b;
        il_chains(wi, x.qil_at(t0 + t) + 256 * c, &a, &b);
        const __m512i ab = _mm512_add_epi32(a, b);
        lo = _mm512_castsi512_si256(ab);
        hi = _mm512_extracti64x4_epi64(ab, 1);
      } else {
        const int8_t* xq = (kK4Order<T> ? x.qk4_at(t0 + t) : x.q_at(t0 + t)) + 256 * c;
        __m512i p[4];
        LS_UNROLL
        for (int k = 0; k < 4; ++k) {
          __m512i xv = _mm512_loadu_si512(xq + 64 * k);
          if constexpr (T == GgmlType::Q8_0)
            xv = _mm512_mask_sub_epi8(xv, ch.neg[k], _mm512_setzero_si512(), xv);
          p[k] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ch.w[k], xv);
        }
        sums(p, &lo, &hi);
      }
      const __m256 f = _mm256_mul_ps(ch.s, _mm256_loadu_ps(x.d_at(t0 + t) + 8 * c));
      acc[t] = _mm256_fmadd_ps(f, _mm256_cvtepi32_ps(_mm256_add_epi32(lo, hi)), acc[t]);
      if constexpr (T != GgmlType::Q8_0)
        acc[t] = _mm256_fnmadd_ps(ch.m, _mm256_loadu_ps(x.ds_at(t0 + t) + 8 * c), acc[t]);
    }
  }
  LS_UNROLL
  for (int t = 0; t < NT; ++t) {
    const __m256 lanes = t < 2 * kPairs ? pair_half(accp[t / 2], t % 2) : acc[t];
    if constexpr (T == GgmlType::Q4_0 || T == GgmlType::Q8_0) {
      if (n % 256) {
        alignas(32) float a[8];
        _mm256_store_ps(a, lanes);
        y[t * ldy] = dot_q8_lanes_tail(T, row, x, t0 + t, a);
        continue;
      }
    }
    y[t * ldy] = hsum(lanes);
  }
}

// Q6_K: ql (128), qh (64), scales (16 int8), d. Per 128 values: AB = ql[0..63]
// (zmm: A = bytes 0-31, B = 32-63), H = qh[0..31]:
//   values  0..63  = (AB & 15)        | (HH bits 0-1) << 4,  HH = (H, H >> 2)
//   values 64..127 = (AB >> 4 & 15)   | (HH bits 4-5) << 4
// (x86 has no byte shift: 16-bit shifts pull a neighbour's bits in, and each
// mask drops them). Unsigned 0..63, offset 32 per group of 16.
// IL: the interleaved form (the top). Zmm 0-1 of a chunk so transposed hold
// groups v = 0-3 of every block, its lo group of 16 values, and zmm 2-3 its
// hi group: each of the two chains folds into that group's sums.
template <int NT, bool IL = false, bool P = false>
LS_VNNI512 void dot_q6_k(const uint8_t* row, const ActQ8View& x, int64_t t0, float* y, int64_t ldy,
                         const RowPrefetch& pf) {
  static_assert(!P || IL, "token pairs are for the interleaved form");
  constexpr int kPairs = P ? NT / 2 : 0;
  const int64_t n = x.n, n_chunks = n / 256;
  const __m512i lo_mask = _mm512_set1_epi8(0x0F), hi_mask = _mm512_set1_epi8(0x30);
  // 16 per-group values -> even groups (lo) in lanes 0-7, odd ones (hi) in 8-15.
  const __m512i evens_odds =
      _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  const BlockSums sums(kNaturalPos);
  const Interleave il(kNaturalPos);
  __m256 acc[NT];
  __m512 accp[kPairs > 0 ? kPairs : 1];
  LS_UNROLL
  for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  LS_UNROLL
  for (int q = 0; q < kPairs; ++q) accp[q] = _mm512_setzero_ps();
  RowPrefetcher pre(pf, n);
  const BlockQ6_K* blocks = reinterpret_cast<const BlockQ6_K*>(row);
  for (int64_t c = 0; c < n_chunks; ++c) {
    pre.advance();
    const BlockQ6_K& b = blocks[c];
    __m512i w[4];
    LS_UNROLL
    for (int h = 0; h < 2; ++h) {
      const __m512i ab = load64(b.ql + 64 * h);
      const __m256i H = load32(b.qh + 32 * h);
      const __m512i hh = _mm512_inserti64x4(_mm512_castsi256_si512(H), _mm256_srli_epi16(H, 2), 1);
      w[2 * h] = _mm512_or_si512(_mm512_and_si512(ab, lo_mask),
                                 _mm512_and_si512(_mm512_slli_epi16(hh, 4), hi_mask));
      w[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ab, 4), lo_mask),
                                     _mm512_and_si512(hh, hi_mask));
    }
    const __m512 s16 = _mm512_permutexvar_ps(
        evens_odds, _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(b.d)),
                                  _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                                      load16(reinterpret_cast<const uint8_t*>(b.scales))))));
    const __m256 s_lo = _mm512_castps512_ps256(s16), s_hi = hi256(s16);
    const __m256 thirty_two = _mm256_set1_ps(32.0f);
    const __m256 m_lo = _mm256_mul_ps(s_lo, thirty_two);  // exact: a power of two
    const __m256 m_hi = _mm256_mul_ps(s_hi, thirty_two);
    __m512i wi[4];
    if constexpr (IL) il(w, wi);
    if constexpr (P) {
      const __m512 s_lo2 = both_halves(s_lo), s_hi2 = both_halves(s_hi);
      const __m512 m_lo2 = both_halves(m_lo), m_hi2 = both_halves(m_hi);
      LS_UNROLL
      for (int q = 0; q < kPairs; ++q) {
        const int64_t ta = t0 + 2 * q, tb = ta + 1;
        __m512i a0, b0, a1, b1;
        il_chains(wi, x.qil_at(ta) + 256 * c, &a0, &b0);
        il_chains(wi, x.qil_at(tb) + 256 * c, &a1, &b1);
        const __m512i i_lo = pair_sums(a0, a1), i_hi = pair_sums(b0, b1);
        const __m512 dx = pair_load(x.d_at(ta) + 8 * c, x.d_at(tb) + 8 * c);
        const __m512 da =
            _mm512_permutexvar_ps(evens_odds, _mm512_loadu_ps(x.ds16_at(ta) + 16 * c));
        const __m512 db =
            _mm512_permutexvar_ps(evens_odds, _mm512_loadu_ps(x.ds16_at(tb) + 16 * c));
        const __m512 ds_lo = _mm512_shuffle_f32x4(da, db, _MM_SHUFFLE(1, 0, 1, 0));
        const __m512 ds_hi = _mm512_shuffle_f32x4(da, db, _MM_SHUFFLE(3, 2, 3, 2));
        __m512 a = accp[q];
        a = _mm512_fmadd_ps(_mm512_mul_ps(s_lo2, dx), _mm512_cvtepi32_ps(i_lo), a);
        a = _mm512_fmadd_ps(_mm512_mul_ps(s_hi2, dx), _mm512_cvtepi32_ps(i_hi), a);
        a = _mm512_fnmadd_ps(m_lo2, ds_lo, a);
        a = _mm512_fnmadd_ps(m_hi2, ds_hi, a);
        accp[q] = a;
      }
    }
    LS_UNROLL
    for (int t = 2 * kPairs; t < NT; ++t) {
      __m256i i_lo, i_hi;
      if constexpr (IL) {
        __m512i a, b;
        il_chains(wi, x.qil_at(t0 + t) + 256 * c, &a, &b);
        i_lo = _mm256_add_epi32(_mm512_castsi512_si256(a), _mm512_extracti64x4_epi64(a, 1));
        i_hi = _mm256_add_epi32(_mm512_castsi512_si256(b), _mm512_extracti64x4_epi64(b, 1));
      } else {
        const int8_t* xq = x.q_at(t0 + t) + 256 * c;
        __m512i p[4];
        LS_UNROLL
        for (int k = 0; k < 4; ++k)
          p[k] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[k], _mm512_loadu_si512(xq + 64 * k));
        sums(p, &i_lo, &i_hi);
      }
      const __m256 dx = _mm256_loadu_ps(x.d_at(t0 + t) + 8 * c);
      const __m512 ds16 =
          _mm512_permutexvar_ps(evens_odds, _mm512_loadu_ps(x.ds16_at(t0 + t) + 16 * c));
      __m256 a = acc[t];
      a = _mm256_fmadd_ps(_mm256_mul_ps(s_lo, dx), _mm256_cvtepi32_ps(i_lo), a);
      a = _mm256_fmadd_ps(_mm256_mul_ps(s_hi, dx), _mm256_cvtepi32_ps(i_hi), a);
      a = _mm256_fnmadd_ps(m_lo, _mm512_castps512_ps256(ds16), a);
      a = _mm256_fnmadd_ps(m_hi, hi256(ds16), a);
      acc[t] = a;
    }
  }
  LS_UNROLL
  for (int t = 0; t < NT; ++t)
    y[t * ldy] = hsum(t < 2 * kPairs ? pair_half(accp[t / 2], t % 2) : acc[t]);
}

template <int NT>
LS_VNNI512 void dot_type(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, float* y,
                         int64_t ldy, const RowPrefetch& pf) {
  // One token: the chunk's transpose would cost what the tree saves; Q6_K
  // (two chains of two) from 4 tokens (one VM core from L2: even at 2, +18 %
  // at 4).
  const bool il = NT > 1 && x.qil && dot_q8_interleaved();
  const bool il4 = il && NT >= 4;
  const bool pairs = il && dot_q8_pairs();
  switch (t) {
    case GgmlType::Q4_0:
      if (pairs) return dot32<GgmlType::Q4_0, NT, true, true>(row, x, t0, y, ldy, pf);
      if (il) return dot32<GgmlType::Q4_0, NT, true>(row, x, t0, y, ldy, pf);
      return dot32<GgmlType::Q4_0, NT>(row, x, t0, y, ldy, pf);
    case GgmlType::Q8_0:
      return dot32<GgmlType::Q8_0, NT>(row, x, t0, y, ldy, pf);
    case GgmlType::Q4_K:
      if (pairs) return dot32<GgmlType::Q4_K, NT, true, true>(row, x, t0, y, ldy, pf);
      if (il) return dot32<GgmlType::Q4_K, NT, true>(row, x, t0, y, ldy, pf);
      return dot32<GgmlType::Q4_K, NT>(row, x, t0, y, ldy, pf);
    case GgmlType::Q5_K:
      if (pairs) return dot32<GgmlType::Q5_K, NT, true, true>(row, x, t0, y, ldy, pf);
      if (il) return dot32<GgmlType::Q5_K, NT, true>(row, x, t0, y, ldy, pf);
      return dot32<GgmlType::Q5_K, NT>(row, x, t0, y, ldy, pf);
    case GgmlType::Q6_K:
      if (il4 && pairs) return dot_q6_k<NT, true, true>(row, x, t0, y, ldy, pf);
      if (il4) return dot_q6_k<NT, true>(row, x, t0, y, ldy, pf);
      return dot_q6_k<NT>(row, x, t0, y, ldy, pf);
    default:
      assert(false && "dot_q8_avx512vnni: unsupported type");
  }
}

}  // namespace

void dot_q8_avx512vnni(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                       float* y, int64_t ldy, const RowPrefetch& pf) {
  assert(n_tok >= 1 && n_tok <= kDotMaxTokens);
  dot_q8_by_tokens(n_tok,
                   [&](auto nt) { dot_type<decltype(nt)::value>(t, row, x, t0, y, ldy, pf); });
}

}  // namespace ls

#else  // not x86: never called (dot_q8_fn does not pick it), but must link.

namespace ls {
void dot_q8_avx512vnni(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                       float* y, int64_t ldy, const RowPrefetch& pf) {
  dot_q8_scalar(t, row, x, t0, n_tok, y, ldy, pf);
}
}  // namespace ls

#endif
