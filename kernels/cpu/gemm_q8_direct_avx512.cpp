// The direct tile (kernels/cpu/gemm_q8.h, gemm_q8_direct_avx512): the
// GEMM at 1-8 tokens with no weight pack. The pairs tile's path packs each
// weight row into the interleaved layout (an 8 x 8 transpose of 4-byte
// groups, the scales as floats, 384 bytes a chunk written and read back)
// and then runs 4 rows x 4 tokens from the pack. At 8 tokens a row chunk
// meets only 8 tokens, so the pack is a large share of the work (perf on
// Zen 4 from L2: 36 % of the GEMM at 8 tokens, bench/results/2026-12-05-
// s34-no-device.md), on the same vector ports as the products.
//
// Here a tile is 2 rows x up to 8 tokens, read straight from the GGUF
// blocks: the unpacking below puts one slice (4 values of each of the 8
// blocks, the interleaved order of kernels/cpu/gemm_q8.h) of row a in lanes
// 0-7 and of row b in lanes 8-15, against the pairs panel (GemmQ8XPair).
// For Q4_K, block 2g of a chunk is the low nibbles of its qs bytes 32g..,
// block 2g + 1 the high nibbles, so slice v's lane 2g and 2g + 1 both come
// from qs dword 8g + v:
//   stage 1  per row, two vpermt2d over the 128 qs bytes: lanes 4v' + g =
//            dword 8g + v (v = v' and v' + 4 for the two results);
//   stage 2  per slice, one vpermt2d over both rows' stage-1 vectors puts
//            each dword in its two lanes, and a mask leaves the low nibble
//            in even lanes and the high one in odd lanes where it is, at
//            bits 4-7: 16 u. The odd lanes' scale s is divided by 16 to
//            match (below).
// That is 10 vector operations a row chunk (2 + 8 slices x 2 / 2 rows) in
// place of the pack's ~46 and its stores (Q5_K: a per-lane shift (0 or 4)
// before the mask, and a vpermd, a rotate and a merge more a slice for the
// fifth bit, 26; Q6_K: the same stage 1 over ql, and per slice a second
// vpermt2d and the shift, mask and merge for the qh bits, 26).
// Why the 16 may stay in the product: I' = 16 I exactly (|I| < 2^16), and
// s' = s / 16 exactly (a power of two, far from the subnormals), so
// round(s' d) = round(s d) / 16 and the exact product round(s' d) *
// float(I') is round(s d) * float(I): the lane form's fused step on other
// values with the same result. On Zen 4, one thread, 8 tokens, the 70b's
// Q4_K shapes: 1-4 % faster than shifting (a vpsrlvd a slice, which on
// Intel's cores shares port 0 with vpdpbusd).
// The scales (d * sc and dmin * mn, one float multiply each, as the packer
// makes them) are computed for both rows at once. Then the lane form's steps
// on 16 lanes: vpdpbusd per slice, and per chunk fma(s * d, float(I), acc),
// fma(-m, ds, acc) (Q6_K: per group of 16, as the pairs tile does them): the
// same operations in the same order as every other path, so the same bits
// (tests/unit/kernels/test_cpu_gemm_q8.cpp checks them with memcmp).
// Which 16 lanes: from direct_pairs_min() tokens (4) an accumulator holds one
// row for two tokens, the pairs form, and each row's slice is put in both
// halves of its own register (Q4_K: one vpermd a row from its stage-1
// vector, Stage2Dup; Q5_K, Q6_K: the two-row vector above, split by two
// shuffles); below that, two rows for one token, each token's slice
// broadcast to both halves (gemm_q8_direct_common.h's DirectForm says why).
// defines: gemm_q8_direct_avx512, gemm_q8_direct_supported (kernels/cpu/gemm_q8.h)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <algorithm>
#include <cassert>
#include <cstring>

#include "kernels/cpu/gemm_q8.h"
#include "kernels/cpu/k4_scales.h"
#include "kernels/cpu/pack_prefetch.h"
#include "kernels/quant_blocks.h"
#include "runtime/env.h"

#if defined(__x86_64__) || defined(__i386__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593, see dot_avx512.cpp
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "kernels/cpu/gemm_q8_direct_common.h"

namespace ls {
namespace {

// Stage 1: lanes 4v' + g = qs dword 8g + v' + v0 (the second table's dwords
// are 16..31).
struct Stage1 {
  alignas(64) int32_t i[2][16];
  constexpr Stage1() : i{} {
    for (int h = 0; h < 2; ++h)
      for (int v = 0; v < 4; ++v)
        for (int g = 0; g < 4; ++g) i[h][4 * v + g] = 8 * g + v + 4 * h;
  }
};
// Stage 2, slice v' of a stage-1 pair (row a's vector first, row b's
// second): lanes 2g, 2g + 1 = row a's lane 4v' + g; lanes 8 + 2g, 9 + 2g
// the same of row b.
struct Stage2 {
  alignas(64) int32_t i[4][16];
  constexpr Stage2() : i{} {
    for (int v = 0; v < 4; ++v)
      for (int g = 0; g < 4; ++g)
        for (int e = 0; e < 2; ++e) {
          i[v][2 * g + e] = 4 * v + g;
          i[v][8 + 2 * g + e] = 16 + 4 * v + g;
        }
  }
};
// Stage 2 of one row, into both halves (the pairs form): lanes 2g, 2g + 1
// and 8 + 2g, 9 + 2g = the row's stage-1 lane 4v' + g.
struct Stage2Dup {
  alignas(64) int32_t i[4][16];
  constexpr Stage2Dup() : i{} {
    for (int v = 0; v < 4; ++v)
      for (int l = 0; l < 16; ++l) i[v][l] = 4 * v + (l % 8) / 2;
  }
};
// The nibble of each lane: low (even lanes: block 2g), high (odd lanes).
struct Shifts {
  alignas(64) int32_t i[16];
  constexpr Shifts() : i{} {
    for (int l = 0; l < 16; ++l) i[l] = 4 * (l & 1);
  }
};
// [d_a x 8 | d_b x 8] and [dmin_a x 8 | dmin_b x 8] from [d_a, dmin_a, d_b, dmin_b].
struct DIdx {
  alignas(64) int32_t d[16], dmin[16];
  constexpr DIdx() : d{}, dmin{} {
    for (int l = 0; l < 16; ++l) {
      d[l] = l < 8 ? 0 : 2;
      dmin[l] = l < 8 ? 1 : 3;
    }
  }
};
// Q4_K's nibble of each lane in place: the low nibble of even lanes (block
// 2g), the high nibble of odd ones (block 2g + 1) left at bits 4-7, so 16
// times its value; and the factor that takes that 16 back out of the
// block's scale (exact: a power of two, see q4k_tile).
struct NibbleMasks {
  alignas(64) int32_t m[16];
  alignas(64) float f[16];
  constexpr NibbleMasks() : m{}, f{} {
    for (int l = 0; l < 16; ++l) {
      m[l] = (l & 1) ? static_cast<int32_t>(0xF0F0F0F0u) : 0x0F0F0F0F;
      f[l] = (l & 1) ? 1.0f / 16 : 1.0f;
    }
  }
};
constexpr NibbleMasks kNibbleMasks{};
constexpr Stage1 kStage1{};
constexpr Stage2 kStage2{};
constexpr Stage2Dup kStage2Dup{};
constexpr Shifts kShifts{};
constexpr DIdx kDIdx{};

// s = [d_a * sc_a | d_b * sc_b] and m = [dmin_a * mn_a | dmin_b * mn_b] of a
// chunk of each row (ba, bb: the BlockQ4_K).
LS_DIRECT inline void q4k_scales(const uint8_t* ba, const uint8_t* bb, __m512* s, __m512* m) {
  uint64_t sca, mna, scb, mnb;
  k4_scale_min_bytes(ba + 4, &sca, &mna);
  k4_scale_min_bytes(bb + 4, &scb, &mnb);
  const __m512 scf = _mm512_cvtepi32_ps(
      _mm512_cvtepu8_epi32(_mm_set_epi64x(static_cast<int64_t>(scb), static_cast<int64_t>(sca))));
  const __m512 mnf = _mm512_cvtepi32_ps(
      _mm512_cvtepu8_epi32(_mm_set_epi64x(static_cast<int64_t>(mnb), static_cast<int64_t>(mna))));
  uint32_t da, db;
  std::memcpy(&da, ba, 4);
  std::memcpy(&db, bb, 4);
  const __m512 dd = _mm512_castps128_ps512(
      _mm_cvtph_ps(_mm_set_epi32(0, 0, static_cast<int>(db), static_cast<int>(da))));
  *s = _mm512_mul_ps(_mm512_permutexvar_ps(direct_ld(kDIdx.d), dd), scf);
  *m = _mm512_mul_ps(_mm512_permutexvar_ps(direct_ld(kDIdx.dmin), dd), mnf);
}

// Q5_K's fifth bit of block j's value l is bit j of qh byte l (ggml's
// layout), so slice v's lane j takes qh dword v, turned so that bit j lands
// at 4: one vpermd over both rows' 32 qh bytes a slice.
struct Q5Turns {
  alignas(64) int32_t idx[8][16], rot[16];
  constexpr Q5Turns() : idx{}, rot{} {
    for (int l = 0; l < 16; ++l) {
      for (int v = 0; v < 8; ++v) idx[v][l] = (l < 8 ? 0 : 8) + v;
      rot[l] = (4 - l % 8 + 32) % 32;
    }
  }
};
constexpr Q5Turns kQ5Turns{};

// Rows a and b (b may be a again: computed, not stored) x T tokens of the
// pairs panel x (token t: pair t / 2, half t & 1); Q4_K, or Q5_K (kFive).
template <int T, bool kPairs, bool kFive = false>
LS_DIRECT void q4k_tile(const uint8_t* wa, const uint8_t* wb, const GemmQ8XPair* x, int64_t nc,
                        bool two, float* y, int64_t ldy) {
  using F = DirectForm<T, kPairs>;
  constexpr int NP = F::NP, N = F::N;
  __m512 acc[N];
  F::zero(acc);
  const __m512i sh = direct_ld(kShifts.i), m0f = _mm512_set1_epi8(0x0F);
  const __m512i nib = direct_ld(kNibbleMasks.m);
  const __m512i rot = direct_ld(kQ5Turns.rot), m10 = _mm512_set1_epi8(0x10);
  constexpr int64_t kB = kFive ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K), kQs = kFive ? 48 : 16;
  const int64_t ahead = kB * cpu_pack_ahead();
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
    const __m512i la0 = _mm512_loadu_si512(ba + kQs), la1 = _mm512_loadu_si512(ba + kQs + 64);
    const __m512i lb0 = _mm512_loadu_si512(bb + kQs), lb1 = _mm512_loadu_si512(bb + kQs + 64);
    __m512i qh{};  // Q5_K: [row a's 32 qh bytes | row b's]
    if constexpr (kFive)
      qh = _mm512_inserti64x4(
          _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ba + 16))),
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bb + 16)), 1);
    __m512i A[N];
    F::zero(A);
    LS_DIRECT_UNROLL
    for (int h = 0; h < 2; ++h) {
      const __m512i sa = _mm512_permutex2var_epi32(la0, direct_ld(kStage1.i[h]), la1);
      const __m512i sb = _mm512_permutex2var_epi32(lb0, direct_ld(kStage1.i[h]), lb1);
      // Unrolled, as the h loop is: kept as a loop, GCC 12 moved the T
      // accumulators into other registers and back on every slice of h = 1
      // (16 zmm moves a slice at 8 tokens, 64 a chunk beside 64 vpdpbusd;
      // the Q6_K tile the same); unrolled, 14 a chunk.
      LS_DIRECT_UNROLL
      for (int v = 0; v < 4; ++v) {
        if constexpr (kPairs && !kFive) {
          // Each row's slice straight into both halves (one vpermd a row, in
          // place of the two rows' vpermt2d and two shuffles).
          const __m512i idx = direct_ld(kStage2Dup.i[v]);
          F::products_rows(A, _mm512_and_si512(_mm512_permutexvar_epi32(idx, sa), nib),
                           _mm512_and_si512(_mm512_permutexvar_epi32(idx, sb), nib), xc, 4 * h + v);
          continue;
        }
        __m512i W = _mm512_permutex2var_epi32(sa, direct_ld(kStage2.i[v]), sb);
        if constexpr (kFive) {
          const __m512i hi = _mm512_and_si512(
              _mm512_rolv_epi32(_mm512_permutexvar_epi32(direct_ld(kQ5Turns.idx[4 * h + v]), qh),
                                rot),
              m10);
          W = _mm512_ternarylogic_epi32(_mm512_srlv_epi32(W, sh), m0f, hi, 0xEA);  // (W & m0f) | hi
        } else {
          W = _mm512_and_si512(W, nib);
        }
        F::products(A, W, xc, 4 * h + v);
      }
    }
    __m512 s, m;
    q4k_scales(ba, bb, &s, &m);
    if constexpr (!kFive) s = _mm512_mul_ps(s, _mm512_load_ps(kNibbleMasks.f));
    const __m512 sw[2] = {F::w(s, 0), F::w(s, 1)}, mw[2] = {F::w(m, 0), F::w(m, 1)};
    LS_DIRECT_UNROLL
    for (int i = 0; i < N; ++i) {
      const __m512 d = F::x(xc[i / 2]->d, i), ds = F::x(xc[i / 2]->ds, i);
      const __m512 a =
          _mm512_fmadd_ps(_mm512_mul_ps(sw[i & 1], d), _mm512_cvtepi32_ps(A[i]), acc[i]);
      acc[i] = _mm512_fnmadd_ps(mw[i & 1], ds, a);
    }
  }
  F::store(acc, two, y, ldy);
}

// ---- Q6_K ----
// Block j = 4n + k of a chunk (n: its half of 128 values, k = 0..3): value
// 32k + l of the half is ql byte 64n + 32 (k & 1) + l (low nibble for k < 2,
// high for k >= 2) and bits 2k, 2k + 1 of qh byte 32n + l (ggml's layout).
// So slice v's lane j takes ql dword 16n + 8 (k & 1) + v = 8q + v with q =
// 2n + (k & 1): the Q4_K stage 1 gives it at lane 4v' + q, and stage 2
// places it by q here; and qh dword 8n + v of the row's 16, one vpermt2d
// over both rows' qh a slice, turned so that bits 2k, 2k + 1 land at 4, 5.
struct Q6Stage2 {
  alignas(64) int32_t ql[4][16], qh[8][16];
  constexpr Q6Stage2() : ql{}, qh{} {
    for (int j = 0; j < 8; ++j) {
      const int n = j / 4, k = j % 4;
      for (int v = 0; v < 4; ++v) {
        ql[v][j] = 4 * v + 2 * n + (k & 1);
        ql[v][8 + j] = 16 + 4 * v + 2 * n + (k & 1);
      }
      for (int v = 0; v < 8; ++v) {
        qh[v][j] = 8 * n + v;
        qh[v][8 + j] = 16 + 8 * n + v;
      }
    }
  }
};
struct Q6Turns {
  alignas(64) int32_t nib[16], rot[16];
  constexpr Q6Turns() : nib{}, rot{} {
    for (int l = 0; l < 16; ++l) {
      const int k = l % 4;
      nib[l] = k >= 2 ? 4 : 0;
      rot[l] = (4 - 2 * k + 32) % 32;
    }
  }
};
// [d_a x 8 | d_b x 8] from [d_a, d_b].
struct Q6DIdx {
  alignas(64) int32_t d[16];
  constexpr Q6DIdx() : d{} {
    for (int l = 0; l < 16; ++l) d[l] = l < 8 ? 0 : 1;
  }
};
constexpr Q6Stage2 kQ6Stage2{};
constexpr Q6Turns kQ6Turns{};
constexpr Q6DIdx kQ6DIdx{};

// s_lo = [d_a * sc_a[2j] | d_b * sc_b[2j]], s_hi the same of sc[2j + 1] (the
// unpacker's d * sc, one multiply).
LS_DIRECT inline void q6k_scales(const uint8_t* ba, const uint8_t* bb, __m512* s_lo, __m512* s_hi) {
  const __m256i sc = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(bb + 192),
                                         reinterpret_cast<const __m128i*>(ba + 192));
  // Within each row's 16 bytes: evens, then odds; then [a evens, b evens | a odds, b odds].
  const __m256i eo = _mm256_permute4x64_epi64(
      _mm256_shuffle_epi8(
          sc, _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15, 0, 2, 4, 6, 8,
                               10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15)),
      _MM_SHUFFLE(3, 1, 2, 0));
  uint16_t da, db;
  std::memcpy(&da, ba + 208, 2);
  std::memcpy(&db, bb + 208, 2);
  const __m512 d = _mm512_permutexvar_ps(
      direct_ld(kQ6DIdx.d),
      _mm512_castps128_ps512(_mm_cvtph_ps(
          _mm_set_epi16(0, 0, 0, 0, 0, 0, static_cast<short>(db), static_cast<short>(da)))));
  *s_lo = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(eo))));
  *s_hi =
      _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(eo, 1))));
}

template <int T, bool kPairs>
LS_DIRECT void q6k_tile(const uint8_t* wa, const uint8_t* wb, const GemmQ8XPair* x, int64_t nc,
                        bool two, float* y, int64_t ldy) {
  using F = DirectForm<T, kPairs>;
  constexpr int NP = F::NP, N = F::N;
  __m512 acc[N];
  F::zero(acc);
  const __m512i nib = direct_ld(kQ6Turns.nib), rot = direct_ld(kQ6Turns.rot);
  const __m512i m0f = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
  const __m512 k32 = _mm512_set1_ps(32.0f);
  constexpr int64_t kB = sizeof(BlockQ6_K);
  const int64_t ahead = kB * cpu_pack_ahead();
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
    const __m512i la0 = _mm512_loadu_si512(ba), la1 = _mm512_loadu_si512(ba + 64);
    const __m512i lb0 = _mm512_loadu_si512(bb), lb1 = _mm512_loadu_si512(bb + 64);
    const __m512i ha = _mm512_loadu_si512(ba + 128), hb = _mm512_loadu_si512(bb + 128);
    __m512 s[2];
    q6k_scales(ba, bb, &s[0], &s[1]);
    // Slices 0-3 hold each block's first 16 values (its lo group), 4-7 its
    // last 16: each group's term is added as it is done, the lane form's order.
    LS_DIRECT_UNROLL
    for (int h = 0; h < 2; ++h) {
      const __m512i sa = _mm512_permutex2var_epi32(la0, direct_ld(kStage1.i[h]), la1);
      const __m512i sb = _mm512_permutex2var_epi32(lb0, direct_ld(kStage1.i[h]), lb1);
      __m512i A[N];
      F::zero(A);
      // Unrolled as in q4k_tile: no accumulator moves a slice.
      LS_DIRECT_UNROLL
      for (int v = 0; v < 4; ++v) {
        const __m512i lo =
            _mm512_srlv_epi32(_mm512_permutex2var_epi32(sa, direct_ld(kQ6Stage2.ql[v]), sb), nib);
        const __m512i hi = _mm512_and_si512(
            _mm512_rolv_epi32(_mm512_permutex2var_epi32(ha, direct_ld(kQ6Stage2.qh[4 * h + v]), hb),
                              rot),
            m30);
        const __m512i W = _mm512_ternarylogic_epi32(lo, m0f, hi, 0xEA);  // (lo & m0f) | hi
        F::products(A, W, xc, 4 * h + v);
      }
      const __m512 sw[2] = {F::w(s[h], 0), F::w(s[h], 1)};
      LS_DIRECT_UNROLL
      for (int i = 0; i < N; ++i)
        acc[i] = _mm512_fmadd_ps(_mm512_mul_ps(sw[i & 1], F::x(xc[i / 2]->d, i)),
                                 _mm512_cvtepi32_ps(A[i]), acc[i]);
    }
    const __m512 m_lo = _mm512_mul_ps(k32, s[0]), m_hi = _mm512_mul_ps(k32, s[1]);
    const __m512 lw[2] = {F::w(m_lo, 0), F::w(m_lo, 1)}, hw[2] = {F::w(m_hi, 0), F::w(m_hi, 1)};
    LS_DIRECT_UNROLL
    for (int i = 0; i < N; ++i) {
      const __m512 dl = F::x(xc[i / 2]->ds_lo, i), dh = F::x(xc[i / 2]->ds_hi, i);
      acc[i] = _mm512_fnmadd_ps(hw[i & 1], dh, _mm512_fnmadd_ps(lw[i & 1], dl, acc[i]));
    }
  }
  F::store(acc, two, y, ldy);
}

}  // namespace

bool gemm_q8_direct_supported(GgmlType t, int64_t n) {
  const bool k = t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q6_K;
  // Q8_0 rows that end inside a chunk are packed (the packer pads them).
  const bool q8 = t == GgmlType::Q8_0 && n > 0 && n % 256 == 0;
  return (k || q8) && gemm_q8_pairs_supported();
}

int direct_pairs_min() {
  static const int v = static_cast<int>(
      std::min<int64_t>(env_int("LS_DIRECT_PAIRS_MIN", 4, 2), kGemmQ8DirectToks + 1));
  return v;
}

namespace {
// The tile of each token count and form, per type.
template <int T, bool P>
struct Q4k {
  static constexpr DirectTileFn fn = q4k_tile<T, P>;
};
template <int T, bool P>
struct Q5k {
  static constexpr DirectTileFn fn = q4k_tile<T, P, true>;
};
template <int T, bool P>
struct Q6k {
  static constexpr DirectTileFn fn = q6k_tile<T, P>;
};
template <template <int, bool> class K, bool P>
constexpr DirectTileFn kTiles[kGemmQ8DirectToks] = {K<1, P>::fn, K<2, P>::fn, K<3, P>::fn,
                                                    K<4, P>::fn, K<5, P>::fn, K<6, P>::fn,
                                                    K<7, P>::fn, K<8, P>::fn};
template <template <int, bool> class K>
DirectTileFn tile_of(int n_tok, bool pairs) {
  return pairs ? kTiles<K, true>[n_tok - 1] : kTiles<K, false>[n_tok - 1];
}
}  // namespace

void gemm_q8_direct_avx512(GgmlType t, const uint8_t* w, uint64_t row_bytes, int n_rows,
                           const GemmQ8XChunk* x, int n_tok, int64_t nc, float* y, int64_t ldy,
                           int pairs_min) {
  assert(gemm_q8_direct_supported(t, 256 * nc) && n_rows >= 1 && n_rows <= kGemmQ8DirectRows &&
         n_tok >= 1 && n_tok <= kGemmQ8DirectToks);
  const bool pairs = n_tok >= (pairs_min > 0 ? pairs_min : direct_pairs_min());
  const DirectTileFn tile = t == GgmlType::Q6_K   ? tile_of<Q6k>(n_tok, pairs)
                            : t == GgmlType::Q5_K ? tile_of<Q5k>(n_tok, pairs)
                            : t == GgmlType::Q8_0 ? gemm_q8_direct_q8_0_tile(n_tok, pairs)
                                                  : tile_of<Q4k>(n_tok, pairs);
  const GemmQ8XPair* xp = reinterpret_cast<const GemmQ8XPair*>(x);
  for (int r = 0; r < n_rows; r += 2) {
    const uint8_t* wa = w + r * row_bytes;
    const bool two = r + 1 < n_rows;
    tile(wa, two ? wa + row_bytes : wa, xp, nc, two, y + r, ldy);
  }
}

}  // namespace ls

#else  // not x86: never called (gemm_q8_direct_supported is false), but must link.

namespace ls {
bool gemm_q8_direct_supported(GgmlType, int64_t) {
  return false;
}
void gemm_q8_direct_avx512(GgmlType, const uint8_t*, uint64_t, int, const GemmQ8XChunk*, int,
                           int64_t, float*, int64_t, int) {}
}  // namespace ls

#endif
