// Stage 1, portable: quantized row -> g16 form (kernels/cpu/unpack.h), one
// value at a time. The bit layouts are those of kernels/quant_blocks.h; each
// decode below says where value i's bits are. Scales are computed with the
// same float operations as kernels/ref/quant.cpp (contraction off, as there),
// so that s * q - m is the reference's value bit for bit.
// defines: g16_has_min, g16_supports, unpack_g16_scales, unpack_g16_scalar (kernels/cpu/unpack.h)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <cassert>
#include <cstring>

#include "kernels/cpu/unpack.h"
#include "kernels/half.h"
#include "kernels/quant_blocks.h"

namespace ls {

bool g16_has_min(GgmlType t) {
  return t == GgmlType::Q4_K || t == GgmlType::Q5_K;
}

bool g16_supports(GgmlType t, int64_t n_in) {
  switch (t) {
    case GgmlType::Q4_0:
    case GgmlType::Q8_0:
      return n_in > 0 && n_in % 32 == 0;
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
      return n_in > 0 && n_in % QK_K == 0;
    default:
      return false;
  }
}

void unpack_g16_scales(GgmlType t, const void* src, int64_t n, const G16Row& out) {
  assert(g16_supports(t, n));
  switch (t) {
    case GgmlType::Q4_0:
    case GgmlType::Q8_0: {
      // One fp16 scale per 32 values, at the start of each block.
      const uint64_t bytes = t == GgmlType::Q4_0 ? sizeof(BlockQ4_0) : sizeof(BlockQ8_0);
      const uint8_t* p = static_cast<const uint8_t*>(src);
      for (int64_t i = 0; i < n / 32; ++i, p += bytes) {
        uint16_t d;
        std::memcpy(&d, p, 2);
        out.s[2 * i] = out.s[2 * i + 1] = fp16_to_fp32(d);
      }
      return;
    }
    case GgmlType::Q4_K:
    case GgmlType::Q5_K: {
      // 8 sub-blocks of 32 (two groups each): s = d * sc, m = dmin * mn, the
      // reference's d1 and m1.
      const bool five = t == GgmlType::Q5_K;
      for (int64_t i = 0; i < n / QK_K; ++i) {
        const uint8_t* scales;
        uint16_t d16, dmin16;
        if (five) {
          const BlockQ5_K& b = static_cast<const BlockQ5_K*>(src)[i];
          scales = b.scales, d16 = b.d, dmin16 = b.dmin;
        } else {
          const BlockQ4_K& b = static_cast<const BlockQ4_K*>(src)[i];
          scales = b.scales, d16 = b.d, dmin16 = b.dmin;
        }
        const float d = fp16_to_fp32(d16), dmin = fp16_to_fp32(dmin16);
        for (int j = 0; j < 8; ++j) {
          uint8_t sc, mn;
          q4_k_scale_min(j, scales, &sc, &mn);
          out.s[16 * i + 2 * j] = out.s[16 * i + 2 * j + 1] = d * sc;
          out.m[16 * i + 2 * j] = out.m[16 * i + 2 * j + 1] = dmin * mn;
        }
      }
      return;
    }
    case GgmlType::Q6_K: {
      // 16 signed 8-bit scales, one per group: s = d * sc (the reference's
      // d * sc[is] * q evaluates d * sc first).
      const BlockQ6_K* b = static_cast<const BlockQ6_K*>(src);
      for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = fp16_to_fp32(b[i].d);
        for (int g = 0; g < 16; ++g) out.s[16 * i + g] = d * b[i].scales[g];
      }
      return;
    }
    default:
      assert(false && "unpack_g16_scales: unsupported type");
  }
}

void unpack_g16_scalar(GgmlType t, const void* src, int64_t n, const G16Row& out) {
  unpack_g16_scales(t, src, n, out);
  switch (t) {
    case GgmlType::Q4_0: {
      // Value j of a block: low nibble of qs[j]; value j + 16: its high nibble.
      const BlockQ4_0* b = static_cast<const BlockQ4_0*>(src);
      for (int64_t i = 0; i < n / QK4_0; ++i) {
        int8_t* q = out.q + 32 * i;
        for (int j = 0; j < 16; ++j) {
          q[j] = static_cast<int8_t>((b[i].qs[j] & 0xF) - 8);
          q[j + 16] = static_cast<int8_t>((b[i].qs[j] >> 4) - 8);
        }
      }
      return;
    }
    case GgmlType::Q8_0: {
      const BlockQ8_0* b = static_cast<const BlockQ8_0*>(src);
      for (int64_t i = 0; i < n / QK8_0; ++i) {
        std::memcpy(out.q + 32 * i, b[i].qs, 32);
      }
      return;
    }
    case GgmlType::Q4_K:
    case GgmlType::Q5_K: {
      // Per 64 values (sub-blocks 2c, 2c+1): value l of the chunk is the low
      // nibble of qs[32c + l], value 32 + l its high nibble. Q5_K adds 16 when
      // bit 2c (value l) or 2c+1 (value 32 + l) of qh[l] is set.
      const bool five = t == GgmlType::Q5_K;
      const int64_t nb = n / QK_K;
      for (int64_t i = 0; i < nb; ++i) {
        const uint8_t* qs = five ? static_cast<const BlockQ5_K*>(src)[i].qs
                                 : static_cast<const BlockQ4_K*>(src)[i].qs;
        const uint8_t* qh = five ? static_cast<const BlockQ5_K*>(src)[i].qh : nullptr;
        int8_t* q = out.q + QK_K * i;
        for (int c = 0; c < 4; ++c) {
          for (int l = 0; l < 32; ++l) {
            int lo = qs[32 * c + l] & 0xF, hi = qs[32 * c + l] >> 4;
            if (five) {
              lo += (qh[l] >> (2 * c) & 1) << 4;
              hi += (qh[l] >> (2 * c + 1) & 1) << 4;
            }
            q[64 * c + l] = static_cast<int8_t>(lo);
            q[64 * c + 32 + l] = static_cast<int8_t>(hi);
          }
        }
      }
      return;
    }
    case GgmlType::Q6_K: {
      // Per 128 values, l < 32: value l = ql[l] low | qh[l] bits 0-1; l + 32 =
      // ql[l + 32] low | bits 2-3; l + 64 = ql[l] high | bits 4-5; l + 96 =
      // ql[l + 32] high | bits 6-7; minus 32. Group g has scale d * sc[g].
      const BlockQ6_K* b = static_cast<const BlockQ6_K*>(src);
      for (int64_t i = 0; i < n / QK_K; ++i) {
        for (int h = 0; h < 2; ++h) {
          const uint8_t* ql = b[i].ql + 64 * h;
          const uint8_t* qh = b[i].qh + 32 * h;
          int8_t* q = out.q + QK_K * i + 128 * h;
          for (int l = 0; l < 32; ++l) {
            q[l] = static_cast<int8_t>(((ql[l] & 0xF) | ((qh[l] & 3) << 4)) - 32);
            q[l + 32] = static_cast<int8_t>(((ql[l + 32] & 0xF) | ((qh[l] >> 2 & 3) << 4)) - 32);
            q[l + 64] = static_cast<int8_t>(((ql[l] >> 4) | ((qh[l] >> 4 & 3) << 4)) - 32);
            q[l + 96] = static_cast<int8_t>(((ql[l + 32] >> 4) | ((qh[l] >> 6 & 3) << 4)) - 32);
          }
        }
      }
      return;
    }
    default:
      assert(false && "unpack_g16_scalar: unsupported type");
  }
}

}  // namespace ls
