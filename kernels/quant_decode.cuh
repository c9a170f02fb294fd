// Device-side decoding of every GGUF weight type, eight values at a time:
// decode8<T>(row, c, v) writes elements 8c .. 8c+7 of one weight row (in the
// GGUF layout of kernels/quant_blocks.h) to v as f32. Eight is the unit
// because every format's quant bits for eight consecutive values sit in eight
// consecutive bytes (or fewer), which one or two aligned loads fetch: the
// fused GEMV (kernels/gemv_q.cu) and the dequantize-to-f16 kernels
// (kernels/dequant.cu) share these decoders, so both compute the same
// values as kernels/ref/quant.cpp (up to f32 rounding order, since nvcc
// contracts a*b - c into an fma).
//
// Alignment: a row starts at r * row_bytes from a 16-byte aligned base, and
// every block size is even (Q4_K, Q5_K: multiples of 16; Q2_K, Q4_1, Q5_1:
// of 4; the rest of 2), so each loader below uses the widest load the block
// offset allows: 2-byte loads for 18/22/34/110/210-byte blocks, 4 or 8 for
// the others.
// defines: decode8, DecodeTraits, ld_f16(), ld8(), byte8(), k_scale_min()
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "io/ggml_type.h"
#include "kernels/quant_blocks.h"
#include "runtime/status.h"

namespace ls {

__device__ __forceinline__ float ld_f16(const uint8_t* p) {
  return __half2float(__ushort_as_half(*reinterpret_cast<const uint16_t*>(p)));
}

// 8 bytes at p as two little-endian words, with a load width of A bytes.
template <int A>
__device__ __forceinline__ void ld8(const uint8_t* p, uint32_t& lo, uint32_t& hi) {
  if constexpr (A >= 8) {
    const uint2 u = *reinterpret_cast<const uint2*>(p);
    lo = u.x;
    hi = u.y;
  } else if constexpr (A == 4) {
    lo = reinterpret_cast<const uint32_t*>(p)[0];
    hi = reinterpret_cast<const uint32_t*>(p)[1];
  } else {
    const uint16_t* q = reinterpret_cast<const uint16_t*>(p);
    lo = q[0] | (uint32_t(q[1]) << 16);
    hi = q[2] | (uint32_t(q[3]) << 16);
  }
}
// Byte i (0..7) of the pair (lo, hi).
__device__ __forceinline__ uint32_t byte8(uint32_t lo, uint32_t hi, int i) {
  return ((i < 4 ? lo : hi) >> (8 * (i & 3))) & 0xFFu;
}

// Q4_K / Q5_K: scale and min of sub-block s (0..7) from the header's words
// (hd.y, hd.z, hd.w = scale bytes 0-3, 4-7, 8-11; q4_k_scale_min's packing),
// computed for both halves and selected, so lanes do not diverge.
__device__ __forceinline__ void k_scale_min(const uint4 hd, int s, float& a, float& b) {
  const int sh = 8 * (s & 3);
  const uint32_t y = hd.y >> sh, z = hd.z >> sh, w = hd.w >> sh;
  const uint32_t sc = s < 4 ? (y & 63) : ((w & 0xF) | (((y >> 6) & 3) << 4));
  const uint32_t m = s < 4 ? (z & 63) : (((w >> 4) & 0xF) | (((z >> 6) & 3) << 4));
  const float d = __half2float(__ushort_as_half(static_cast<uint16_t>(hd.x & 0xFFFFu)));
  const float dmin = __half2float(__ushort_as_half(static_cast<uint16_t>(hd.x >> 16)));
  a = d * static_cast<float>(sc);
  b = -(dmin * static_cast<float>(m));
}

template <GgmlType T>
__device__ __forceinline__ void decode8(const uint8_t* __restrict__ row, int64_t c, float v[8]);

// F32 / F16 / BF16: 32 or 16 aligned bytes per 8 values.
template <>
__device__ __forceinline__ void decode8<GgmlType::F32>(const uint8_t* __restrict__ row, int64_t c,
                                                       float v[8]) {
  const float4* p = reinterpret_cast<const float4*>(row) + 2 * c;
  const float4 a = p[0], b = p[1];
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}
template <>
__device__ __forceinline__ void decode8<GgmlType::F16>(const uint8_t* __restrict__ row, int64_t c,
                                                       float v[8]) {
  const uint4 u = reinterpret_cast<const uint4*>(row)[c];
  const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
    v[2 * i] = f.x;
    v[2 * i + 1] = f.y;
  }
}
// bf16 is the top half of an f32: shifting the bits up is the conversion.
template <>
__device__ __forceinline__ void decode8<GgmlType::BF16>(const uint8_t* __restrict__ row, int64_t c,
                                                        float v[8]) {
  const uint4 u = reinterpret_cast<const uint4*>(row)[c];
  const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    v[2 * i] = __uint_as_float(w[i] << 16);
    v[2 * i + 1] = __uint_as_float(w[i] & 0xFFFF0000u);
  }
}

// Q8_0 (34-byte blocks, 4 chunks each): chunk p of block b is qs[8p .. 8p+7].
template <>
__device__ __forceinline__ void decode8<GgmlType::Q8_0>(const uint8_t* __restrict__ row, int64_t c,
                                                        float v[8]) {
  const uint8_t* blk = row + (c >> 2) * sizeof(BlockQ8_0);
  const int p = static_cast<int>(c & 3);
  const float d = ld_f16(blk);
  uint32_t lo, hi;
  ld8<2>(blk + 2 + 8 * p, lo, hi);
#pragma unroll
  for (int i = 0; i < 8; ++i) v[i] = d * static_cast<float>(static_cast<int8_t>(byte8(lo, hi, i)));
}

// Q4_0 / Q4_1: value j < 16 is the low nibble of qs[j], value j >= 16 the
// high nibble of qs[j - 16]. So chunk p (values 8p..8p+7) reads the 8 bytes
// qs[8 (p & 1) ..] and takes the nibble at shift 4 (p >> 1).
template <>
__device__ __forceinline__ void decode8<GgmlType::Q4_0>(const uint8_t* __restrict__ row, int64_t c,
                                                        float v[8]) {
  const uint8_t* blk = row + (c >> 2) * sizeof(BlockQ4_0);
  const int p = static_cast<int>(c & 3);
  const float d = ld_f16(blk);
  uint32_t lo, hi;
  ld8<2>(blk + 2 + 8 * (p & 1), lo, hi);
  const int sh = 4 * (p >> 1);
#pragma unroll
  for (int i = 0; i < 8; ++i)
    v[i] = d * static_cast<float>(static_cast<int>((byte8(lo, hi, i) >> sh) & 15) - 8);
}
template <>
__device__ __forceinline__ void decode8<GgmlType::Q4_1>(const uint8_t* __restrict__ row, int64_t c,
                                                        float v[8]) {
  const uint8_t* blk = row + (c >> 2) * sizeof(BlockQ4_1);
  const int p = static_cast<int>(c & 3);
  const float d = ld_f16(blk), m = ld_f16(blk + 2);
  uint32_t lo, hi;
  ld8<4>(blk + 4 + 8 * (p & 1), lo, hi);
  const int sh = 4 * (p >> 1);
#pragma unroll
  for (int i = 0; i < 8; ++i) v[i] = d * static_cast<float>((byte8(lo, hi, i) >> sh) & 15) + m;
}

// Q5_0 / Q5_1: nibbles as Q4_0; the 5th bit of value j is bit j of the
// 32-bit word qh, so the chunk's 8 fifth bits are (qh >> 8p) & 0xFF.
template <>
__device__ __forceinline__ void decode8<GgmlType::Q5_0>(const uint8_t* __restrict__ row, int64_t c,
                                                        float v[8]) {
  const uint8_t* blk = row + (c >> 2) * sizeof(BlockQ5_0);
  const int p = static_cast<int>(c & 3);
  const float d = ld_f16(blk);
  const uint16_t* qh16 = reinterpret_cast<const uint16_t*>(blk + 2);  // 2-byte aligned only
  const uint32_t qh = (qh16[0] | (uint32_t(qh16[1]) << 16)) >> (8 * p);
  uint32_t lo, hi;
  ld8<2>(blk + 6 + 8 * (p & 1), lo, hi);
  const int sh = 4 * (p >> 1);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int q = static_cast<int>(((byte8(lo, hi, i) >> sh) & 15) | (((qh >> i) & 1) << 4));
    v[i] = d * static_cast<float>(q - 16);
  }
}
template <>
__device__ __forceinline__ void decode8<GgmlType::Q5_1>(const uint8_t* __restrict__ row, int64_t c,
                                                        float v[8]) {
  const uint8_t* blk = row + (c >> 2) * sizeof(BlockQ5_1);
  const int p = static_cast<int>(c & 3);
  const float d = ld_f16(blk), m = ld_f16(blk + 2);
  const uint32_t qh = *reinterpret_cast<const uint32_t*>(blk + 4) >> (8 * p);
  uint32_t lo, hi;
  ld8<4>(blk + 8 + 8 * (p & 1), lo, hi);
  const int sh = 4 * (p >> 1);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const uint32_t q = ((byte8(lo, hi, i) >> sh) & 15) | (((qh >> i) & 1) << 4);
    v[i] = d * static_cast<float>(q) + m;
  }
}

// K-quants: c indexes 8-value chunks of the row; 32 chunks per super-block.
// w = (c & 31) * 8 is the chunk's first value inside its super-block; the 8
// values never straddle a 16-value sub-block, so one scale covers them.
//
// Q2_K / Q3_K 2-bit packing: per 128 values (h = w / 128, v = w % 128), the
// quant of value v sits in byte qs[32h + v % 32] at bit pair v / 32.
template <>
__device__ __forceinline__ void decode8<GgmlType::Q2_K>(const uint8_t* __restrict__ row, int64_t c,
                                                        float v[8]) {
  const uint8_t* blk = row + (c >> 5) * sizeof(BlockQ2_K);
  const int w = static_cast<int>(c & 31) * 8, h = w >> 7, vv = w & 127;
  const uint32_t sc = blk[w >> 4];  // scale | min << 4 of the 16-value sub-block
  const float dl = ld_f16(blk + 80) * static_cast<float>(sc & 15);
  const float ml = ld_f16(blk + 82) * static_cast<float>(sc >> 4);
  uint32_t lo, hi;
  ld8<4>(blk + 16 + 32 * h + (vv & 31), lo, hi);
  const int sh = 2 * (vv >> 5);
#pragma unroll
  for (int i = 0; i < 8; ++i) v[i] = dl * static_cast<float>((byte8(lo, hi, i) >> sh) & 3) - ml;
}
// Q3_K: low 2 bits as Q2_K; the high bit of value w (in the super-block) is
// bit w / 32 of hmask[w % 32], and a clear bit means "subtract 4".
template <>
__device__ __forceinline__ void decode8<GgmlType::Q3_K>(const uint8_t* __restrict__ row, int64_t c,
                                                        float v[8]) {
  const uint8_t* blk = row + (c >> 5) * sizeof(BlockQ3_K);
  const int w = static_cast<int>(c & 31) * 8, h = w >> 7, vv = w & 127;
  const float dl = ld_f16(blk + 108) * static_cast<float>(q3_k_scale(w >> 4, blk + 96));
  uint32_t mlo, mhi, lo, hi;
  ld8<2>(blk + (w & 31), mlo, mhi);
  ld8<2>(blk + 32 + 32 * h + (vv & 31), lo, hi);
  const int sh = 2 * (vv >> 5), hb = w >> 5;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int q =
        static_cast<int>((byte8(lo, hi, i) >> sh) & 3) - (((byte8(mlo, mhi, i) >> hb) & 1) ? 0 : 4);
    v[i] = dl * static_cast<float>(q);
  }
}
// Q4_K: per 64 values (g = w / 64), qs[32g + l] holds value l in its low
// nibble and value l + 32 in its high one; sub-block w / 32 has a 6-bit scale
// and min (q4_k_scale_min): x = d * sc * q - dmin * m.
template <>
__device__ __forceinline__ void decode8<GgmlType::Q4_K>(const uint8_t* __restrict__ row, int64_t c,
                                                        float v[8]) {
  const uint8_t* blk = row + (c >> 5) * sizeof(BlockQ4_K);
  const int w = static_cast<int>(c & 31) * 8;
  uint8_t sc, m;
  q4_k_scale_min(w >> 5, blk + 4, &sc, &m);
  const float dl = ld_f16(blk) * static_cast<float>(sc);
  const float ml = ld_f16(blk + 2) * static_cast<float>(m);
  uint32_t lo, hi;
  ld8<8>(blk + 16 + 32 * (w >> 6) + (w & 31), lo, hi);
  const int sh = 4 * ((w >> 5) & 1);
#pragma unroll
  for (int i = 0; i < 8; ++i) v[i] = dl * static_cast<float>((byte8(lo, hi, i) >> sh) & 15) - ml;
}
// Q5_K: Q4_K plus a 5th bit: bit w / 32 of qh[w % 32], worth 16.
template <>
__device__ __forceinline__ void decode8<GgmlType::Q5_K>(const uint8_t* __restrict__ row, int64_t c,
                                                        float v[8]) {
  const uint8_t* blk = row + (c >> 5) * sizeof(BlockQ5_K);
  const int w = static_cast<int>(c & 31) * 8;
  uint8_t sc, m;
  q4_k_scale_min(w >> 5, blk + 4, &sc, &m);
  const float dl = ld_f16(blk) * static_cast<float>(sc);
  const float ml = ld_f16(blk + 2) * static_cast<float>(m);
  uint32_t hlo, hhi, lo, hi;
  ld8<8>(blk + 16 + (w & 31), hlo, hhi);
  ld8<8>(blk + 48 + 32 * (w >> 6) + (w & 31), lo, hi);
  const int sh = 4 * ((w >> 5) & 1), hb = w >> 5;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const uint32_t q = ((byte8(lo, hi, i) >> sh) & 15) | (((byte8(hlo, hhi, i) >> hb) & 1) << 4);
    v[i] = dl * static_cast<float>(q) - ml;
  }
}
// Q6_K: per 128 values (h = w / 128, v = w % 128) the low nibble of value v
// is in ql[64h + v % 64] at shift 4 (v / 64), its top 2 bits in
// qh[32h + v % 32] at bit pair v / 32; sub-block w / 16 has a signed 8-bit
// scale: x = d * sc * (q - 32).
template <>
__device__ __forceinline__ void decode8<GgmlType::Q6_K>(const uint8_t* __restrict__ row, int64_t c,
                                                        float v[8]) {
  const uint8_t* blk = row + (c >> 5) * sizeof(BlockQ6_K);
  const int w = static_cast<int>(c & 31) * 8, h = w >> 7, vv = w & 127;
  const float dl = ld_f16(blk + 208) * static_cast<float>(static_cast<int8_t>(blk[192 + (w >> 4)]));
  uint32_t llo, lhi, hlo, hhi;
  ld8<2>(blk + 64 * h + (vv & 63), llo, lhi);
  ld8<2>(blk + 128 + 32 * h + (vv & 31), hlo, hhi);
  const int shl = 4 * (vv >> 6), shh = 2 * (vv >> 5);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int q = static_cast<int>(((byte8(llo, lhi, i) >> shl) & 15) |
                                   (((byte8(hlo, hhi, i) >> shh) & 3) << 4));
    v[i] = dl * static_cast<float>(q - 32);
  }
}

// Returns f.template operator()<T>() (a Status) for the GGUF type t, or an
// error naming `what` and t if t has no decoder.
template <typename F>
Status dispatch_decodable(GgmlType t, const char* what, F&& f) {
  switch (t) {
#define LS_DECODE_CASE(T) \
  case GgmlType::T:       \
    return f.template operator()<GgmlType::T>();
    LS_DECODE_CASE(F32)
    LS_DECODE_CASE(F16) LS_DECODE_CASE(BF16) LS_DECODE_CASE(Q8_0) LS_DECODE_CASE(Q4_0)
        LS_DECODE_CASE(Q4_1) LS_DECODE_CASE(Q5_0) LS_DECODE_CASE(Q5_1) LS_DECODE_CASE(Q2_K)
            LS_DECODE_CASE(Q3_K) LS_DECODE_CASE(Q4_K) LS_DECODE_CASE(Q5_K) LS_DECODE_CASE(Q6_K)
#undef LS_DECODE_CASE
                default : return make_error("%s: no kernel for type %s", what, ggml_type_name(t));
  }
}

}  // namespace ls
