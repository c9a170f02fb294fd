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
// backend is the CUDA backend's oracle, and this keeps it one. Its price:
// every weight becomes a float and is multiplied on its own, which on the
// GPU machine's cores is compute-bound at 0.3-0.6 of the host read
// (bench/results/2026-11-30-h200-cpu-q8.md); hence the q8 path below.
//
// 8-bit activations (CpuAct::Q8, the default of the engine): x is quantized
// once (kernels/cpu/act_q8_cpu.h, bit for bit quantize_act_q8_ref), then each
// weight row is dotted straight from its packed blocks with int8 products
// (kernels/cpu/dot_q8.h: AVX-512 VNNI, AVX2 or portable), the function of
// matmul_act_q8_ref (kernels/ref/act_q8.h) within the bound stated in
// dot_q8.h. The weights are read once per call, n_tok 1..8 per pass over a
// row, larger batches in tiles of 8. f32 (above) stays the exact oracle.
//
// The chunk form (kernels/cpu/q8_chunks.h): where x also carries its
// per-256 quantization (ActQ8Buffer::set_chunks; the CPU backend sets it
// from cpu_q8_chunks_active), the K-quant weights take the chunk form's dot
// (kernels/cpu/dot_q8c.h) and, from gemm_q8c_min_tokens on where the CPU has
// AMX, its GEMM (kernels/cpu/gemm_q8c.h); the other types keep the lane form.
//
// Wide batches (prompts) take the GEMM instead (kernels/cpu/gemm_q8.h: tiles
// of rows × tokens, each weight block decoded once per tile), from
// gemm_q8_min_tokens tokens on; it computes the same bits, so the choice is
// by speed alone (matmul_cpu_q8_auto below is the engine's).
//
// Work split (q8): rows in contiguous ranges claimed from an atomic cursor,
// long at first and shorter as the job drains, so the threads end together;
// weights that share x (q/k/v, gate/up) run as the parts of one job, one
// wake-up and one ragged end instead of three (kernels/cpu/matmul_cpu_q8.cpp).
// Each row is computed by one thread in a fixed order, so results do not
// depend on the thread count. Nothing is allocated per call: the scratch is
// the caller's, sized once.
// defines: CpuMatmulScratch, matmul_cpu_supports(),
//          matmul_cpu(), matmul_cpu_bound(), matmul_cpu_quantize(), matmul_cpu_q8(),
//          matmul_cpu_q8_parts(), matmul_cpu_q8_auto(), CpuMatmulTuning
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/act_q8_cpu.h"
#include "kernels/cpu/cpu_act.h"
#include "kernels/cpu/gemm_q8.h"
#include "kernels/cpu/gemm_q8c.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/matmul_part.h"
#include "kernels/ref/matmul.h"
#include "runtime/status.h"
#include "runtime/thread_pool.h"

namespace ls {

// Knobs of the q8 path's work split and prefetch (the defaults are what the
// engine runs; bench_cpu_matmul sweeps them).
struct CpuMatmulTuning {
  // A claim takes remaining rows / (threads * tasks_per_thread) (at least
  // 8): 1 starts with a thread's whole share divided by one, larger values
  // start with shorter ranges (see "Work split" above).
  int tasks_per_thread = 2;
  // Which row ahead a thread prefetches while it computes one (0: none, 1:
  // the next, k: k rows ahead), spread over the current row's loop.
  int prefetch_rows = 1;
  // Where the prefetched row goes: 0 L1 (prefetcht0), 1 L2 (t1), 2 t2, 3
  // non-temporal (nta). AVX-512 q8 kernel only.
  int prefetch_hint = 0;
};

// The tuning with NAME=VALUE overrides from a string like
// "tasks=2,pf=1,hint=0" (the LS_CPU_TUNING environment variable of the CPU
// backend; bench_cpu_matmul sweeps the same knobs). An unknown name or a
// value out of range is an error naming it.
Expected<CpuMatmulTuning> parse_cpu_tuning(const std::string& s, CpuMatmulTuning base = {});

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
  // The 8-bit activations of the q8 path (one buffer, shared by the threads).
  ActQ8Buffer& act() { return act_; }
  // The GEMM's panel and tiles (wide batches, kernels/cpu/gemm_q8.h).
  GemmQ8Scratch& gemm() { return gemm_; }
  // The chunk form's (kernels/cpu/gemm_q8c.h).
  GemmQ8cScratch& gemm_chunks() { return gemm_c_; }

  Row row(int thread) {
    return {q_[thread].data(), sm_[thread].data(), sm_[thread].data() + max_n_in_ / 16};
  }

 private:
  int64_t max_n_in_ = 0;
  std::vector<std::vector<int8_t>> q_;  // (threads, max_n_in)
  std::vector<std::vector<float>> sm_;  // (threads, 2 * max_n_in / 16): scales, then mins
  ActQ8Buffer act_;
  GemmQ8Scratch gemm_;
  GemmQ8cScratch gemm_c_;
};

// Whether matmul_cpu handles this weight (type and row length).
bool matmul_cpu_supports(const WeightView& w);

// x: (n_tok, n_in) row-major; y: (n_tok, n_out). Requires matmul_cpu_supports(w),
// scratch sized for pool.size() threads and w.n_in, and cpu_isa_supported(isa).
void matmul_cpu(ThreadPool& pool, const WeightView& w, const float* x, int64_t n_tok, float* y,
                CpuMatmulScratch& scratch, CpuIsa isa = cpu_isa_active());

// Quantizes x (n_tok, n_in) into scratch.act() (growing it if needed: size it
// once with act().reserve to allocate nothing per call) and returns its view.
ActQ8View matmul_cpu_quantize(const float* x, int64_t n_tok, int64_t n_in,
                              CpuMatmulScratch& scratch, CpuIsa isa = cpu_isa_active());
// The same over the pool's threads where x is large (wide batches): the
// quantizer is per value, a 32 x 8192 input on one thread kept fifteen idle.
ActQ8View matmul_cpu_quantize(ThreadPool& pool, const float* x, int64_t n_tok, int64_t n_in,
                              CpuMatmulScratch& scratch, CpuIsa isa = cpu_isa_active());

// y = x · Wᵀ with x already quantized (x.n == w.n_in, n_tok tokens). Requires
// matmul_cpu_supports(w).
void matmul_cpu_q8(ThreadPool& pool, const WeightView& w, const ActQ8View& x, int64_t n_tok,
                   float* y, CpuIsa isa = cpu_isa_active(), const CpuMatmulTuning& tune = {});

// Weights that share one input x, computed in one job (y = x · Wᵀ each).
void matmul_cpu_q8_parts(ThreadPool& pool, const MatmulQ8Part* parts, int n_parts,
                         const ActQ8View& x, int64_t n_tok, CpuIsa isa = cpu_isa_active(),
                         const CpuMatmulTuning& tune = {});

// The engine's choice, part by part: the GEMM from gemm_q8_min_tokens(isa,
// type, n) tokens on (its panel and tiles in scratch.gemm()), the row-by-row
// dot below. Same bits.
void matmul_cpu_q8_auto(ThreadPool& pool, const MatmulQ8Part* parts, int n_parts,
                        const ActQ8View& x, int64_t n_tok, CpuMatmulScratch& scratch,
                        CpuIsa isa = cpu_isa_active(), const CpuMatmulTuning& tune = {});

// The bound above for one output, given sum_i |w_i x_i|.
inline double matmul_cpu_bound(int64_t n_in, double abs_products) {
  return (static_cast<double>(n_in) / 4 + 32) * 0x1p-24 * abs_products;
}

}  // namespace ls
