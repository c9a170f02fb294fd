// Stage 1 with AVX2: quantized row -> g16 form (kernels/cpu/unpack.h), 32
// quants per instruction. Scales come from the shared scalar code (a few
// floats per 256 values). Compiled for AVX2 by a target attribute on each
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

#define LS_AVX2 __attribute__((target("avx2,fma")))

namespace ls {
namespace {

LS_AVX2 inline __m256i load32(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
LS_AVX2 inline void store32(int8_t* p, __m256i v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
}

// Q4_0: block of 32 = 16 bytes; low nibbles are values 0..15, high 16..31; q - 8.
LS_AVX2 void quants_q4_0(const BlockQ4_0* b, int64_t nb, int8_t* q) {
  const __m128i lo_mask = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
  for (int64_t i = 0; i < nb; ++i, q += 32) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[i].qs));
    const __m128i lo = _mm_sub_epi8(_mm_and_si128(v, lo_mask), eight);
    const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(v, 4), lo_mask), eight);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q), lo);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16), hi);
  }
}

LS_AVX2 void quants_q8_0(const BlockQ8_0* b, int64_t nb, int8_t* q) {
  for (int64_t i = 0; i < nb; ++i, q += 32)
    store32(q, load32(reinterpret_cast<const uint8_t*>(b[i].qs)));
}

// Q4_K / Q5_K: per 64 values c, the 32 bytes qs[32c..] give values 64c + l
// (low nibbles) and 64c + 32 + l (high nibbles). Q5_K: bit 2c of qh[l] adds
// 16 to the first, bit 2c + 1 to the second (compare-equal against the bit
// turns it into a byte mask, ANDed with 16).
template <bool kFive>
LS_AVX2 void quants_q45_k(const uint8_t* blocks, int64_t nb, int8_t* q) {
  using Block = std::conditional_t<kFive, BlockQ5_K, BlockQ4_K>;
  const Block* b = reinterpret_cast<const Block*>(blocks);
  const __m256i lo_mask = _mm256_set1_epi8(0x0F), sixteen = _mm256_set1_epi8(16);
  for (int64_t i = 0; i < nb; ++i) {
    __m256i h = _mm256_setzero_si256();
    if constexpr (kFive) h = load32(b[i].qh);
    for (int c = 0; c < 4; ++c, q += 64) {
      const __m256i v = load32(b[i].qs + 32 * c);
      __m256i lo = _mm256_and_si256(v, lo_mask);
      __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), lo_mask);
      if constexpr (kFive) {
        const __m256i b0 = _mm256_set1_epi8(static_cast<char>(1u << (2 * c)));
        const __m256i b1 = _mm256_set1_epi8(static_cast<char>(2u << (2 * c)));
        lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(h, b0), b0),
                                                  sixteen));
        hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(h, b1), b1),
                                                  sixteen));
      }
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
LS_AVX2 void quants_q6_k(const BlockQ6_K* b, int64_t nb, int8_t* q) {
  const __m256i lo_mask = _mm256_set1_epi8(0x0F), hi_mask = _mm256_set1_epi8(0x30);
  const __m256i off = _mm256_set1_epi8(32);
  for (int64_t i = 0; i < nb; ++i) {
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
  unpack_g16_scales(t, src, n, out);
  switch (t) {
    case GgmlType::Q4_0:
      return quants_q4_0(static_cast<const BlockQ4_0*>(src), n / QK4_0, out.q);
    case GgmlType::Q8_0:
      return quants_q8_0(static_cast<const BlockQ8_0*>(src), n / QK8_0, out.q);
    case GgmlType::Q4_K:
      return quants_q45_k<false>(static_cast<const uint8_t*>(src), n / QK_K, out.q);
    case GgmlType::Q5_K:
      return quants_q45_k<true>(static_cast<const uint8_t*>(src), n / QK_K, out.q);
    case GgmlType::Q6_K:
      return quants_q6_k(static_cast<const BlockQ6_K*>(src), n / QK_K, out.q);
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
