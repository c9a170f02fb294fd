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
//   qil  (n_tok, n)      int8: q again, each chunk of 256 values with its
//                        32-blocks interleaved by 4-byte groups: byte 32v +
//                        4j + e of a chunk is value 32j + 4v + e (the GEMM's
//                        layout, kernels/cpu/gemm_q8.h), so a vpdpbusd puts
//                        block j's products in int32 lanes j and 8 + j
// With chunks on (ActQ8Buffer::set_chunks; the chunk form of
// kernels/cpu/q8_chunks.h), the same x also quantized per chunk of 256:
//   qc   (n_tok, n)       int8, natural order
//   dc   (n_tok, n / 256) f32: the chunk's scale dx_c
//   bsc  (n_tok, n / 32)  int16: sum of qc over each block of 32 (exact)
// (n % 256 == 0 only; otherwise they are left unset.)
// qk4 is q in the order in which Q4_K / Q5_K quants come out of their packed
// bytes without a lane shuffle (low nibbles of 64 bytes: values 0-31 and
// 64-95; high nibbles: 32-63 and 96-127), so the AVX-512 kernel loads both
// operands straight (kernels/cpu/dot_q8_avx512.cpp). Chunks that a row of n
// values does not fill (n % 256) are left out of qk4; no K-quant has them.
// defines: ActQ8View, ActQ8Buffer, quantize_act_q8_cpu(), quantize_act_q8_cpu_blocks(),
//          quantize_act_q8c_chunk()
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
  const int8_t* qil = nullptr;
  const int8_t* qc = nullptr;  // the chunk form's (null: chunks off)
  const float* dc = nullptr;
  const int16_t* bsc = nullptr;

  const int8_t* q_at(int64_t t) const { return q + t * n; }
  const int8_t* qk4_at(int64_t t) const { return qk4 + t * n; }
  const int8_t* qil_at(int64_t t) const { return qil + t * n; }
  const float* d_at(int64_t t) const { return d + t * (n / kActQ8Block); }
  const float* ds_at(int64_t t) const { return ds + t * (n / kActQ8Block); }
  const float* ds16_at(int64_t t) const { return ds16 + t * (n / 16); }
  const int8_t* qc_at(int64_t t) const { return qc + t * n; }
  const float* dc_at(int64_t t) const { return dc + t * (n / 256); }
  const int16_t* bsc_at(int64_t t) const { return bsc + t * (n / kActQ8Block); }
};

// Owns the storage; grows in reserve() only (never per call once sized).
class ActQ8Buffer {
 public:
  void reserve(int64_t n_tok, int64_t n);
  int64_t capacity() const { return static_cast<int64_t>(q_.size()); }  // values
  // Whether the quantizers also write the chunk form's qc, dc, bsc (storage
  // follows at the next reserve).
  void set_chunks(bool on);
  bool chunks() const { return chunks_; }
  // The view of n_tok tokens of n values (reserve(n_tok, n) first).
  ActQ8View view(int64_t n) const {
    const bool c = chunks_ && n % 256 == 0;
    return {q_.data(),
            d_.data(),
            ds_.data(),
            ds16_.data(),
            n,
            qk4_.data(),
            qil_.data(),
            c ? qc_.data() : nullptr,
            c ? dc_.data() : nullptr,
            c ? bsc_.data() : nullptr};
  }
  int8_t* q() { return q_.data(); }
  float* d() { return d_.data(); }
  float* ds() { return ds_.data(); }
  float* ds16() { return ds16_.data(); }
  int8_t* qk4() { return qk4_.data(); }
  int8_t* qil() { return qil_.data(); }
  int8_t* qc() { return qc_.data(); }
  float* dc() { return dc_.data(); }
  int16_t* bsc() { return bsc_.data(); }

 private:
  std::vector<int8_t> q_, qk4_, qil_, qc_;
  std::vector<float> d_, ds_, ds16_, dc_;
  std::vector<int16_t> bsc_;
  bool chunks_ = false;
};

// x: (n_tok, n) f32, n a multiple of 32; out reserved for it. isa picks the
// SIMD variant (AVX2 for both SIMD ISAs: 8192 values are a few microseconds);
// every variant gives the same bits as quantize_act_q8_ref.
void quantize_act_q8_cpu(const float* x, int64_t n_tok, int64_t n, ActQ8Buffer& out,
                         CpuIsa isa = cpu_isa_active());
// Blocks [b0, b1) of the same, counted over all tokens (block b is values
// 32b .. 32b + 31 of x, n values per token): every block is independent, so
// threads can quantize disjoint ranges of one input (the CPU backend fuses it
// with swiglu). With chunks on, the chunks wholly inside [b0, b1) get their
// chunk form too: ranges must then start and end on chunks (multiples of 8
// blocks) for every chunk to be covered.
void quantize_act_q8_cpu_blocks(const float* x, int64_t n, int64_t b0, int64_t b1, ActQ8Buffer& out,
                                CpuIsa isa = cpu_isa_active());

// One chunk of 256 values in the chunk form (kernels/cpu/q8_chunks.h):
// q (256), *d, bsum (8). Portable; the quantizers above call it.
void quantize_act_q8c_chunk(const float* x, int8_t* q, float* d, int16_t* bsum);

}  // namespace ls
