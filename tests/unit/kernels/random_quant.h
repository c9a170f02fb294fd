// Random quantized weights and activations for the CPU matmul tests: every
// bit pattern of quants, high bits and packed scales, with the fp16 scales
// replaced by finite values of either sign, small enough that products stay
// tame; activations fresh normal floats.
// defines: test::half_fields(), test::random_weight(), test::random_x()
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "io/ggml_type.h"
#include "kernels/half.h"
#include "kernels/quant_blocks.h"

namespace ls::test {

// Byte offsets of the fp16 fields in one block of t.
inline std::vector<size_t> half_fields(GgmlType t) {
  switch (t) {
    case GgmlType::Q4_0:
    case GgmlType::Q8_0:
      return {0};
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
      return {offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin)};
    case GgmlType::Q6_K:
      return {offsetof(BlockQ6_K, d)};
    default:
      return {};
  }
}

// n_out rows of n_in values of type t.
inline std::vector<uint8_t> random_weight(GgmlType t, int64_t n_in, int64_t n_out,
                                          std::mt19937& rng) {
  const GgmlTypeTraits tr = ggml_traits(t);
  const size_t bytes = ggml_row_bytes(t, n_in) * n_out;
  std::vector<uint8_t> w(bytes);
  for (auto& b : w) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  for (size_t off = 0; off < bytes; off += tr.block_bytes)
    for (size_t f : half_fields(t)) {
      const uint16_t h = fp32_to_fp16(scale(rng));
      std::memcpy(&w[off + f], &h, 2);
    }
  return w;
}

inline std::vector<float> random_x(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(n);
  for (auto& v : x) v = d(rng);
  return x;
}

}  // namespace ls::test
