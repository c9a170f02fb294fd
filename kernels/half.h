// IEEE half (f16) and bfloat16 conversions, plain C++ so host references and
// tests need no CUDA headers. Bit-exact with ggml's ggml_fp16_to_fp32 /
// ggml_fp32_to_fp16 (round to nearest even) and its bf16 conversion (round to
// nearest even, NaN kept quiet).
// Checked against ggml over every input (all 2^16 halves, all 2^32 floats to
// fp16 and to bf16): see tests/data/ggml_golden/README.md.
// defines: fp16_to_fp32, fp32_to_fp16, bf16_to_fp32, fp32_to_bf16
#pragma once

#include <cstdint>
#include <cstring>

namespace ls {

inline float bits_to_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t f32_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0) {
    if (man == 0) return bits_to_f32(sign);  // signed zero
    // Subnormal half: value = man * 2^-24, exact in float.
    float v = static_cast<float>(man) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  if (exp == 31) {
    // inf, or nan: payload kept, quiet bit set (a signalling half nan becomes
    // quiet, as in ggml's conversion and the F16C instruction)
    return bits_to_f32(sign | 0x7f800000u | (man << 13) | (man ? 0x00400000u : 0u));
  }
  return bits_to_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

inline uint16_t fp32_to_fp16(float f) {
  const uint32_t x = f32_to_bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return sign | (ax > 0x7f800000u ? 0x7e00u : 0x7c00u);  // nan / inf
  if (ax >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: overflow to inf
  if (ax < 0x38800000u) {
    // Result is subnormal (or zero): value / 2^-24, rounded to nearest even.
    const float v = bits_to_f32(ax) * 16777216.0f;  // exact scaling by 2^24
    // nearbyint with the default rounding mode is round-half-even.
    float r = __builtin_nearbyintf(v);
    return sign | static_cast<uint16_t>(r);
  }
  // Normal: rebias exponent, round mantissa 23 -> 10 bits to nearest even.
  uint32_t m = ax + 0xfffu + ((ax >> 13) & 1u);  // add half-ulp (ties to even)
  m -= 112u << 23;
  return sign | static_cast<uint16_t>(m >> 13);
}

inline float bf16_to_fp32(uint16_t b) {
  return bits_to_f32(static_cast<uint32_t>(b) << 16);
}

inline uint16_t fp32_to_bf16(float f) {
  uint32_t x = f32_to_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 64);  // quiet nan
  return static_cast<uint16_t>((x + (0x7fffu + ((x >> 16) & 1u))) >> 16);
}

}  // namespace ls
