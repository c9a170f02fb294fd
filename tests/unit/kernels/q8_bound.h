// The error bound of the CPU tier's int8-activation matmuls against
// matmul_act_q8_ref (stated in kernels/cpu/dot_q8.h), for the tests of the
// row-by-row dot and of the GEMM:
//     |y - y_ref| <= (n/16 + 16) · 2^-22 · T
// with T computed from the unpacked weights (s, q, m per 16 values) and the
// quantized x of one token.
// defines: test::q8_bound_t(), test::q8_bound()
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "kernels/cpu/dot_q8.h"
#include "kernels/cpu/unpack.h"

namespace ls::test {

// T of the bound for one row and one token (x quantized by the reference).
inline double q8_bound_t(GgmlType t, const uint8_t* row, int64_t n, const int8_t* q,
                         const float* d) {
  std::vector<int8_t> wq(n);
  std::vector<float> s(n / 16), m(n / 16, 0.0f);
  unpack_g16_scalar(t, row, n, {wq.data(), s.data(), g16_has_min(t) ? m.data() : nullptr});
  const double r = dot_q8_bound_r(t);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum += std::fabs(double(d[i / 32])) * std::abs(int(q[i])) *
           (r * std::fabs(double(s[i / 16])) + std::fabs(double(m[i / 16])));
  return sum;
}

inline double q8_bound(int64_t n, double t) {
  return (double(n) / 16 + 16) * 0x1p-22 * t;
}

}  // namespace ls::test
