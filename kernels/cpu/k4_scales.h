// The packed 6-bit scales and mins of Q4_K / Q5_K (12 bytes, layout at
// q4_k_scale_min in kernels/quant_blocks.h) as 8 scale bytes and 8 min bytes,
// four at a time in 32-bit words a, b, c (bytes 0-3, 4-7, 8-11):
//   scales 0-3 = a & 63          mins 0-3 = b & 63
//   scales 4-7 = c low nibbles | top 2 bits of a's bytes moved to bits 4-5
//   mins   4-7 = c high nibbles | top 2 bits of b's bytes moved to bits 4-5
// Plain integer code, shared by the SIMD kernels (which widen the bytes).
// defines: k4_scale_min_bytes()
#pragma once

#include <cstdint>
#include <cstring>

namespace ls {

inline void k4_scale_min_bytes(const uint8_t* packed, uint64_t* sc, uint64_t* mn) {
  uint32_t a, b, c;
  std::memcpy(&a, packed, 4);
  std::memcpy(&b, packed + 4, 4);
  std::memcpy(&c, packed + 8, 4);
  *sc = uint64_t(a & 0x3F3F3F3Fu) | uint64_t((c & 0x0F0F0F0Fu) | ((a >> 2) & 0x30303030u)) << 32;
  *mn = uint64_t(b & 0x3F3F3F3Fu) | uint64_t(((c >> 4) & 0x0F0F0F0Fu) | ((b >> 2) & 0x30303030u))
                                        << 32;
}

}  // namespace ls
