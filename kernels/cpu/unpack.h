// Stage 1 of the CPU matmul: a quantized weight row unpacked into one common
// form, "g16": n int8 quants q, and per group of 16 consecutive values a float
// scale s and (for the types with a min) a float offset m, so that
//     w[i] = s[i / 16] * q[i] - m[i / 16]      (two float ops, in that order)
// equals kernels/ref/quant.cpp's dequantized value bit for bit: s and m are
// the reference's own per-sub-block products (d * sc, dmin * m), and q is the
// integer the reference converts to float. Stage 2 (kernels/cpu/dot.h) then
// needs no knowledge of the format, so five types × three ISAs cost five
// unpackers per ISA family plus three dot kernels, not fifteen fused kernels.
//
// Per type (group = 16 values; n a multiple of 32, of 256 for the K-quants):
//   Q4_0  q = nibble - 8  (-8..7)    s = d                 no min
//   Q8_0  q = qs          (-128..127) s = d                no min
//   Q4_K  q = nibble      (0..15)    s = d * sc, m = dmin * mn  (sub-block of 32 = 2 groups)
//   Q5_K  q = nibble | 16 * bit (0..31)   as Q4_K
//   Q6_K  q = 6 bits - 32 (-32..31)  s = d * sc[g]         no min
// defines: G16Row, g16_has_min(), g16_supports(), unpack_g16_scales(),
//          unpack_g16_scalar(), unpack_g16_avx2()
#pragma once

#include <cstdint>

#include "io/ggml_type.h"

namespace ls {

// One unpacked row; the caller owns the storage (n, n/16 and n/16 elements).
struct G16Row {
  int8_t* q = nullptr;
  float* s = nullptr;
  float* m = nullptr;  // written only for types with a min
};

// Whether type t has a per-group offset (Q4_K, Q5_K).
bool g16_has_min(GgmlType t);
// Whether the unpackers handle t with rows of n_in values.
bool g16_supports(GgmlType t, int64_t n_in);

// Only the scales and mins (s, m) of n values, in plain C++.
void unpack_g16_scales(GgmlType t, const void* src, int64_t n, const G16Row& out);
// Unpack n values of type t at src. Plain C++ (the portable variant).
void unpack_g16_scalar(GgmlType t, const void* src, int64_t n, const G16Row& out);
// The same with AVX2 + F16C, scales included (compiled for them by a target
// attribute; call only when cpu_isa_supported(CpuIsa::Avx2)). Used by the AVX2 and AVX-512
// variants: unpacking is byte shuffling, which 256 bits already do at well above memory speed.
void unpack_g16_avx2(GgmlType t, const void* src, int64_t n, const G16Row& out);

}  // namespace ls
