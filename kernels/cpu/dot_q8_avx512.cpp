// Int8-activation dot with AVX-512 VNNI (kernels/cpu/dot_q8.h): 64 weights
// per zmm, 64 multiply-adds per vpdpbusd. Per chunk of 256 values (one
// K-quant super-block, or 8 blocks of Q4_0 / Q8_0) the packed bytes become 4
// zmm of unsigned quants (values 64k .. 64k+63 in zmm k; for Q4_K / Q5_K the
// 32-blocks in kActQ8K4Order, matched by x's qk4 copy: no lane shuffle),
// plus 8 (16 for Q6_K) f32 group scales s and min/offset factors m; then per
// token:
//   p_k  = vpdpbusd(0, w_k, x_k)          16 int32 lanes, 8 (4) per group
//   acc += f_k * float(p_k)               f_k: s_g * d_x(g) spread over the
//                                         group's lanes by a permute
//   acc -= m * ds                         (the min, or offset * s)
// The weights are decoded once per chunk and used for every token, so a row
// is read once whatever n_tok is. The next row is prefetched over this one.
//
// Summation order (fixed, so results depend neither on the thread count nor
// on n_tok): per token two 16-lane accumulators (zmm 0, 2 and zmm 1, 3 of a
// chunk, so that two FMA chains hide the latency), added, then
// _mm512_reduce_add_ps.
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

// Loops over tokens and vectors have fixed trip counts; unrolled, their
// accumulators and weights stay in registers (an indexed array would live on
// the stack, and each FMA would wait for a store).
#define LS_UNROLL _Pragma("GCC unroll 16")

#define LS_VNNI512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))

namespace ls {
namespace {

// One chunk of 256 values, decoded.
struct Chunk {
  __m512i w[4];  // unsigned quants, 64 per zmm (see the top)
  __m256 s;      // per 32-block scale (types with 32-value groups)
  __m256 m;      // per 32-block min / offset factor (subtracted times ds)
  __m512 sm;     // Q4_K / Q5_K instead: s in lanes 0-7, m in lanes 8-15
};

LS_VNNI512 inline __m256 u8x8_to_ps(uint64_t bytes) {
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(bytes))));
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
// from the block's first 16 bytes (d, dmin, the 12 packed bytes) without a
// scalar step (kernels/cpu/k4_scales.h has the layout): with A, B, C the
// packed words 0-3, 4-7, 8-11 (block bytes 4-7, 8-11, 12-15), the bytes
// [A, C, B, C] and [0, A, 0, B] give
//   sc 0-3 = A & 63                  sc 4-7 = C & 15        | (A >> 2) & 48
//   mn 0-3 = B & 63                  mn 4-7 = (C >> 4) & 15 | (B >> 2) & 48
LS_VNNI512 inline __m512 k4_scales(const uint8_t* block) {
  const __m128i v = load16(block);
  const __m128i t = _mm_shuffle_epi8(v, _mm_setr_epi8(4, 5, 6, 7, 12, 13, 14, 15, 8, 9, 10, 11, 12,
                                                      13, 14, 15));
  const __m128i u = _mm_shuffle_epi8(v, _mm_setr_epi8(-1, -1, -1, -1, 4, 5, 6, 7, -1, -1, -1, -1, 8,
                                                      9, 10, 11));
  const __m128i m15 = _mm_set1_epi8(15);
  const __m128i c_lo = _mm_and_si128(t, m15), c_hi = _mm_and_si128(_mm_srli_epi16(t, 4), m15);
  const __m128i top = _mm_and_si128(_mm_srli_epi16(u, 2), _mm_set1_epi8(48));
  const __m128i hi = _mm_or_si128(_mm_mask_blend_epi8(0xF000, c_lo, c_hi), top);
  const __m128i lo = _mm_and_si128(t, _mm_set1_epi8(63));
  const __m128i bytes = _mm_mask_blend_epi8(0xF0F0, lo, hi);
  // [d, dmin, ., .] as f32, spread: lanes 0-7 d, 8-15 dmin.
  const __m512 dd = _mm512_permutexvar_ps(
      _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
      _mm512_castps128_ps512(_mm_cvtph_ps(v)));
  return _mm512_mul_ps(dd, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes)));
}

template <>
LS_VNNI512 inline void decode<GgmlType::Q4_K>(const uint8_t* p, Chunk& c) {
  c.sm = k4_scales(p);
  nibbles_k(reinterpret_cast<const BlockQ4_K*>(p)->qs, c.w);
}

// Q5_K: Q4_K plus 16 where the 5th bit is set: bit j of qh[l] for value
// 32j + l. zmm k holds blocks a = kActQ8K4Order[2k] (bytes 0-31, l = byte)
// and b = kActQ8K4Order[2k + 1] (bytes 32-63, l = byte - 32): bit a of the
// 32 qh bytes, then bit b of the same bytes.
template <>
LS_VNNI512 inline void decode<GgmlType::Q5_K>(const uint8_t* p, Chunk& c) {
  const BlockQ5_K* b = reinterpret_cast<const BlockQ5_K*>(p);
  c.sm = k4_scales(p);
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

// Q8_0: 8 blocks of 34 bytes; q + 128 (xor of the sign bit) is unsigned, offset 128.
template <>
LS_VNNI512 inline void decode<GgmlType::Q8_0>(const uint8_t* p, Chunk& c) {
  const BlockQ8_0* b = reinterpret_cast<const BlockQ8_0*>(p);
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  LS_UNROLL
  for (int k = 0; k < 4; ++k) {
    const __m512i z = _mm512_inserti64x4(
        _mm512_castsi256_si512(load32(reinterpret_cast<const uint8_t*>(b[2 * k].qs))),
        load32(reinterpret_cast<const uint8_t*>(b[2 * k + 1].qs)), 1);
    c.w[k] = _mm512_xor_si512(z, flip);
  }
  c.s = halves8(p, sizeof(BlockQ8_0));
  c.m = _mm256_mul_ps(c.s, _mm256_set1_ps(128.0f));
}

// Spreads issuing prefetches for the next row over this row's chunks.
struct Prefetcher {
  const uint8_t* p;
  int64_t end, cur = 0, step16, at16 = 0;
  int hint;
  Prefetcher(const RowPrefetch& pf, int64_t n)
      : p(pf.p), end(pf.bytes), step16(n > 0 ? (pf.bytes << 16) / n * 256 : 0), hint(pf.hint) {}
  LS_VNNI512 inline void advance() {
    if (!end) return;
    at16 += step16;
    const int64_t to = std::min<int64_t>(end, (at16 >> 16) + 64);
    for (; cur < to; cur += 64) {
      const char* a = reinterpret_cast<const char*>(p + cur);
      switch (hint) {  // the same every call: predicted
        case 1:
          _mm_prefetch(a, _MM_HINT_T1);
          break;
        case 2:
          _mm_prefetch(a, _MM_HINT_T2);
          break;
        case 3:
          _mm_prefetch(a, _MM_HINT_NTA);
          break;
        default:
          _mm_prefetch(a, _MM_HINT_T0);
      }
    }
  }
};

// Lane indices: zmm k of a chunk covers 32-blocks a (lanes 0-7) and b
// (8-15): 2k and 2k + 1 in natural order, kActQ8K4Order's pair for the
// K-quants with 32-value groups.
LS_VNNI512 inline __m512i idx32(int a, int b) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi32(a)), _mm256_set1_epi32(b), 1);
}
template <GgmlType T>
constexpr bool kK4Order = T == GgmlType::Q4_K || T == GgmlType::Q5_K;

// Types with one scale per 32 values (all but Q6_K).
template <GgmlType T, int NT>
LS_VNNI512 void dot32(const uint8_t* row, const ActQ8View& x, int64_t t0, float* y, int64_t ldy,
                      const RowPrefetch& pf) {
  // Two chains for every token count: a token's sum must not depend on how
  // many share the call (a batch gives each sequence its bits alone), and
  // 8 tokens x 2 accumulators fit AVX-512's 32 registers.
  constexpr int kAcc = 2;
  const int64_t n = x.n, nb = n / 32, n_chunks = n / 256;
  const uint64_t chunk_bytes = ggml_row_bytes(T, 256);
  __m512i idx[4];
  LS_UNROLL
  for (int k = 0; k < 4; ++k)
    idx[k] = kK4Order<T> ? idx32(kActQ8K4Order[2 * k], kActQ8K4Order[2 * k + 1])
                         : idx32(2 * k, 2 * k + 1);
  __m512 acc[NT][kAcc];
  LS_UNROLL
  for (int t = 0; t < NT; ++t) LS_UNROLL
  for (int a = 0; a < kAcc; ++a) acc[t][a] = _mm512_setzero_ps();
  Prefetcher pre(pf, n);
  for (int64_t c = 0; c < n_chunks; ++c) {
    pre.advance();
    Chunk ch;
    decode<T>(row + c * chunk_bytes, ch);
    LS_UNROLL
    for (int t = 0; t < NT; ++t) {
      if constexpr (kK4Order<T>) {
        // One load of [d_x | ds] and one product give every factor: lanes
        // 0-7 s_j * d_x(j), spread over the dot's lanes by the permutes;
        // lanes 8-15 m_j * ds_j, subtracted as they are.
        const int8_t* xq = x.qk4_at(t0 + t) + 256 * c;
        const __m512 prod = _mm512_mul_ps(ch.sm, _mm512_loadu_ps(x.dds_at(t0 + t) + 16 * c));
        LS_UNROLL
        for (int k = 0; k < 4; ++k) {
          const __m512i p =
              _mm512_dpbusd_epi32(_mm512_setzero_si512(), ch.w[k], _mm512_loadu_si512(xq + 64 * k));
          const __m512 f = _mm512_permutexvar_ps(idx[k], prod);
          acc[t][k % kAcc] = _mm512_fmadd_ps(f, _mm512_cvtepi32_ps(p), acc[t][k % kAcc]);
        }
        acc[t][0] = _mm512_mask_sub_ps(acc[t][0], 0xFF00, acc[t][0], prod);
      } else {
        const int8_t* xq = x.q_at(t0 + t) + 256 * c;
        const __m256 dx = _mm256_loadu_ps(x.d_at(t0 + t) + 8 * c);
        const __m512 sd = _mm512_castps256_ps512(_mm256_mul_ps(ch.s, dx));
        LS_UNROLL
        for (int k = 0; k < 4; ++k) {
          const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ch.w[k],
                                                _mm512_loadu_si512(xq + 64 * k));
          const __m512 f = _mm512_permutexvar_ps(idx[k], sd);
          acc[t][k % kAcc] = _mm512_fmadd_ps(f, _mm512_cvtepi32_ps(p), acc[t][k % kAcc]);
        }
        const __m256 ds = _mm256_loadu_ps(x.ds_at(t0 + t) + 8 * c);
        acc[t][0] =
            _mm512_fnmadd_ps(_mm512_zextps256_ps512(ch.m), _mm512_zextps256_ps512(ds), acc[t][0]);
      }
    }
  }
  LS_UNROLL
  for (int t = 0; t < NT; ++t) {
    __m512 a = acc[t][0];
    if constexpr (kAcc == 2) a = _mm512_add_ps(a, acc[t][1]);
    float r = _mm512_reduce_add_ps(a);
    if constexpr (T == GgmlType::Q4_0 || T == GgmlType::Q8_0)
      if (nb % 8) r += dot_q8_legacy_tail(T, row, x, t0 + t, nb / 8 * 8, nb);
    y[t * ldy] = r;
  }
}

// Q6_K: ql (128), qh (64), scales (16 int8), d. Per 128 values: AB = ql[0..63]
// (zmm: A = bytes 0-31, B = 32-63), H = qh[0..31]:
//   values  0..63  = (AB & 15)        | (HH bits 0-1) << 4,  HH = (H, H >> 2)
//   values 64..127 = (AB >> 4 & 15)   | (HH bits 4-5) << 4
// (x86 has no byte shift: 16-bit shifts pull a neighbour's bits in, and each
// mask drops them). Unsigned 0..63, offset 32 per group of 16.
template <int NT>
LS_VNNI512 void dot_q6_k(const uint8_t* row, const ActQ8View& x, int64_t t0, float* y, int64_t ldy,
                         const RowPrefetch& pf) {
  // Two chains for every token count: a token's sum must not depend on how
  // many share the call (a batch gives each sequence its bits alone), and
  // 8 tokens x 2 accumulators fit AVX-512's 32 registers.
  constexpr int kAcc = 2;
  const int64_t n = x.n, n_chunks = n / 256;
  const __m512i lo_mask = _mm512_set1_epi8(0x0F), hi_mask = _mm512_set1_epi8(0x30);
  // Group g (16 values) -> its 32-block's d_x: lanes 2b, 2b+1 <- b.
  const __m512i pairs = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  __m512i idx[4];  // zmm k covers groups 4k .. 4k+3, four lanes each
  LS_UNROLL
  for (int k = 0; k < 4; ++k)
    idx[k] = _mm512_setr_epi32(4 * k, 4 * k, 4 * k, 4 * k, 4 * k + 1, 4 * k + 1, 4 * k + 1,
                               4 * k + 1, 4 * k + 2, 4 * k + 2, 4 * k + 2, 4 * k + 2, 4 * k + 3,
                               4 * k + 3, 4 * k + 3, 4 * k + 3);
  __m512 acc[NT][kAcc];
  LS_UNROLL
  for (int t = 0; t < NT; ++t) LS_UNROLL
  for (int a = 0; a < kAcc; ++a) acc[t][a] = _mm512_setzero_ps();
  Prefetcher pre(pf, n);
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
    const __m512 s = _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(b.d)),
                                   _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                                       load16(reinterpret_cast<const uint8_t*>(b.scales)))));
    const __m512 m = _mm512_mul_ps(s, _mm512_set1_ps(32.0f));  // exact: a power of two
    LS_UNROLL
    for (int t = 0; t < NT; ++t) {
      const int8_t* xq = x.q_at(t0 + t) + 256 * c;
      const __m512 dx = _mm512_permutexvar_ps(
          pairs, _mm512_castps256_ps512(_mm256_loadu_ps(x.d_at(t0 + t) + 8 * c)));
      const __m512 sd = _mm512_mul_ps(s, dx);
      LS_UNROLL
      for (int k = 0; k < 4; ++k) {
        const __m512i p =
            _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[k], _mm512_loadu_si512(xq + 64 * k));
        const __m512 f = _mm512_permutexvar_ps(idx[k], sd);
        acc[t][k % kAcc] = _mm512_fmadd_ps(f, _mm512_cvtepi32_ps(p), acc[t][k % kAcc]);
      }
      acc[t][0] = _mm512_fnmadd_ps(m, _mm512_loadu_ps(x.ds16_at(t0 + t) + 16 * c), acc[t][0]);
    }
  }
  LS_UNROLL
  for (int t = 0; t < NT; ++t) {
    __m512 a = acc[t][0];
    if constexpr (kAcc == 2) a = _mm512_add_ps(a, acc[t][1]);
    y[t * ldy] = _mm512_reduce_add_ps(a);
  }
}

template <int NT>
LS_VNNI512 void dot_type(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, float* y,
                         int64_t ldy, const RowPrefetch& pf) {
  switch (t) {
    case GgmlType::Q4_0:
      return dot32<GgmlType::Q4_0, NT>(row, x, t0, y, ldy, pf);
    case GgmlType::Q8_0:
      return dot32<GgmlType::Q8_0, NT>(row, x, t0, y, ldy, pf);
    case GgmlType::Q4_K:
      return dot32<GgmlType::Q4_K, NT>(row, x, t0, y, ldy, pf);
    case GgmlType::Q5_K:
      return dot32<GgmlType::Q5_K, NT>(row, x, t0, y, ldy, pf);
    case GgmlType::Q6_K:
      return dot_q6_k<NT>(row, x, t0, y, ldy, pf);
    default:
      assert(false && "dot_q8_avx512vnni: unsupported type");
  }
}

}  // namespace

void dot_q8_avx512vnni(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                       float* y, int64_t ldy, const RowPrefetch& pf) {
  assert(n_tok >= 1 && n_tok <= kDotMaxTokens);
  switch (n_tok) {
    case 1:
      return dot_type<1>(t, row, x, t0, y, ldy, pf);
    case 2:
      return dot_type<2>(t, row, x, t0, y, ldy, pf);
    case 3:
      return dot_type<3>(t, row, x, t0, y, ldy, pf);
    case 4:
      return dot_type<4>(t, row, x, t0, y, ldy, pf);
    case 5:
      return dot_type<5>(t, row, x, t0, y, ldy, pf);
    case 6:
      return dot_type<6>(t, row, x, t0, y, ldy, pf);
    case 7:
      return dot_type<7>(t, row, x, t0, y, ldy, pf);
    default:
      return dot_type<8>(t, row, x, t0, y, ldy, pf);
  }
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
