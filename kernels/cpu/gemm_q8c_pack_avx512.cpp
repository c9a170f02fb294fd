// gemm_q8c_pack_w_fast (kernels/cpu/gemm_q8c.h): the two byte planes of a
// K-quant row with AVX-512 BW, 32 values at a time in 16-bit lanes (u
// unpacked, times its sub-block's scale, then v >> 6 and v & 63 narrowed to
// bytes), for Q4_K and Q6_K (the 70B Q4_K_M's types); Q5_K and CPUs without
// the instructions take the plain C++ packer. Same bytes as gemm_q8c_pack_w
// (tests/unit/kernels/test_cpu_q8_chunks.cpp compares them where the CPU
// runs this).
// defines: gemm_q8c_pack_w_fast (kernels/cpu/gemm_q8c.h)
#include <cstring>

#include "kernels/cpu/gemm_q8c.h"
#include "kernels/cpu/k4_scales.h"
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

LS_PACK_TARGET void pack_q4k(const uint8_t* row, int64_t nc, GemmQ8cW* out, int r) {
  const __m512i nib = _mm512_set1_epi16(15);
  for (int64_t c = 0; c < nc; ++c) {
    const BlockQ4_K& b = reinterpret_cast<const BlockQ4_K*>(row)[c];
    GemmQ8cW& o = out[c];
    uint64_t sc8, mn8;
    k4_scale_min_bytes(b.scales, &sc8, &mn8);
    uint8_t sc[8], mn[8];
    std::memcpy(sc, &sc8, 8);
    std::memcpy(mn, &mn8, 8);
    for (int k = 0; k < 4; ++k) {
      const __m512i q =
          _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * k)));
      const __m512i lo = _mm512_mullo_epi16(_mm512_and_si512(q, nib), _mm512_set1_epi16(sc[2 * k]));
      const __m512i hi =
          _mm512_mullo_epi16(_mm512_srli_epi16(q, 4), _mm512_set1_epi16(sc[2 * k + 1]));
      planes(lo, o.hi[k][r], o.lo[k][r]);
      planes(hi, o.hi[k][r] + 32, o.lo[k][r] + 32);
    }
    o.d[r] = fp16_to_fp32(b.d);
    o.dmin[r] = fp16_to_fp32(b.dmin);
    for (int p = 0; p < 4; ++p) o.mn[p][r] = int32_t{mn[2 * p]} | int32_t{mn[2 * p + 1]} << 16;
  }
}

LS_PACK_TARGET void pack_q6k(const uint8_t* row, int64_t nc, GemmQ8cW* out, int r) {
  const __m512i low4 = _mm512_set1_epi16(15), two = _mm512_set1_epi16(3 << 4);
  const __m512i off = _mm512_set1_epi16(32);
  for (int64_t c = 0; c < nc; ++c) {
    const BlockQ6_K& b = reinterpret_cast<const BlockQ6_K*>(row)[c];
    GemmQ8cW& o = out[c];
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
  if (has_bw() && t == GgmlType::Q4_K) return pack_q4k(row, n / 256, out, r);
  if (has_bw() && t == GgmlType::Q6_K) return pack_q6k(row, n / 256, out, r);
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
