// The CPU compute tier's matrix product: y = x · Wᵀ for a quantized weight W
// read in place from host memory (the mapped file or a RAM buffer), at close
// to memory bandwidth. Same contract as the reference matmul_f32
// (kernels/ref/matmul.h), which stays the oracle; W in Q4_0, Q8_0, Q4_K,
// Q5_K or Q6_K (matmul_cpu_supports says which shapes), other types keep the
// reference path.
//
// How: each weight row is unpacked once (kernels/cpu/unpack.h: int8 quants
// plus a scale and a min per 16 values, into per-thread scratch that stays
// in L1/L2) and dotted with every token of the batch, 8 at a time
// (kernels/cpu/dot.h), so the weights are read from memory once per call
// whatever n_tok is. AVX-512, AVX2 or portable variants, chosen at run time
// (kernels/cpu/isa.h).
//
// Activations are f32, not int8: every product w·x is the reference's
// (the weights are rebuilt bit for bit), so the result differs from
// matmul_f32 only by the order of the additions. Both sum in f32 with a
// bounded number of terms per partial sum, so for each output
//     |y - y_ref| <= (n_in / 4 + 32) · 2^-24 · sum_i |w_i · x_i|
// (a deterministic worst-case bound: the reference's chains have n_in/8 + 4
// roundings, ours at most n_in/8 + 5, plus one per product in each). The CPU
// backend is the CUDA backend's oracle, and this keeps it one. At batch 1
// the f32 products cost little next to the memory read; int8 activations
// (VNNI) are what larger batches (prefill on the CPU) would want next.
//
// Work split: rows in contiguous chunks, a few per thread (the pool's atomic
// counter balances late starters), each row computed by one thread in a
// fixed order, so results do not depend on the thread count. Nothing is
// allocated per call: the scratch is the caller's, sized once.
// defines: CpuMatmulScratch, matmul_cpu_supports(), matmul_cpu(), matmul_cpu_bound()
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/isa.h"
#include "kernels/ref/matmul.h"
#include "runtime/thread_pool.h"

namespace ls {

// Per-thread unpacked-row buffers, sized for rows up to max_n_in values.
class CpuMatmulScratch {
 public:
  CpuMatmulScratch() = default;
  CpuMatmulScratch(int n_threads, int64_t max_n_in) { reserve(n_threads, max_n_in); }
  void reserve(int n_threads, int64_t max_n_in);
  int64_t max_n_in() const { return max_n_in_; }
  int n_threads() const { return static_cast<int>(q_.size()); }

  struct Row {
    int8_t* q;
    float* s;
    float* m;
  };
  Row row(int thread) {
    return {q_[thread].data(), sm_[thread].data(), sm_[thread].data() + max_n_in_ / 16};
  }

 private:
  int64_t max_n_in_ = 0;
  std::vector<std::vector<int8_t>> q_;  // (threads, max_n_in)
  std::vector<std::vector<float>> sm_;  // (threads, 2 * max_n_in / 16): scales, then mins
};

// Whether matmul_cpu handles this weight (type and row length).
bool matmul_cpu_supports(const WeightView& w);

// x: (n_tok, n_in) row-major; y: (n_tok, n_out). Requires matmul_cpu_supports(w),
// scratch sized for pool.size() threads and w.n_in, and cpu_isa_supported(isa).
void matmul_cpu(ThreadPool& pool, const WeightView& w, const float* x, int64_t n_tok, float* y,
                CpuMatmulScratch& scratch, CpuIsa isa = cpu_isa_active());

// The bound above for one output, given sum_i |w_i x_i|.
inline double matmul_cpu_bound(int64_t n_in, double abs_products) {
  return (static_cast<double>(n_in) / 4 + 32) * 0x1p-24 * abs_products;
}

}  // namespace ls
