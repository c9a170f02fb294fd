// The values of a Q6_K block with AVX2, 32 at a time, as the dot kernels
// read them: run k (values 32k .. 32k + 31; h = k / 4, j = k % 4) from A =
// ql[64h ..], B = ql[64h + 32 ..], H = qh[32h ..]:
//   j = 0: A & 15 | (H & 3) << 4        j = 1: B & 15 | (H >> 2 & 3) << 4
//   j = 2: A >> 4 | (H >> 4 & 3) << 4   j = 3: B >> 4 | (H >> 6 & 3) << 4
// (16-bit shifts pull a neighbour's bits in; the masks drop them): the
// unsigned 6-bit quant, 0..63.
// For AVX2 translation units only (x86, inside their own #if).
// defines: q6_k_values()
#pragma once

#include <immintrin.h>

#include "kernels/quant_blocks.h"

namespace ls {

__attribute__((target("avx2"))) inline __m256i q6_k_values(const BlockQ6_K& b, int k) {
  const int h = k / 4, j = k % 4;
  const __m256i ab =
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * h + 32 * (j % 2)));
  const __m256i H = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * h));
  const __m256i lo_mask = _mm256_set1_epi8(0x0F), hi_mask = _mm256_set1_epi8(0x30);
  const __m256i lo = _mm256_and_si256(j < 2 ? ab : _mm256_srli_epi16(ab, 4), lo_mask);
  __m256i hb;  // the pair of high bits moved to bits 4-5
  switch (j) {
    case 0:
      hb = _mm256_slli_epi16(H, 4);
      break;
    case 1:
      hb = _mm256_slli_epi16(H, 2);
      break;
    case 2:
      hb = H;
      break;
    default:
      hb = _mm256_srli_epi16(H, 2);
      break;
  }
  return _mm256_or_si256(lo, _mm256_and_si256(hb, hi_mask));
}

}  // namespace ls
