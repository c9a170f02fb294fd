// What the direct tile's files share (kernels/cpu/gemm_q8_direct_*.cpp, the
// kernel of gemm_q8.h's gemm_q8_direct_avx512): the target attribute, the
// tile's signature, and two small vector helpers. For x86 translation units
// built with these targets only.
// defines: LS_DIRECT, LS_DIRECT_UNROLL, DirectTileFn, direct_ld(), direct_hsum(),
//          direct_store(), direct_prefetch_at(), gemm_q8_direct_q8_0_tile()
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/gemm_q8.h"

#define LS_DIRECT \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define LS_DIRECT_UNROLL _Pragma("GCC unroll 16")

namespace ls {

// Rows a and b (b may be a again: computed, not stored) x T tokens of the
// pairs panel x (token t: pair t / 2, half t & 1), nc chunks; y[t * ldy] is
// row a's output, y[t * ldy + 1] row b's where two.
using DirectTileFn = void (*)(const uint8_t* wa, const uint8_t* wb, const GemmQ8XPair* x,
                              int64_t nc, bool two, float* y, int64_t ldy);

LS_DIRECT inline __m512i direct_ld(const int32_t* p) {
  return _mm512_load_si512(p);
}

// The lane form's final sum of 8 lanes (q8_lanes_sum's tree).
LS_DIRECT inline float direct_hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Where chunk c of a tile's rows prefetches, as an offset from the chunk's
// blocks in each of its two rows (nc chunks of kb bytes a row): `ahead`
// bytes on (the packers' distance, pack_prefetch.h; at most a row), and
// past the row's end in the row two on, where the thread's next tile reads
// (rows a + 2 and b + 2). Not the row one on: row a's is b, which this tile
// reads itself, so prefetches past a's end fetched nothing new and the next
// tile's row b + 2 started cold (the 70b's n_in = 8192 rows, 32 chunks:
// half of it at the default 16). The tiles call prefetch_span with it
// themselves: GCC dropped the prefetches of a helper that made the calls,
// inlined or not (it takes code of nothing but prefetches for code without
// effects).
LS_DIRECT inline int64_t direct_prefetch_at(int64_t c, int64_t nc, int64_t kb, int64_t ahead) {
  const int64_t row = nc * kb;
  const int64_t d = ahead < row ? ahead : row;
  return d + (c * kb + d >= row ? row : 0);
}

// Each token's outputs: row a from lanes 0-7, row b from 8-15 where two.
template <int T>
LS_DIRECT inline void direct_store(const __m512 (&acc)[T], bool two, float* y, int64_t ldy) {
  LS_DIRECT_UNROLL
  for (int t = 0; t < T; ++t) {
    y[t * ldy] = direct_hsum(_mm512_castps512_ps256(acc[t]));
    if (two) y[t * ldy + 1] = direct_hsum(_mm512_extractf32x8_ps(acc[t], 1));
  }
}

// The Q8_0 tile for n_tok tokens (gemm_q8_direct_q8_0_avx512.cpp).
DirectTileFn gemm_q8_direct_q8_0_tile(int n_tok);

}  // namespace ls
