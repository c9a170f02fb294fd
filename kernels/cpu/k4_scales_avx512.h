// The 6-bit scales and mins of a Q4_K / Q5_K block as 16 bytes in one xmm,
// [sc 0-7 | mn 0-7], from the block's first 16 bytes (d, dmin, the 12
// packed bytes) in vector code, no scalar step: the layout of
// kernels/cpu/k4_scales.h, with A, B, C its words 0-3, 4-7, 8-11 (block
// bytes 4-7, 8-11, 12-15): the bytes [A, C, B, C] and [0, A, 0, B] give
//   sc 0-3 = A & 63                  sc 4-7 = C & 15        | (A >> 2) & 48
//   mn 0-3 = B & 63                  mn 4-7 = (C >> 4) & 15 | (B >> 2) & 48
// Shared by the lane form's AVX-512 dot (which turns them into floats) and
// the chunk form's (which keeps them as integers). Needs AVX-512 BW + VL
// (the masked byte blends); for such translation units only (x86).
// defines: k4_scale_min_xmm()
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace ls {

__attribute__((target("avx512f,avx512bw,avx512vl"))) inline __m128i k4_scale_min_xmm(__m128i v) {
  const __m128i t =
      _mm_shuffle_epi8(v, _mm_setr_epi8(4, 5, 6, 7, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15));
  const __m128i u =
      _mm_shuffle_epi8(v, _mm_setr_epi8(-1, -1, -1, -1, 4, 5, 6, 7, -1, -1, -1, -1, 8, 9, 10, 11));
  const __m128i m15 = _mm_set1_epi8(15);
  const __m128i c_lo = _mm_and_si128(t, m15), c_hi = _mm_and_si128(_mm_srli_epi16(t, 4), m15);
  const __m128i top = _mm_and_si128(_mm_srli_epi16(u, 2), _mm_set1_epi8(48));
  const __m128i hi = _mm_or_si128(_mm_mask_blend_epi8(0xF000, c_lo, c_hi), top);
  const __m128i lo = _mm_and_si128(t, _mm_set1_epi8(63));
  return _mm_mask_blend_epi8(0xF0F0, lo, hi);
}

}  // namespace ls
