// The ggml quantization blocks, byte for byte as GGUF files store them
// (ggml-common.h's block_q4_0 ... block_q8_K). Shared by host code and CUDA
// kernels: plain structs of fixed-size arrays, fp16 fields as raw uint16_t
// bits (decode with kernels/half.h on the host, __half on the device), and a
// static_assert on each size against the byte counts of io/ggml_type.cpp.
//
// Every format stores a row as consecutive blocks; a block covers QK values.
// The "legacy" formats (Q4_0 ... Q8_0) have one scale per 32 values; the
// K-quants have super-blocks of QK_K = 256 values split into sub-blocks of 16
// or 32 whose scales are themselves quantized against one fp16 super-scale.
// The bit layouts are explained below at each struct, and again in
// kernels/ref/quant.cpp where they are decoded.
//
// defines: QK4_0, QK4_1, QK5_0, QK5_1, QK8_0, QK_K, K_SCALE_SIZE,
//          BlockQ4_0, BlockQ4_1, BlockQ5_0, BlockQ5_1, BlockQ8_0,
//          BlockQ2_K, BlockQ3_K, BlockQ4_K, BlockQ5_K, BlockQ6_K, BlockQ8_K,
//          q4_k_scale_min(), q3_k_scale()
#pragma once

#include <stdint.h>

#if defined(__CUDACC__)
#define LS_HOST_DEVICE __host__ __device__
#else
#define LS_HOST_DEVICE
#endif

namespace ls {

inline constexpr int QK4_0 = 32;
inline constexpr int QK4_1 = 32;
inline constexpr int QK5_0 = 32;
inline constexpr int QK5_1 = 32;
inline constexpr int QK8_0 = 32;
inline constexpr int QK_K = 256;         // super-block size of the K-quants
inline constexpr int K_SCALE_SIZE = 12;  // bytes of packed 6-bit scales in Q4_K / Q5_K

// ---- Legacy formats: 32 values per block ------------------------------------------------

// Q4_0: x = d * (q - 8), q in 0..15. qs[j] holds value j in its low nibble and
// value j + 16 in its high nibble (not 2j / 2j+1).
struct BlockQ4_0 {
  uint16_t d;             // fp16 scale
  uint8_t qs[QK4_0 / 2];  // (32) nibbles
};
static_assert(sizeof(BlockQ4_0) == 18, "Q4_0 block is 18 bytes");

// Q4_1: x = d * q + m, q in 0..15; nibbles as in Q4_0.
struct BlockQ4_1 {
  uint16_t d;             // fp16 scale
  uint16_t m;             // fp16 offset (the block minimum)
  uint8_t qs[QK4_1 / 2];  // (32) nibbles
};
static_assert(sizeof(BlockQ4_1) == 20, "Q4_1 block is 20 bytes");

// Q5_0: x = d * (q - 16), q in 0..31. Low 4 bits as in Q4_0; the 5th bit of
// value j is bit j of the little-endian 32-bit word qh.
struct BlockQ5_0 {
  uint16_t d;             // fp16 scale
  uint8_t qh[4];          // 5th bits, one per value (a uint32 in byte order; unaligned)
  uint8_t qs[QK5_0 / 2];  // (32) low nibbles
};
static_assert(sizeof(BlockQ5_0) == 22, "Q5_0 block is 22 bytes");

// Q5_1: x = d * q + m, q in 0..31; bits as in Q5_0.
struct BlockQ5_1 {
  uint16_t d;             // fp16 scale
  uint16_t m;             // fp16 offset
  uint8_t qh[4];          // 5th bits
  uint8_t qs[QK5_1 / 2];  // (32) low nibbles
};
static_assert(sizeof(BlockQ5_1) == 24, "Q5_1 block is 24 bytes");

// Q8_0: x = d * q, q a signed byte.
struct BlockQ8_0 {
  uint16_t d;        // fp16 scale
  int8_t qs[QK8_0];  // (32) quants
};
static_assert(sizeof(BlockQ8_0) == 34, "Q8_0 block is 34 bytes");

// ---- K-quants: 256 values per super-block -------------------------------------------------
//
// The 2-bit and 3-bit quants (Q2_K, Q3_K, the low bits of Q6_K) share one
// packing: per 128 values, byte qs[l] (l < 32) holds values l, l+32, l+64 and
// l+96 in its bit pairs 0-1, 2-3, 4-5, 6-7.

// Q2_K: 16 sub-blocks of 16; x = d * sc * q - dmin * m, q in 0..3.
// scales[i] = sc | m << 4 (4 bits each) for sub-block i.
struct BlockQ2_K {
  uint8_t scales[QK_K / 16];  // (16) 4-bit scale | 4-bit min
  uint8_t qs[QK_K / 4];       // (64) 2-bit quants
  uint16_t d;                 // fp16 super-scale of the scales
  uint16_t dmin;              // fp16 super-scale of the mins
};
static_assert(sizeof(BlockQ2_K) == 84, "Q2_K block is 84 bytes");

// Q3_K: 16 sub-blocks of 16; x = d * (sc - 32) * (q - 4), q in 0..7 from 2
// low bits in qs and a high bit in hmask: bit k of hmask[l] (l < 32) is the
// high bit of value 32k + l. A set bit means "no -4" (the stored bit is the
// high bit of q, with q - 4 in -4..3). The 16 scales are 6-bit, packed in 12
// bytes: see q3_k_scale().
struct BlockQ3_K {
  uint8_t hmask[QK_K / 8];  // (32) high bits
  uint8_t qs[QK_K / 4];     // (64) low 2 bits
  uint8_t scales[12];       // 16 x 6-bit scales, offset by 32
  uint16_t d;               // fp16 super-scale
};
static_assert(sizeof(BlockQ3_K) == 110, "Q3_K block is 110 bytes");

// Q4_K: 8 sub-blocks of 32; x = d * sc * q - dmin * m, q in 0..15; sc and m
// are 6-bit, packed in 12 bytes: see q4_k_scale_min(). Per 64 values, qs[l]
// (l < 32) holds value l in its low nibble and value l + 32 in its high one.
struct BlockQ4_K {
  uint16_t d;                    // fp16 super-scale of the scales
  uint16_t dmin;                 // fp16 super-scale of the mins
  uint8_t scales[K_SCALE_SIZE];  // 8 x (6-bit scale, 6-bit min)
  uint8_t qs[QK_K / 2];          // (128) low nibbles
};
static_assert(sizeof(BlockQ4_K) == 144, "Q4_K block is 144 bytes");

// Q5_K: Q4_K plus a 5th bit: x = d * sc * q - dmin * m, q in 0..31. Bit 2k of
// qh[l] is the 5th bit of value 64k + l, bit 2k+1 that of value 64k + 32 + l.
struct BlockQ5_K {
  uint16_t d;                    // fp16 super-scale of the scales
  uint16_t dmin;                 // fp16 super-scale of the mins
  uint8_t scales[K_SCALE_SIZE];  // as Q4_K
  uint8_t qh[QK_K / 8];          // (32) 5th bits
  uint8_t qs[QK_K / 2];          // (128) low nibbles, as Q4_K
};
static_assert(sizeof(BlockQ5_K) == 176, "Q5_K block is 176 bytes");

// Q6_K: 16 sub-blocks of 16; x = d * sc * (q - 32), q in 0..63, sc a signed
// byte. Per 128 values: ql[l] / ql[l+32] (l < 32) hold in their low nibbles
// values l / l+32 and in their high nibbles values l+64 / l+96; qh[l] holds
// the top 2 bits of values l, l+32, l+64, l+96 in bit pairs 0-1 .. 6-7.
struct BlockQ6_K {
  uint8_t ql[QK_K / 2];      // (128) low 4 bits
  uint8_t qh[QK_K / 4];      // (64) high 2 bits
  int8_t scales[QK_K / 16];  // (16) 8-bit scales
  uint16_t d;                // fp16 super-scale
};
static_assert(sizeof(BlockQ6_K) == 210, "Q6_K block is 210 bytes");

// Q8_K: the activations' format for K-quant dot products (never in files):
// x = d * q with a float d, plus the sums of each 16 quants.
struct BlockQ8_K {
  float d;                   // scale
  int8_t qs[QK_K];           // (256) quants
  int16_t bsums[QK_K / 16];  // (16) sums of qs in groups of 16
};
static_assert(sizeof(BlockQ8_K) == 292, "Q8_K block is 292 bytes");

// ---- Scale unpacking shared by host and device ----------------------------------------------

// Q4_K / Q5_K: scale and min of sub-block j (0..7) from the 12 packed bytes.
//   bytes 0-3:  low 6 bits = scale of j = 0..3; top 2 bits = bits 4-5 of the scale of j + 4
//   bytes 4-7:  low 6 bits = min   of j = 0..3; top 2 bits = bits 4-5 of the min   of j + 4
//   bytes 8-11: low nibble = bits 0-3 of the scale of j + 4; high nibble = bits 0-3 of its min
LS_HOST_DEVICE inline void q4_k_scale_min(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// Q3_K: 6-bit scale of sub-block j (0..15), stored offset by 32; returns sc - 32.
//   bytes 0-7:  low nibble = bits 0-3 of scale j (j < 8); high nibble = those of scale j + 8
//   bytes 8-11: bit pair 2*(j/4) of byte 8 + j%4 = bits 4-5 of scale j
LS_HOST_DEVICE inline int q3_k_scale(int j, const uint8_t* s) {
  const int lo = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
  const int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (lo | (hi << 4)) - 32;
}

}  // namespace ls
