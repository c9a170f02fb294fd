// The direct tile for Q8_0 (kernels/cpu/gemm_q8_direct_avx512.cpp says what
// the direct tile is): 2 rows x up to 8 tokens straight from the blocks, no
// weight pack. A chunk of a Q8_0 row is 8 blocks of 34 bytes (an fp16 d,
// then 32 signed quants), so its quants are not where the Q4_K gather takes
// them; here they take three rounds of vpermt2d (each output lane named by
// the (row, block, dword) it holds, the indices derived from those names):
//   loads  per row, [block 2k | block 2k + 1] in a zmm (k = 0..3);
//   A      per block pair k, both rows: slices 4h .. 4h + 3 (h = 0, 1) of
//          blocks 2k and 2k + 1 of both rows;
//   B      blocks 0-3 and 4-7 apart: two slices of both rows' four blocks;
//   C      per slice, blocks 0-7 of row a in lanes 0-7, of row b in 8-15:
//          the pairs tile's zmm.
// 24 permutes and 8 inserts a row pair's chunk. The quants go in as q + 128
// (vpdpbusd's unsigned operand: the sign bit flipped) and 128 times the
// block's sum of x comes back off, as the pairs tile does; s = d, no m.
// The same operations on each lane as every other path: the same bits.
// defines: gemm_q8_direct_q8_0_tile (kernels/cpu/gemm_q8_direct_common.h)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#if defined(__x86_64__) || defined(__i386__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593, see dot_avx512.cpp
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <cstring>

#include "kernels/cpu/gemm_q8_direct_common.h"
#include "kernels/cpu/pack_prefetch.h"
#include "kernels/quant_blocks.h"

namespace ls {
namespace {

// A lane's content: row r (0: a, 1: b), block j of the chunk, dword v of
// the block (its values 4v .. 4v + 3).
constexpr int tag(int r, int j, int v) {
  return r * 64 + j * 8 + v;
}

// The vpermt2d index that gives want[] from tables a (0..15) and b (16..31).
constexpr void pick(const int (&a)[16], const int (&b)[16], const int (&want)[16],
                    int32_t (&idx)[16]) {
  for (int l = 0; l < 16; ++l) {
    idx[l] = 0;
    for (int i = 0; i < 16; ++i) {
      if (a[i] == want[l]) idx[l] = i;
      if (b[i] == want[l]) idx[l] = 16 + i;
    }
  }
}

struct Q8Perms {
  alignas(64) int32_t a[2][16];  // A, by h
  alignas(64) int32_t b[2][16];  // B, by w (the slice pair within h)
  alignas(64) int32_t c[2][16];  // C, by z (the slice within the pair)
  constexpr Q8Perms() : a{}, b{}, c{} {
    // Loads of block pair 0 of rows a and b (the others alike).
    int la[16] = {}, lb[16] = {};
    for (int l = 0; l < 16; ++l) {
      la[l] = tag(0, l / 8, l % 8);
      lb[l] = tag(1, l / 8, l % 8);
    }
    // A's output for block pair k: lane 4u + e = slice 4h + u of row e / 2,
    // block 2k + e % 2.
    auto a_out = [](int k, int h, int(&o)[16]) {
      for (int u = 0; u < 4; ++u)
        for (int e = 0; e < 4; ++e) o[4 * u + e] = tag(e / 2, 2 * k + e % 2, 4 * h + u);
    };
    // B's output for block pairs (k0, k0 + 1): lane 8z + i = slice 4h + 2w +
    // z of row i / 4, block 2k0 + i % 4.
    auto b_out = [](int k0, int h, int w, int(&o)[16]) {
      for (int z = 0; z < 2; ++z)
        for (int i = 0; i < 8; ++i) o[8 * z + i] = tag(i / 4, 2 * k0 + i % 4, 4 * h + 2 * w + z);
    };
    for (int h = 0; h < 2; ++h) {
      int want[16] = {};
      a_out(0, h, want);
      pick(la, lb, want, a[h]);
    }
    int a0[16] = {}, a1[16] = {};
    a_out(0, 0, a0);
    a_out(1, 0, a1);
    for (int w = 0; w < 2; ++w) {
      int want[16] = {};
      b_out(0, 0, w, want);
      pick(a0, a1, want, b[w]);
    }
    int b01[16] = {}, b23[16] = {};
    b_out(0, 0, 0, b01);
    b_out(2, 0, 0, b23);
    for (int z = 0; z < 2; ++z) {
      int want[16] = {};
      for (int l = 0; l < 16; ++l) want[l] = tag(l / 8, l % 8, z);
      pick(b01, b23, want, c[z]);
    }
  }
};
constexpr Q8Perms kQ8Perms{};

// Block pair k of a row chunk: [block 2k's quants | block 2k + 1's].
LS_DIRECT inline __m512i pair_quants(const uint8_t* chunk, int k) {
  const uint8_t* p = chunk + sizeof(BlockQ8_0) * 2 * k + 2;
  return _mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))),
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + sizeof(BlockQ8_0))), 1);
}

template <int T, bool kPairs>
LS_DIRECT void q8_0_tile(const uint8_t* wa, const uint8_t* wb, const GemmQ8XPair* x, int64_t nc,
                         bool two, float* y, int64_t ldy) {
  using F = DirectForm<T, kPairs>;
  constexpr int NP = F::NP, N = F::N;
  constexpr int64_t kB = 8 * sizeof(BlockQ8_0);  // a chunk's bytes
  __m512 acc[N];
  F::zero(acc);
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const int64_t ahead = kB * cpu_pack_ahead();  // the packers' distance, in chunks
  for (int64_t c = 0; c < nc; ++c) {
    const uint8_t* ba = wa + kB * c;
    const uint8_t* bb = wb + kB * c;
    if (ahead > 0) {
      const int64_t at = direct_prefetch_at(c, nc, kB, ahead);
      prefetch_span(ba, at, kB);
      prefetch_span(bb, at, kB);
    }
    const GemmQ8XPair* xc[NP];
    LS_DIRECT_UNROLL
    for (int p = 0; p < NP; ++p) xc[p] = x + p * nc + c;
    // s = d of each block, [row a | row b].
    alignas(32) uint16_t dh[16];
    for (int j = 0; j < 8; ++j) {
      std::memcpy(&dh[j], ba + sizeof(BlockQ8_0) * j, 2);
      std::memcpy(&dh[8 + j], bb + sizeof(BlockQ8_0) * j, 2);
    }
    const __m512 s = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(dh)));
    __m512i A[N];
    F::zero(A);
    LS_DIRECT_UNROLL
    for (int h = 0; h < 2; ++h) {
      __m512i pa[4];
      LS_DIRECT_UNROLL
      for (int k = 0; k < 4; ++k)
        pa[k] = _mm512_permutex2var_epi32(pair_quants(ba, k), direct_ld(kQ8Perms.a[h]),
                                          pair_quants(bb, k));
      LS_DIRECT_UNROLL
      for (int w = 0; w < 2; ++w) {
        const __m512i q01 = _mm512_permutex2var_epi32(pa[0], direct_ld(kQ8Perms.b[w]), pa[1]);
        const __m512i q23 = _mm512_permutex2var_epi32(pa[2], direct_ld(kQ8Perms.b[w]), pa[3]);
        LS_DIRECT_UNROLL
        for (int z = 0; z < 2; ++z) {
          const __m512i W =
              _mm512_xor_si512(_mm512_permutex2var_epi32(q01, direct_ld(kQ8Perms.c[z]), q23), flip);
          F::products(A, W, xc, 4 * h + 2 * w + z);
        }
      }
    }
    const __m512 sw[2] = {F::w(s, 0), F::w(s, 1)};
    LS_DIRECT_UNROLL
    for (int i = 0; i < N; ++i) {
      const __m512 d = F::x(xc[i / 2]->d, i);
      // (q + 128) . x summed: take 128 sum(x) back off.
      const __m512i I = _mm512_sub_epi32(A[i], _mm512_slli_epi32(F::xi(xc[i / 2]->sum, i), 7));
      acc[i] = _mm512_fmadd_ps(_mm512_mul_ps(sw[i & 1], d), _mm512_cvtepi32_ps(I), acc[i]);
    }
  }
  F::store(acc, two, y, ldy);
}

}  // namespace

DirectTileFn gemm_q8_direct_q8_0_tile(int n_tok, bool pairs) {
  static constexpr DirectTileFn rows[kGemmQ8DirectToks] = {
      q8_0_tile<1, false>, q8_0_tile<2, false>, q8_0_tile<3, false>, q8_0_tile<4, false>,
      q8_0_tile<5, false>, q8_0_tile<6, false>, q8_0_tile<7, false>, q8_0_tile<8, false>};
  static constexpr DirectTileFn pair_tiles[kGemmQ8DirectToks] = {
      q8_0_tile<1, true>, q8_0_tile<2, true>, q8_0_tile<3, true>, q8_0_tile<4, true>,
      q8_0_tile<5, true>, q8_0_tile<6, true>, q8_0_tile<7, true>, q8_0_tile<8, true>};
  return (pairs ? pair_tiles : rows)[n_tok - 1];
}

}  // namespace ls

#endif
