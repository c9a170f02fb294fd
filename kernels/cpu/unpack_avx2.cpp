// Stage 1 with AVX2: quantized row -> g16 form (kernels/cpu/unpack.h), 32
// quants per instruction, scales and mins in the same pass (8 per
// instruction: the scalar unpacking of the packed 6-bit scales, with its
// fp16 conversions, cost more than the quants and the dot together).
// fp16 -> f32 is F16C's, exact like kernels/half.h's (which matches it, NaN
// quieting included); d * sc is one float multiply, as in the reference.
// Compiled for AVX2 by a target attribute on each
// function, not a global -march, so the binary still runs on CPUs without
// it; isa.h decides at run time whether these may be called.
//
// x86 has no byte shift: a 16-bit shift moves the neighbouring byte's bits in
// at the top, and the mask after each shift drops them.
// defines: unpack_g16_avx2 (kernels/cpu/unpack.h)
#include "kernels/cpu/unpack.h"

#include <cassert>
#include <type_traits>

#include "kernels/quant_blocks.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include "kernels/cpu/q45_k_avx2.h"

#define LS_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace ls {
namespace {

LS_AVX2 inline __m256i load32(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
LS_AVX2 inline void store32(int8_t* p, __m256i v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
}
LS_AVX2 inline float half(uint16_t h) {
  return _cvtsh_ss(h);
}
LS_AVX2 inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  __builtin_memcpy(&v, p, 4);
  return v;
}
// 8 floats v0..v7 -> 16 floats v0 v0 v1 v1 ... v7 v7 at out (one per group
// of 16, for formats whose scale covers 32 values).
LS_AVX2 inline void store_pairs(float* out, __m256 v) {
  const __m256 lo = _mm256_unpacklo_ps(v, v),
               hi = _mm256_unpackhi_ps(v, v);  // v0v0v1v1|v4v4v5v5, v2v2v3v3|v6v6v7v7
  _mm256_storeu_ps(out, _mm256_permute2f128_ps(lo, hi, 0x20));
  _mm256_storeu_ps(out + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
}
// The 12 packed bytes of Q4_K / Q5_K (layout at q4_k_scale_min in
// kernels/quant_blocks.h) as 8 scale bytes and 8 min bytes, four at a time
// in 32-bit words a, b, c (bytes 0-3, 4-7, 8-11):
//   scales 0-3 = a & 63          mins 0-3 = b & 63
//   scales 4-7 = c low nibbles | top 2 bits of a's bytes moved to bits 4-5
//   mins   4-7 = c high nibbles | top 2 bits of b's bytes moved to bits 4-5
LS_AVX2 inline void scales_k4(const uint8_t* packed, float d, float dmin, float* s, float* m) {
  const uint32_t a = load_u32(packed), b = load_u32(packed + 4), c = load_u32(packed + 8);
  const uint64_t sc =
      uint64_t(a & 0x3F3F3F3Fu) | uint64_t((c & 0x0F0F0F0Fu) | ((a >> 2) & 0x30303030u)) << 32;
  const uint64_t mn = uint64_t(b & 0x3F3F3F3Fu) |
                      uint64_t(((c >> 4) & 0x0F0F0F0Fu) | ((b >> 2) & 0x30303030u)) << 32;
  const __m256 scf =
      _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(sc))));
  const __m256 mnf =
      _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(mn))));
  store_pairs(s, _mm256_mul_ps(_mm256_set1_ps(d), scf));
  store_pairs(m, _mm256_mul_ps(_mm256_set1_ps(dmin), mnf));
}

// Q4_0: block of 32 = 16 bytes; low nibbles are values 0..15, high 16..31; q - 8.
LS_AVX2 void unpack_q4_0(const BlockQ4_0* b, int64_t nb, const G16Row& out) {
  const __m128i lo_mask = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
  int8_t* q = out.q;
  for (int64_t i = 0; i < nb; ++i, q += 32) {
    out.s[2 * i] = out.s[2 * i + 1] = half(b[i].d);
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[i].qs));
    const __m128i lo = _mm_sub_epi8(_mm_and_si128(v, lo_mask), eight);
    const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(v, 4), lo_mask), eight);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q), lo);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16), hi);
  }
}

LS_AVX2 void unpack_q8_0(const BlockQ8_0* b, int64_t nb, const G16Row& out) {
  for (int64_t i = 0; i < nb; ++i) {
    out.s[2 * i] = out.s[2 * i + 1] = half(b[i].d);
    store32(out.q + 32 * i, load32(reinterpret_cast<const uint8_t*>(b[i].qs)));
  }
}

// Q4_K / Q5_K: the block's values as kernels/cpu/q45_k_avx2.h reads them.
template <bool kFive>
LS_AVX2 void unpack_q45_k(const uint8_t* blocks, int64_t nb, const G16Row& out) {
  using Block = std::conditional_t<kFive, BlockQ5_K, BlockQ4_K>;
  const Block* b = reinterpret_cast<const Block*>(blocks);
  int8_t* q = out.q;
  for (int64_t i = 0; i < nb; ++i) {
    scales_k4(b[i].scales, half(b[i].d), half(b[i].dmin), out.s + 16 * i, out.m + 16 * i);
    __m256i h = _mm256_setzero_si256();
    if constexpr (kFive) h = load32(b[i].qh);
    for (int c = 0; c < 4; ++c, q += 64) {
      __m256i lo, hi;
      q45_k_values<kFive>(b[i].qs, h, c, &lo, &hi);
      store32(q, lo);
      store32(q + 32, hi);
    }
  }
}

// Q6_K: per 128 values, A = ql[0..31], B = ql[32..63], H = qh[0..31]:
//   values   0..31  = A low  | (H bits 0-1) << 4
//   values  32..63  = B low  | (H bits 2-3) << 4
//   values  64..95  = A high | (H bits 4-5) << 4
//   values  96..127 = B high | (H bits 6-7) << 4,   each minus 32.
// Each pair of high bits is moved to bits 4-5 (a 16-bit shift by 4, 2, 0 or
// -2) and masked with 0x30.
LS_AVX2 void unpack_q6_k(const BlockQ6_K* b, int64_t nb, const G16Row& out) {
  const __m256i lo_mask = _mm256_set1_epi8(0x0F), hi_mask = _mm256_set1_epi8(0x30);
  const __m256i off = _mm256_set1_epi8(32);
  int8_t* q = out.q;
  for (int64_t i = 0; i < nb; ++i) {
    // 16 signed scales, one per group: s = d * sc.
    const __m256 d = _mm256_set1_ps(half(b[i].d));
    const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[i].scales));
    _mm256_storeu_ps(out.s + 16 * i,
                     _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc))));
    _mm256_storeu_ps(
        out.s + 16 * i + 8,
        _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc, 8)))));
    for (int half = 0; half < 2; ++half, q += 128) {
      const __m256i A = load32(b[i].ql + 64 * half), B = load32(b[i].ql + 64 * half + 32);
      const __m256i H = load32(b[i].qh + 32 * half);
      const __m256i h0 = _mm256_and_si256(_mm256_slli_epi16(H, 4), hi_mask);
      const __m256i h1 = _mm256_and_si256(_mm256_slli_epi16(H, 2), hi_mask);
      const __m256i h2 = _mm256_and_si256(H, hi_mask);
      const __m256i h3 = _mm256_and_si256(_mm256_srli_epi16(H, 2), hi_mask);
      const __m256i a_hi = _mm256_and_si256(_mm256_srli_epi16(A, 4), lo_mask);
      const __m256i b_hi = _mm256_and_si256(_mm256_srli_epi16(B, 4), lo_mask);
      store32(q, _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(A, lo_mask), h0), off));
      store32(q + 32, _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(B, lo_mask), h1), off));
      store32(q + 64, _mm256_sub_epi8(_mm256_or_si256(a_hi, h2), off));
      store32(q + 96, _mm256_sub_epi8(_mm256_or_si256(b_hi, h3), off));
    }
  }
}

}  // namespace

void unpack_g16_avx2(GgmlType t, const void* src, int64_t n, const G16Row& out) {
  switch (t) {
    case GgmlType::Q4_0:
      return unpack_q4_0(static_cast<const BlockQ4_0*>(src), n / QK4_0, out);
    case GgmlType::Q8_0:
      return unpack_q8_0(static_cast<const BlockQ8_0*>(src), n / QK8_0, out);
    case GgmlType::Q4_K:
      return unpack_q45_k<false>(static_cast<const uint8_t*>(src), n / QK_K, out);
    case GgmlType::Q5_K:
      return unpack_q45_k<true>(static_cast<const uint8_t*>(src), n / QK_K, out);
    case GgmlType::Q6_K:
      return unpack_q6_k(static_cast<const BlockQ6_K*>(src), n / QK_K, out);
    default:
      assert(false && "unpack_g16_avx2: unsupported type");
  }
}

}  // namespace ls

#else  // not x86: never called (cpu_isa_supported says no), but must link.

namespace ls {
void unpack_g16_avx2(GgmlType t, const void* src, int64_t n, const G16Row& out) {
  unpack_g16_scalar(t, src, n, out);
}
}  // namespace ls

#endif
