// The constants of the SIMD exp of the attention blocks (attention_cpu_avx2
// and _avx512.cpp): exp(x) = 2^n · exp(r), n = round(x · log2 e),
// r = x - n · ln 2 with |r| <= ln 2 / 2, exp(r) by its Taylor polynomial.
//   ln 2 in two parts (Cody-Waite): kLn2Hi has 15 significant bits, so
//   n · kLn2Hi is exact for |n| <= 127 and r loses nothing to cancellation.
//   Degree 7: the truncation error is below |r|^8 / 8! = 5e-9 relative
//   (a tenth of an ulp); with the Horner roundings, a few ulp in all.
//   [kExpMin, kExpMax]: 2^n stays a normal float (exponent field 1..254);
//   below kExpMin the kernels return 0, exp(-87) = 1.6e-38 being nothing
//   next to the block's largest term, exp(0) = 1.
// defines: kExpMin, kExpMax, kLog2e, kLn2Hi, kLn2Lo, kExpPoly
#pragma once

namespace ls {

inline constexpr float kExpMin = -87.0f;
inline constexpr float kExpMax = 88.0f;
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693145751953125f;       // 0x3f317200
inline constexpr float kLn2Lo = 1.42860682028622680e-6f;  // ln 2 - kLn2Hi
// 1/k!, k = 0..7.
inline constexpr float kExpPoly[8] = {1.0f,      1.0f,       0.5f,       1.0f / 6,
                                      1.0f / 24, 1.0f / 120, 1.0f / 720, 1.0f / 5040};

}  // namespace ls
