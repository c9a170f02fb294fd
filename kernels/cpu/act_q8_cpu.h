// The CPU tier's 8-bit activations: x quantized once per matmul call (or
// once for the matmuls that share an input, like q/k/v) into the format of
// kernels/act_q8.h, bit for bit what quantize_act_q8_ref gives, plus the
// per-block sums that the int8 kernels (kernels/cpu/dot_q8.h) need for the
// weights' offsets and mins:
//     ds[b]   = d[b] * sum of q over block b (32 values)       (one f32 rounding)
//     ds16[g] = d[g/2] * sum of q over half-block g (16 values) (one f32 rounding)
// Q4_K/Q5_K use ds for their mins (w = s*q - m: the m term is m * ds); Q6_K
// uses ds16 for its -32 (its scales are per 16); Q4_0 and Q8_0 use ds for
// the offset the unsigned form of their quants carries (see dot_q8.h). All
// are functions of the quantized x only.
//
// Layout, per token t of n values (nb = n / 32):
//   q    (n_tok, n)      int8
//   d    (n_tok, nb)     f32
//   ds   (n_tok, nb)     f32
//   ds16 (n_tok, 2 nb)   f32
//   qk4  (n_tok, n)      int8: q again, each chunk of 256 values with its
//                        32-blocks in the order 0 2 1 3 4 6 5 7 (kActQ8K4Order)
//   dds  (n_tok, n / 16) f32: per chunk of 256, its 8 d then its 8 ds (one
//                        load gives a K-quant super-block both factors)
// qk4 is q in the order in which Q4_K / Q5_K quants come out of their packed
// bytes without a lane shuffle (low nibbles of 64 bytes: values 0-31 and
// 64-95; high nibbles: 32-63 and 96-127), so the AVX-512 kernel loads both
// operands straight (kernels/cpu/dot_q8_avx512.cpp). Chunks that a row of n
// values does not fill (n % 256) are left out of qk4; no K-quant has them.
// defines: ActQ8View, ActQ8Buffer, quantize_act_q8_cpu(), quantize_act_q8_cpu_blocks()
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/act_q8.h"
#include "kernels/cpu/isa.h"

namespace ls {

// Position of 32-block j (0..7) of a 256-value chunk in qk4 (its own
// inverse: a block at position p holds block kActQ8K4Order[p]).
constexpr int kActQ8K4Order[8] = {0, 2, 1, 3, 4, 6, 5, 7};

struct ActQ8View {
  const int8_t* q = nullptr;
  const float* d = nullptr;
  const float* ds = nullptr;
  const float* ds16 = nullptr;
  int64_t n = 0;  // values per token (a multiple of 32)
  const int8_t* qk4 = nullptr;
  const float* dds = nullptr;

  const int8_t* q_at(int64_t t) const { return q + t * n; }
  const int8_t* qk4_at(int64_t t) const { return qk4 + t * n; }
  const float* dds_at(int64_t t) const { return dds + t * (n / 16); }
  const float* d_at(int64_t t) const { return d + t * (n / kActQ8Block); }
  const float* ds_at(int64_t t) const { return ds + t * (n / kActQ8Block); }
  const float* ds16_at(int64_t t) const { return ds16 + t * (n / 16); }
};

// Owns the storage; grows in reserve() only (never per call once sized).
class ActQ8Buffer {
 public:
  void reserve(int64_t n_tok, int64_t n);
  int64_t capacity() const { return static_cast<int64_t>(q_.size()); }  // values
  // The view of n_tok tokens of n values (reserve(n_tok, n) first).
  ActQ8View view(int64_t n) const {
    return {q_.data(), d_.data(), ds_.data(), ds16_.data(), n, qk4_.data(), dds_.data()};
  }
  int8_t* q() { return q_.data(); }
  float* d() { return d_.data(); }
  float* ds() { return ds_.data(); }
  float* ds16() { return ds16_.data(); }
  int8_t* qk4() { return qk4_.data(); }
  float* dds() { return dds_.data(); }

 private:
  std::vector<int8_t> q_, qk4_;
  std::vector<float> d_, ds_, ds16_, dds_;
};

// x: (n_tok, n) f32, n a multiple of 32; out reserved for it. isa picks the
// SIMD variant (AVX2 for both SIMD ISAs: 8192 values are a few microseconds);
// every variant gives the same bits as quantize_act_q8_ref.
void quantize_act_q8_cpu(const float* x, int64_t n_tok, int64_t n, ActQ8Buffer& out,
                         CpuIsa isa = cpu_isa_active());
// Blocks [b0, b1) of the same, counted over all tokens (block b is values
// 32b .. 32b + 31 of x, n values per token): every block is independent, so
// threads can quantize disjoint ranges of one input (the CPU backend fuses it
// with swiglu).
void quantize_act_q8_cpu_blocks(const float* x, int64_t n, int64_t b0, int64_t b1,
                                ActQ8Buffer& out, CpuIsa isa = cpu_isa_active());

}  // namespace ls
