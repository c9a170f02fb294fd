// gemm_q8c_pack_w_fast (kernels/cpu/gemm_q8c.h): the two byte planes of a
// K-quant row with AVX-512 BW, for Q4_K and Q6_K (the 70B Q4_K_M's types);
// Q5_K and CPUs without the instructions take the plain C++ packer. Same
// bytes as gemm_q8c_pack_w (tests/unit/kernels/test_cpu_q8_chunks.cpp
// compares them where the CPU runs this).
//
// Q4_K by table: v = sc·u has only 16 values for a sub-block's scale sc
// (u is 4 bits), so a sub-block's hi and lo planes are byte shuffles of its
// nibbles through 16-byte rows of two tables indexed by sc (vpshufb: 64
// values a shuffle, no 16-bit products, no narrowing). Q6_K's u has 6 bits:
// 32 values at a time in 16-bit lanes (u unpacked, times its group's scale,
// then v >> 6 and v & 63 narrowed to bytes). On the H200 machine's Xeon,
// 16 threads, the AMX GEMM at 8-32 tokens read a 70B layer's Q4_K 5-22 %
// faster with the tables than with 16-bit products (geometric means over
// its four shapes, two rounds; bench/results/2026-12-04-h200-s30.md).
// Both prefetch the block cpu_pack_ahead() on (kernels/cpu/pack_prefetch.h).
// defines: gemm_q8c_pack_w_fast (kernels/cpu/gemm_q8c.h)
#include <cstring>

#include "kernels/cpu/gemm_q8c.h"
#include "kernels/cpu/k4_scales.h"
#include "kernels/cpu/pack_prefetch.h"
#include "kernels/half.h"
#include "kernels/quant_blocks.h"

#if defined(__x86_64__) || defined(__i386__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593, see dot_avx512.cpp
#endif
#include <immintrin.h>
#define LS_PACK_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx2")))

namespace ls {
namespace {

// 32 values' v (16-bit lanes) into the planes at hi, lo.
LS_PACK_TARGET inline void planes(__m512i v, int8_t* hi, uint8_t* lo) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(hi),
                      _mm512_cvtepi16_epi8(_mm512_srai_epi16(v, 6)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(lo),
                      _mm512_cvtepi16_epi8(_mm512_and_si512(v, _mm512_set1_epi16(63))));
}

// kHi[sc][u] = (sc·u) >> 6, kLo[sc][u] = (sc·u) & 63: a 16-byte row per
// 6-bit scale.
struct PlaneTables {
  alignas(64) uint8_t hi[64][16];
  alignas(64) uint8_t lo[64][16];
};
constexpr PlaneTables kPlanes = [] {
  PlaneTables t{};
  for (int sc = 0; sc < 64; ++sc)
    for (int u = 0; u < 16; ++u) {
      t.hi[sc][u] = static_cast<uint8_t>((sc * u) >> 6);
      t.lo[sc][u] = static_cast<uint8_t>((sc * u) & 63);
    }
  return t;
}();

// Sub-blocks a (lanes 0-1) and b (lanes 2-3) of a table, one row each.
LS_PACK_TARGET inline __m512i table_pair(const uint8_t (*t)[16], int a, int b) {
  const __m512i ta = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(t[a])));
  return _mm512_mask_broadcast_i32x4(ta, 0xFF00,
                                     _mm_load_si128(reinterpret_cast<const __m128i*>(t[b])));
}

LS_PACK_TARGET void pack_q4k(const uint8_t* row, int64_t nc, GemmQ8cW* out, int r, int64_t ahead) {
  const __m512i nib = _mm512_set1_epi8(15);
  // Words of the low 256 bits shifted by 0, of the high 256 bits by 4: the
  // same 32 bytes in both halves give the low nibbles, then the high ones.
  const __m512i shift = _mm512_maskz_set1_epi16(0xFFFF0000u, 4);
  for (int64_t c = 0; c < nc; ++c) {
    const BlockQ4_K& b = reinterpret_cast<const BlockQ4_K*>(row)[c];
    GemmQ8cW& o = out[c];
    if (ahead > 0) prefetch_span(&b, ahead * int64_t{sizeof(BlockQ4_K)}, sizeof(BlockQ4_K));
    uint64_t sc8, mn8;
    k4_scale_min_bytes(b.scales, &sc8, &mn8);
    uint8_t sc[8], mn[8];
    std::memcpy(sc, &sc8, 8);
    std::memcpy(mn, &mn8, 8);
    for (int k = 0; k < 4; ++k) {
      // Values 64k .. 64k + 63: qs[32k + l]'s low nibble is value 64k + l
      // (sub-block 2k), its high nibble value 64k + 32 + l (2k + 1).
      const __m512i q = _mm512_broadcast_i64x4(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * k)));
      const __m512i u = _mm512_and_si512(_mm512_srlv_epi16(q, shift), nib);
      _mm512_storeu_si512(o.hi[k][r],
                          _mm512_shuffle_epi8(table_pair(kPlanes.hi, sc[2 * k], sc[2 * k + 1]), u));
      _mm512_storeu_si512(o.lo[k][r],
                          _mm512_shuffle_epi8(table_pair(kPlanes.lo, sc[2 * k], sc[2 * k + 1]), u));
    }
    o.d[r] = fp16_to_fp32(b.d);
    o.dmin[r] = fp16_to_fp32(b.dmin);
    for (int p = 0; p < 4; ++p) o.mn[p][r] = int32_t{mn[2 * p]} | int32_t{mn[2 * p + 1]} << 16;
  }
}

LS_PACK_TARGET void pack_q6k(const uint8_t* row, int64_t nc, GemmQ8cW* out, int r, int64_t ahead) {
  const __m512i low4 = _mm512_set1_epi16(15), two = _mm512_set1_epi16(3 << 4);
  const __m512i off = _mm512_set1_epi16(32);
  for (int64_t c = 0; c < nc; ++c) {
    const BlockQ6_K& b = reinterpret_cast<const BlockQ6_K*>(row)[c];
    GemmQ8cW& o = out[c];
    if (ahead > 0) prefetch_span(&b, ahead * int64_t{sizeof(BlockQ6_K)}, sizeof(BlockQ6_K));
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = b.ql + 64 * h;
      const __m512i l0 =
          _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql)));
      const __m512i l1 =
          _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32)));
      const __m512i qh =
          _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * h)));
      // The four runs of 32 values of this half: low bits and the pair of qh.
      const __m512i u[4] = {
          _mm512_or_si512(_mm512_and_si512(l0, low4),
                          _mm512_and_si512(_mm512_slli_epi16(qh, 4), two)),
          _mm512_or_si512(_mm512_and_si512(l1, low4),
                          _mm512_and_si512(_mm512_slli_epi16(qh, 2), two)),
          _mm512_or_si512(_mm512_srli_epi16(l0, 4), _mm512_and_si512(qh, two)),
          _mm512_or_si512(_mm512_srli_epi16(l1, 4),
                          _mm512_and_si512(_mm512_srli_epi16(qh, 2), two)),
      };
      for (int m = 0; m < 4; ++m) {
        const int g = 8 * h + 2 * m;  // the first of the run's two groups of 16
        const __m512i sc = _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16(b.scales[g]),
                                                   _mm512_set1_epi16(b.scales[g + 1]));
        const __m512i v = _mm512_mullo_epi16(_mm512_sub_epi16(u[m], off), sc);
        const int s = 2 * h + m / 2, at = 32 * (m % 2);  // values 128h + 32m ..
        planes(v, o.hi[s][r] + at, o.lo[s][r] + at);
      }
    }
    o.d[r] = fp16_to_fp32(b.d);
    o.dmin[r] = 0;
    for (int p = 0; p < 4; ++p) o.mn[p][r] = 0;
  }
}

bool has_bw() {
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vl");
  return ok;
}

}  // namespace

void gemm_q8c_pack_w_fast(GgmlType t, const uint8_t* row, int64_t n, GemmQ8cW* out, int r) {
  if (has_bw() && t == GgmlType::Q4_K) return pack_q4k(row, n / 256, out, r, cpu_pack_ahead());
  if (has_bw() && t == GgmlType::Q6_K) return pack_q6k(row, n / 256, out, r, cpu_pack_ahead());
  gemm_q8c_pack_w(t, row, n, out, r);
}

}  // namespace ls

#else

namespace ls {
void gemm_q8c_pack_w_fast(GgmlType t, const uint8_t* row, int64_t n, GemmQ8cW* out, int r) {
  gemm_q8c_pack_w(t, row, n, out, r);
}
}  // namespace ls

#endif
