// CPU reference (de)quantization of the ggml block formats.
//
// Dequantizers are bit-exact with ggml's dequantize_row_* (same float
// operations in the same order); quantizers follow ggml's reference
// quantizers quantize_row_*_ref (no importance matrix), bit-exact too, so a
// file we write is the file llama-quantize writes. tests/unit/kernels/
// test_quant.cpp checks both against golden data made by ggml itself.
//
// Bit-exactness needs plain IEEE float arithmetic: no fast-math, and no
// fused multiply-add contraction (ggml's reference path is compiled without
// it; "a*b - c" fused would round differently). The pragmas below turn
// contraction off for this file whatever -march the build uses.
//
// Layouts of the blocks are in kernels/quant_blocks.h; the bit tricks are
// explained again here where they are decoded.
// defines: dequantize_row, quantize_row, can_quantize (kernels/ref/quant.h)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "kernels/ref/quant.h"

#include <cassert>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "kernels/half.h"
#include "kernels/quant_blocks.h"

namespace ls {
namespace {

// Round to nearest, ties to even, for |f| < 2^22: adding 1.5 * 2^23 leaves
// no fraction bits in the mantissa, so the addition itself rounds; the low
// 23 bits are then the integer plus 2^22. (ggml rounds this way in the
// K-quant quantizers; lrintf would agree but be slower, roundf would not.)
inline int nearest_int(float f) {
  const float v = f + 12582912.f;
  return static_cast<int>(f32_to_bits(v) & 0x007fffffu) - 0x00400000;
}

inline float h2f(uint16_t h) {
  return fp16_to_fp32(h);
}

template <typename T>
inline T min_of(T a, T b) {
  return a < b ? a : b;
}
template <typename T>
inline T max_of(T a, T b) {
  return a > b ? a : b;
}

// ======================================================================================
// Dequantization
// ======================================================================================

// Q4_0: value j of the block is the low nibble of qs[j] and value j + 16 the
// high nibble; x = d * (q - 8).
void dequantize_q4_0(const BlockQ4_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += QK4_0) {
    const float d = h2f(b[i].d);
    for (int j = 0; j < QK4_0 / 2; ++j) {
      const int x0 = (b[i].qs[j] & 0x0F) - 8;
      const int x1 = (b[i].qs[j] >> 4) - 8;
      y[j] = x0 * d;
      y[j + QK4_0 / 2] = x1 * d;
    }
  }
}

// Q4_1: nibbles as Q4_0, unsigned; x = d * q + m.
void dequantize_q4_1(const BlockQ4_1* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += QK4_1) {
    const float d = h2f(b[i].d);
    const float m = h2f(b[i].m);
    for (int j = 0; j < QK4_1 / 2; ++j) {
      const int x0 = b[i].qs[j] & 0x0F;
      const int x1 = b[i].qs[j] >> 4;
      y[j] = x0 * d + m;
      y[j + QK4_1 / 2] = x1 * d + m;
    }
  }
}

// The 5th bit of value j (0..31) of a Q5_0 / Q5_1 block is bit j of qh read
// as a little-endian uint32; returned here already in place (0 or 16).
inline int q5_high(uint32_t qh, int j) {
  return static_cast<int>((qh >> j) & 1u) << 4;
}
inline uint32_t load_le32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

// Q5_0: x = d * (q - 16), q = low nibble (as Q4_0) | 5th bit from qh.
void dequantize_q5_0(const BlockQ5_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += QK5_0) {
    const float d = h2f(b[i].d);
    const uint32_t qh = load_le32(b[i].qh);
    for (int j = 0; j < QK5_0 / 2; ++j) {
      const int x0 = ((b[i].qs[j] & 0x0F) | q5_high(qh, j)) - 16;
      const int x1 = ((b[i].qs[j] >> 4) | q5_high(qh, j + QK5_0 / 2)) - 16;
      y[j] = x0 * d;
      y[j + QK5_0 / 2] = x1 * d;
    }
  }
}

// Q5_1: x = d * q + m, q as Q5_0 without the offset.
void dequantize_q5_1(const BlockQ5_1* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += QK5_1) {
    const float d = h2f(b[i].d);
    const float m = h2f(b[i].m);
    const uint32_t qh = load_le32(b[i].qh);
    for (int j = 0; j < QK5_1 / 2; ++j) {
      const int x0 = (b[i].qs[j] & 0x0F) | q5_high(qh, j);
      const int x1 = (b[i].qs[j] >> 4) | q5_high(qh, j + QK5_1 / 2);
      y[j] = x0 * d + m;
      y[j + QK5_1 / 2] = x1 * d + m;
    }
  }
}

// Q8_0: x = d * q.
void dequantize_q8_0(const BlockQ8_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += QK8_0) {
    const float d = h2f(b[i].d);
    for (int j = 0; j < QK8_0; ++j) y[j] = b[i].qs[j] * d;
  }
}

// Q2_K: per half super-block of 128 values, qs[l] (l < 32) carries 2-bit
// quants of values l, l+32, l+64, l+96 at shifts 0, 2, 4, 6. Sub-block s
// (16 values) has scale d * (scales[s] & 15) and min dmin * (scales[s] >> 4):
// x = d * sc * q - dmin * m.
void dequantize_q2_k(const BlockQ2_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h2f(b[i].d);
    const float dmin = h2f(b[i].dmin);
    for (int half = 0; half < 2; ++half) {
      const uint8_t* q = b[i].qs + 32 * half;
      for (int k = 0; k < 4; ++k) {  // bit pair k = group of 32 values
        const int shift = 2 * k;
        for (int s = 0; s < 2; ++s) {  // two sub-blocks of 16 in the group
          const uint8_t sc = b[i].scales[8 * half + 2 * k + s];
          const float dl = d * (sc & 0xF);
          const float ml = dmin * (sc >> 4);
          for (int l = 0; l < 16; ++l) *y++ = dl * ((q[16 * s + l] >> shift) & 3) - ml;
        }
      }
    }
  }
}

// Q3_K: the 2 low bits as Q2_K; the high bit of value 32k + l (k = 0..7,
// l < 32) is bit k of hmask[l]. The stored 3-bit q is read as q - 4 (-4..3):
// a set high bit adds 4 back, so "bit clear" means "subtract 4". Each of the
// 16 sub-blocks has a 6-bit scale offset by 32 (q3_k_scale() unpacks the 12
// bytes): x = d * (sc - 32) * (q - 4).
void dequantize_q3_k(const BlockQ3_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d_all = h2f(b[i].d);
    const uint8_t* hm = b[i].hmask;
    for (int half = 0; half < 2; ++half) {
      const uint8_t* q = b[i].qs + 32 * half;
      for (int k = 0; k < 4; ++k) {
        const int shift = 2 * k;
        const uint8_t mbit = static_cast<uint8_t>(1u << (4 * half + k));
        for (int s = 0; s < 2; ++s) {
          const float dl = d_all * q3_k_scale(8 * half + 2 * k + s, b[i].scales);
          for (int l = 0; l < 16; ++l) {
            const int lo = (q[16 * s + l] >> shift) & 3;
            *y++ = dl * (lo - ((hm[16 * s + l] & mbit) ? 0 : 4));
          }
        }
      }
    }
  }
}

// Q4_K: 8 sub-blocks of 32 with 6-bit scale and min (q4_k_scale_min()
// unpacks them from 12 bytes). Per 64 values qs[l] has value l in its low
// nibble and value l + 32 in its high nibble: x = d * sc * q - dmin * m.
void dequantize_q4_k(const BlockQ4_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h2f(b[i].d);
    const float dmin = h2f(b[i].dmin);
    const uint8_t* q = b[i].qs;
    for (int j = 0; j < 8; j += 2, q += 32) {
      uint8_t sc, m;
      q4_k_scale_min(j, b[i].scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      q4_k_scale_min(j + 1, b[i].scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
    }
  }
}

// Q5_K: Q4_K plus a 5th bit worth 16: for the 64 values of sub-blocks
// (2p, 2p+1), bit 2p of qh[l] belongs to value l and bit 2p+1 to value l+32.
void dequantize_q5_k(const BlockQ5_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h2f(b[i].d);
    const float dmin = h2f(b[i].dmin);
    const uint8_t* ql = b[i].qs;
    const uint8_t* qh = b[i].qh;
    for (int j = 0; j < 8; j += 2, ql += 32) {
      uint8_t sc, m;
      q4_k_scale_min(j, b[i].scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      q4_k_scale_min(j + 1, b[i].scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      const uint8_t u1 = static_cast<uint8_t>(1u << j), u2 = static_cast<uint8_t>(2u << j);
      for (int l = 0; l < 32; ++l) *y++ = d1 * ((ql[l] & 0xF) + ((qh[l] & u1) ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * ((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
    }
  }
}

// Q6_K: q is 6 bits, read as q - 32 (-32..31), split into a low nibble in ql
// and 2 high bits in qh. Per 128 values, for l < 32:
//   value l      : ql[l]      low nibble,  qh[l] bits 0-1
//   value l + 32 : ql[l + 32] low nibble,  qh[l] bits 2-3
//   value l + 64 : ql[l]      high nibble, qh[l] bits 4-5
//   value l + 96 : ql[l + 32] high nibble, qh[l] bits 6-7
// Sub-block s (16 values) has a signed 8-bit scale: x = d * sc * (q - 32).
void dequantize_q6_k(const BlockQ6_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h2f(b[i].d);
    const uint8_t* ql = b[i].ql;
    const uint8_t* qh = b[i].qh;
    const int8_t* sc = b[i].scales;
    for (int n = 0; n < QK_K; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l + 0] = d * sc[is + 0] * q1;
        y[l + 32] = d * sc[is + 2] * q2;
        y[l + 64] = d * sc[is + 4] * q3;
        y[l + 96] = d * sc[is + 6] * q4;
      }
    }
  }
}

// ======================================================================================
// Quantization: the legacy formats (one scale per 32 values)
// ======================================================================================

// Symmetric 4/5-bit: the scale maps the value of largest magnitude (with its
// sign) to -8 (-16), so that value is exact and the other end gets +7 (+15).
void quantize_q4_0(const float* x, BlockQ4_0* b, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += QK4_0) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < QK4_0; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8;
    const float id = d ? 1.0f / d : 0.0f;
    b[i].d = fp32_to_fp16(d);
    for (int j = 0; j < QK4_0 / 2; ++j) {
      // +8.5 then truncation = round half up around the offset 8.
      const uint8_t q0 = min_of(15, static_cast<int>(static_cast<int8_t>(x[j] * id + 8.5f)));
      const uint8_t q1 =
          min_of(15, static_cast<int>(static_cast<int8_t>(x[j + QK4_0 / 2] * id + 8.5f)));
      b[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

// Asymmetric 4/5-bit: x = d * q + m with m the block minimum, d = range / 15 (31).
void quantize_q4_1(const float* x, BlockQ4_1* b, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += QK4_1) {
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < QK4_1; ++j) {
      if (x[j] < min) min = x[j];
      if (x[j] > max) max = x[j];
    }
    const float d = (max - min) / 15;
    const float id = d ? 1.0f / d : 0.0f;
    b[i].d = fp32_to_fp16(d);
    b[i].m = fp32_to_fp16(min);
    for (int j = 0; j < QK4_1 / 2; ++j) {
      const uint8_t q0 =
          min_of(15, static_cast<int>(static_cast<int8_t>((x[j] - min) * id + 0.5f)));
      const uint8_t q1 =
          min_of(15, static_cast<int>(static_cast<int8_t>((x[j + QK4_1 / 2] - min) * id + 0.5f)));
      b[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void quantize_q5_0(const float* x, BlockQ5_0* b, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += QK5_0) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < QK5_0; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -16;
    const float id = d ? 1.0f / d : 0.0f;
    b[i].d = fp32_to_fp16(d);
    uint32_t qh = 0;
    for (int j = 0; j < QK5_0 / 2; ++j) {
      const uint8_t q0 = min_of(31, static_cast<int>(static_cast<int8_t>(x[j] * id + 16.5f)));
      const uint8_t q1 =
          min_of(31, static_cast<int>(static_cast<int8_t>(x[j + QK5_0 / 2] * id + 16.5f)));
      b[i].qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
      qh |= uint32_t(q0 >> 4) << j;
      qh |= uint32_t(q1 >> 4) << (j + QK5_0 / 2);
    }
    for (int k = 0; k < 4; ++k) b[i].qh[k] = static_cast<uint8_t>(qh >> (8 * k));
  }
}

void quantize_q5_1(const float* x, BlockQ5_1* b, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += QK5_1) {
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < QK5_1; ++j) {
      if (x[j] < min) min = x[j];
      if (x[j] > max) max = x[j];
    }
    const float d = (max - min) / 31;
    const float id = d ? 1.0f / d : 0.0f;
    b[i].d = fp32_to_fp16(d);
    b[i].m = fp32_to_fp16(min);
    uint32_t qh = 0;
    for (int j = 0; j < QK5_1 / 2; ++j) {
      // No clamp: (x - min) * id <= 31 up to rounding, and + 0.5 stays below 32.
      const uint8_t q0 = static_cast<uint8_t>((x[j] - min) * id + 0.5f);
      const uint8_t q1 = static_cast<uint8_t>((x[j + QK5_1 / 2] - min) * id + 0.5f);
      b[i].qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
      qh |= uint32_t((q0 & 0x10u) >> 4) << j;
      qh |= uint32_t((q1 & 0x10u) >> 4) << (j + QK5_1 / 2);
    }
    for (int k = 0; k < 4; ++k) b[i].qh[k] = static_cast<uint8_t>(qh >> (8 * k));
  }
}

// Symmetric 8-bit: d = amax / 127, q = round(x / d) (half away from zero).
void quantize_q8_0(const float* x, BlockQ8_0* b, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += QK8_0) {
    float amax = 0.0f;
    for (int j = 0; j < QK8_0; ++j) amax = max_of(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = d ? 1.0f / d : 0.0f;
    b[i].d = fp32_to_fp16(d);
    for (int j = 0; j < QK8_0; ++j) b[i].qs[j] = static_cast<int8_t>(std::round(x[j] * id));
  }
}

// ======================================================================================
// Quantization: the K-quants. Each sub-block gets a float scale (and min) by a
// small search; then those are quantized against the super-block's largest
// one, and the values are re-quantized with the scales as actually stored.
// ======================================================================================

constexpr float kGroupMaxEps = 1e-15f;  // below this amax a group counts as all zero

// Signed scale for n values, levels -nmax..nmax-1, minimizing the error
// weighted by x^2: start from the scale that maps the largest-magnitude value
// to -nmax, then try 18 nearby scales (nmax +- 0.1 .. 0.9) and keep the one
// with the best least-squares fit. L gets q + nmax. Used by Q6_K.
float make_qx_quants_x2(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = max_of(-nmax, min_of(nmax - 1, nearest_int(iscale * x[i])));
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  float scale = suml2 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(nmax + 0.1f * is) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = max_of(-nmax, min_of(nmax - 1, nearest_int(iscale * x[i])));
      const float w = x[i] * x[i];
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        const int l = nearest_int(iscale * x[i]);
        L[i] = static_cast<int8_t>(nmax + max_of(-nmax, min_of(nmax - 1, l)));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// Signed scale for Q3_K's 16-value sub-blocks (levels -nmax..nmax-1): start
// from -nmax at the largest magnitude, then up to 5 passes of coordinate
// descent, moving one q at a time when that improves the x^2-weighted fit.
// L gets q + nmax.
float make_q3_quants(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  const float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = max_of(-nmax, min_of(nmax - 1, nearest_int(iscale * x[i])));
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  for (int itry = 0; itry < 5; ++itry) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * L[i];
      if (slx > 0) {
        float sl2 = suml2 - w * L[i] * L[i];
        int new_l = nearest_int(x[i] * sl2 / slx);
        new_l = max_of(-nmax, min_of(nmax - 1, new_l));
        if (new_l != L[i]) {
          slx += w * x[i] * new_l;
          sl2 += w * new_l * new_l;
          if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = static_cast<int8_t>(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++n_changed;
          }
        }
      }
    }
    if (!n_changed) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
  return sumlx / suml2;
}

// Scale and min for x = scale * q - min, q in 0..nmax (the min clamped to
// <= 0 as an offset, so *the_min >= 0): start from the range, then try nstep+1
// level counts (nmax + rmin + rdelta*is) and for each solve the weighted
// least-squares (scale, min) of the resulting q; keep the one with the least
// weighted error (absolute if use_mad, else squared).
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                       bool use_mad) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -min;
    return 0.f;
  }
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  float best_mad = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = static_cast<uint8_t>(max_of(0, min_of(nmax, l)));
    float diff = scale * L[i] + min - x[i];
    diff = use_mad ? std::fabs(diff) : diff * diff;
    best_mad += weights[i] * diff;
  }
  if (nstep < 1) {
    *the_min = -min;
    return scale;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * is + nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = max_of(0, min_of(nmax, nearest_int(iscale * (x[i] - min))));
      Laux[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      sum_l += w * l;
      sum_l2 += w * l * l;
      sum_xl += w * l * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float mad = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * Laux[i] + this_min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        mad += weights[i] * diff;
      }
      if (mad < best_mad) {
        for (int i = 0; i < n; ++i) L[i] = Laux[i];
        best_mad = mad;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

// The 2-bit packing shared by Q2_K and Q3_K (and Q6_K's qh): per 128 values,
// byte l holds values l, l+32, l+64, l+96 (each < 4) at shifts 0, 2, 4, 6.
void pack_2bit(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < QK_K; j += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[j / 4 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                           (L[j + l + 96] << 6));
    }
  }
}

void quantize_q2_k(const float* x, BlockQ2_K* b, int64_t nb) {
  const float q4scale = 15.f;
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    uint8_t L[QK_K], Laux[16];
    float weights[16], mins[QK_K / 16], scales[QK_K / 16];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < QK_K / 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f,
                                   0.1f, 15, true);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    // Scales and mins to 4 bits each against their maxima.
    if (max_scale > 0) {
      const float iscale = q4scale / max_scale;
      for (int j = 0; j < QK_K / 16; ++j)
        b[i].scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
      b[i].d = fp32_to_fp16(max_scale / q4scale);
    } else {
      for (int j = 0; j < QK_K / 16; ++j) b[i].scales[j] = 0;
      b[i].d = fp32_to_fp16(0.f);
    }
    if (max_min > 0) {
      const float iscale = q4scale / max_min;
      for (int j = 0; j < QK_K / 16; ++j)
        b[i].scales[j] |= static_cast<uint8_t>(nearest_int(iscale * mins[j]) << 4);
      b[i].dmin = fp32_to_fp16(max_min / q4scale);
    } else {
      b[i].dmin = fp32_to_fp16(0.f);
    }
    // Re-quantize against the stored (rounded) scales.
    for (int j = 0; j < QK_K / 16; ++j) {
      const float d = h2f(b[i].d) * (b[i].scales[j] & 0xF);
      if (!d) continue;
      const float dm = h2f(b[i].dmin) * (b[i].scales[j] >> 4);
      for (int ii = 0; ii < 16; ++ii) {
        const int l = nearest_int((x[16 * j + ii] + dm) / d);
        L[16 * j + ii] = static_cast<uint8_t>(max_of(0, min_of(3, l)));
      }
    }
    pack_2bit(L, b[i].qs);
  }
}

void quantize_q3_k(const float* x, BlockQ3_K* b, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    int8_t L[QK_K];
    float scales[QK_K / 16];
    float max_scale = 0, amax = 0;
    for (int j = 0; j < QK_K / 16; ++j) {
      scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
      const float scale = std::fabs(scales[j]);
      if (scale > amax) {
        amax = scale;
        max_scale = scales[j];
      }
    }
    // 6-bit signed scales (-32..31, stored +32) against the largest-magnitude
    // one, which maps to -32. Low nibbles: bytes 0-7 (j < 8 low, j >= 8 high
    // nibble of byte j - 8); bits 4-5: bit pair 2*(j/4) of byte 8 + j%4.
    std::memset(b[i].scales, 0, sizeof(b[i].scales));
    if (max_scale) {
      const float iscale = -32.f / max_scale;
      for (int j = 0; j < QK_K / 16; ++j) {
        int l = static_cast<int8_t>(nearest_int(iscale * scales[j]));
        l = max_of(-32, min_of(31, l)) + 32;
        if (j < 8) {
          b[i].scales[j] = static_cast<uint8_t>(l & 0xF);
        } else {
          b[i].scales[j - 8] |= static_cast<uint8_t>((l & 0xF) << 4);
        }
        b[i].scales[j % 4 + 8] |= static_cast<uint8_t>((l >> 4) << (2 * (j / 4)));
      }
      b[i].d = fp32_to_fp16(1 / iscale);
    } else {
      b[i].d = fp32_to_fp16(0.f);
    }
    for (int j = 0; j < QK_K / 16; ++j) {
      const float d = h2f(b[i].d) * q3_k_scale(j, b[i].scales);
      if (!d) continue;
      for (int ii = 0; ii < 16; ++ii) {
        const int l = nearest_int(x[16 * j + ii] / d);
        L[16 * j + ii] = static_cast<int8_t>(max_of(-4, min_of(3, l)) + 4);
      }
    }
    // High bit of value 32k + l goes to bit k of hmask[l]; the rest are 2-bit.
    std::memset(b[i].hmask, 0, sizeof(b[i].hmask));
    uint8_t low[QK_K];
    for (int j = 0; j < QK_K; ++j) {
      int q = L[j];
      if (q > 3) {
        b[i].hmask[j % 32] |= static_cast<uint8_t>(1u << (j / 32));
        q -= 4;
      }
      low[j] = static_cast<uint8_t>(q);
    }
    pack_2bit(low, b[i].qs);
  }
}

// Q4_K / Q5_K share everything but the bit count and the search parameters.
// Sub-block weights: |x| + RMS of the sub-block. The 8 scales and 8 mins go
// to 6 bits against their maxima and are packed as q4_k_scale_min() reads them.
template <int kNmax>
void quantize_k4_scales(const float* x, uint8_t* L, uint8_t* packed, uint16_t* d_out,
                        uint16_t* dmin_out, float rmin, int nstep) {
  uint8_t Laux[32];
  float weights[32], mins[QK_K / 32], scales[QK_K / 32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < QK_K / 32; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = make_qkx2_quants(32, kNmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin,
                                 0.1f, nstep, false);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (int j = 0; j < QK_K / 32; ++j) {
    const uint8_t ls =
        min_of<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    const uint8_t lm = min_of<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
    if (j < 4) {
      packed[j] = ls;
      packed[j + 4] = lm;
    } else {
      packed[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      packed[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      packed[j] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
  *d_out = fp32_to_fp16(max_scale / 63.f);
  *dmin_out = fp32_to_fp16(max_min / 63.f);
  // Re-quantize against the stored scales.
  for (int j = 0; j < QK_K / 32; ++j) {
    uint8_t sc, m;
    q4_k_scale_min(j, packed, &sc, &m);
    const float d = h2f(*d_out) * sc;
    if (!d) continue;
    const float dm = h2f(*dmin_out) * m;
    for (int ii = 0; ii < 32; ++ii) {
      const int l = nearest_int((x[32 * j + ii] + dm) / d);
      L[32 * j + ii] = static_cast<uint8_t>(max_of(0, min_of(kNmax, l)));
    }
  }
}

void quantize_q4_k(const float* x, BlockQ4_K* b, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    uint8_t L[QK_K];
    quantize_k4_scales<15>(x, L, b[i].scales, &b[i].d, &b[i].dmin, -1.f, 20);
    uint8_t* q = b[i].qs;
    for (int j = 0; j < QK_K; j += 64, q += 32)
      for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
  }
}

void quantize_q5_k(const float* x, BlockQ5_K* b, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    uint8_t L[QK_K];
    quantize_k4_scales<31>(x, L, b[i].scales, &b[i].d, &b[i].dmin, -0.5f, 15);
    std::memset(b[i].qh, 0, sizeof(b[i].qh));
    uint8_t* ql = b[i].qs;
    for (int n = 0, p = 0; n < QK_K; n += 64, ++p, ql += 32) {
      for (int j = 0; j < 32; ++j) {
        const int l1 = L[n + j], l2 = L[n + j + 32];
        b[i].qh[j] |= static_cast<uint8_t>(((l1 >> 4) << (2 * p)) | ((l2 >> 4) << (2 * p + 1)));
        ql[j] = static_cast<uint8_t>((l1 & 0xF) | ((l2 & 0xF) << 4));
      }
    }
  }
}

void quantize_q6_k(const float* x, BlockQ6_K* b, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    int8_t L[QK_K];
    float scales[QK_K / 16];
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < QK_K / 16; ++ib) {
      scales[ib] = make_qx_quants_x2(16, 32, x + 16 * ib, L + 16 * ib);
      const float abs_scale = std::fabs(scales[ib]);
      if (abs_scale > max_abs_scale) {
        max_abs_scale = abs_scale;
        max_scale = scales[ib];
      }
    }
    if (max_abs_scale < kGroupMaxEps) {
      std::memset(&b[i], 0, sizeof(b[i]));
      continue;
    }
    // 8-bit signed scales against the largest-magnitude one, which maps to -128.
    const float iscale = -128.f / max_scale;
    b[i].d = fp32_to_fp16(1 / iscale);
    for (int ib = 0; ib < QK_K / 16; ++ib)
      b[i].scales[ib] = static_cast<int8_t>(min_of(127, nearest_int(iscale * scales[ib])));
    for (int j = 0; j < QK_K / 16; ++j) {
      const float d = h2f(b[i].d) * b[i].scales[j];
      if (!d) continue;
      for (int ii = 0; ii < 16; ++ii) {
        const int l = nearest_int(x[16 * j + ii] / d);
        L[16 * j + ii] = static_cast<int8_t>(max_of(-32, min_of(31, l)) + 32);
      }
    }
    // Split 6-bit q into ql nibbles and qh bit pairs (layout at dequantize_q6_k).
    uint8_t* ql = b[i].ql;
    uint8_t* qh = b[i].qh;
    for (int j = 0; j < QK_K; j += 128, ql += 64, qh += 32) {
      for (int l = 0; l < 32; ++l) {
        const int q1 = L[j + l], q2 = L[j + l + 32], q3 = L[j + l + 64], q4 = L[j + l + 96];
        ql[l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
        ql[l + 32] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
        qh[l] = static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) |
                                     ((q4 >> 4) << 6));
      }
    }
  }
}

}  // namespace

void dequantize_row(GgmlType t, const void* src, float* dst, int64_t n) {
  const GgmlTypeTraits tr = ggml_traits(t);
  assert(tr.dequantizable && "dequantize_row: type has no dequantizer");
  assert(n >= 0 && n % tr.block_elems == 0 && "dequantize_row: n not a multiple of the block");
  const int64_t nb = n / tr.block_elems;
  switch (t) {
    case GgmlType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case GgmlType::F16: {
      const uint16_t* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(h[i]);
      return;
    }
    case GgmlType::BF16: {
      const uint16_t* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(h[i]);
      return;
    }
    case GgmlType::Q4_0:
      return dequantize_q4_0(static_cast<const BlockQ4_0*>(src), dst, nb);
    case GgmlType::Q4_1:
      return dequantize_q4_1(static_cast<const BlockQ4_1*>(src), dst, nb);
    case GgmlType::Q5_0:
      return dequantize_q5_0(static_cast<const BlockQ5_0*>(src), dst, nb);
    case GgmlType::Q5_1:
      return dequantize_q5_1(static_cast<const BlockQ5_1*>(src), dst, nb);
    case GgmlType::Q8_0:
      return dequantize_q8_0(static_cast<const BlockQ8_0*>(src), dst, nb);
    case GgmlType::Q2_K:
      return dequantize_q2_k(static_cast<const BlockQ2_K*>(src), dst, nb);
    case GgmlType::Q3_K:
      return dequantize_q3_k(static_cast<const BlockQ3_K*>(src), dst, nb);
    case GgmlType::Q4_K:
      return dequantize_q4_k(static_cast<const BlockQ4_K*>(src), dst, nb);
    case GgmlType::Q5_K:
      return dequantize_q5_k(static_cast<const BlockQ5_K*>(src), dst, nb);
    case GgmlType::Q6_K:
      return dequantize_q6_k(static_cast<const BlockQ6_K*>(src), dst, nb);
    default:
      assert(false && "dequantize_row: unhandled type");
      return;
  }
}

bool can_quantize(GgmlType t) {
  switch (t) {
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16:
    case GgmlType::Q4_0:
    case GgmlType::Q4_1:
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
    case GgmlType::Q8_0:
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
      return true;
    default:
      return false;
  }
}

void quantize_row(GgmlType t, const float* src, void* dst, int64_t n) {
  assert(can_quantize(t) && "quantize_row: type has no quantizer");
  const GgmlTypeTraits tr = ggml_traits(t);
  assert(n >= 0 && n % tr.block_elems == 0 && "quantize_row: n not a multiple of the block");
  const int64_t nb = n / tr.block_elems;
  switch (t) {
    case GgmlType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case GgmlType::F16: {
      uint16_t* h = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_fp16(src[i]);
      return;
    }
    case GgmlType::BF16: {
      uint16_t* h = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_bf16(src[i]);
      return;
    }
    case GgmlType::Q4_0:
      return quantize_q4_0(src, static_cast<BlockQ4_0*>(dst), nb);
    case GgmlType::Q4_1:
      return quantize_q4_1(src, static_cast<BlockQ4_1*>(dst), nb);
    case GgmlType::Q5_0:
      return quantize_q5_0(src, static_cast<BlockQ5_0*>(dst), nb);
    case GgmlType::Q5_1:
      return quantize_q5_1(src, static_cast<BlockQ5_1*>(dst), nb);
    case GgmlType::Q8_0:
      return quantize_q8_0(src, static_cast<BlockQ8_0*>(dst), nb);
    case GgmlType::Q2_K:
      return quantize_q2_k(src, static_cast<BlockQ2_K*>(dst), nb);
    case GgmlType::Q3_K:
      return quantize_q3_k(src, static_cast<BlockQ3_K*>(dst), nb);
    case GgmlType::Q4_K:
      return quantize_q4_k(src, static_cast<BlockQ4_K*>(dst), nb);
    case GgmlType::Q5_K:
      return quantize_q5_k(src, static_cast<BlockQ5_K*>(dst), nb);
    case GgmlType::Q6_K:
      return quantize_q6_k(src, static_cast<BlockQ6_K*>(dst), nb);
    default:
      assert(false && "quantize_row: unhandled type");
      return;
  }
}

}  // namespace ls
