// The values of a Q4_K / Q5_K block with AVX2, as the unpacker and the
// GEMM's packer both read them: per 64 values c, the 32 bytes qs[32c..] give
// values 64c + l (low nibbles) and 64c + 32 + l (high nibbles). Q5_K: bit 2c
// of qh[l] adds 16 to the first, bit 2c + 1 to the second (compare-equal
// against the bit turns it into a byte mask, ANDed with 16).
// For AVX2 translation units only (x86, inside their own #if).
// defines: q45_k_values()
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace ls {

// qs: the block's 128 nibble bytes; h: its 32 qh bytes (Q5_K) or zero.
template <bool kFive>
__attribute__((target("avx2"))) inline void q45_k_values(const uint8_t* qs, __m256i h, int c,
                                                         __m256i* lo, __m256i* hi) {
  const __m256i lo_mask = _mm256_set1_epi8(0x0F);
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * c));
  *lo = _mm256_and_si256(v, lo_mask);
  *hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), lo_mask);
  if constexpr (kFive) {
    const __m256i sixteen = _mm256_set1_epi8(16);
    const __m256i b0 = _mm256_set1_epi8(static_cast<char>(1u << (2 * c)));
    const __m256i b1 = _mm256_set1_epi8(static_cast<char>(2u << (2 * c)));
    *lo = _mm256_or_si256(
        *lo, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(h, b0), b0), sixteen));
    *hi = _mm256_or_si256(
        *hi, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(h, b1), b1), sixteen));
  }
}

}  // namespace ls
