// Matrix products on the GPU: y (n_tok, n_out) = x (n_tok, n_in) · Wᵀ for a
// weight W of any GGUF type, in device memory in its GGUF layout (n_out rows
// of n_in elements). Decode batches (n_tok <= 8) run fused dequantize-GEMV
// kernels that read each weight once for the whole batch (int8 x and dp4a,
// kernels/gemv_q8.cu, for Q4_K, Q5_K, Q6_K, Q8_0, Q4_0; f32 x,
// kernels/gemv_q.cu, for the rest); batches of 9..64 (batched decode, verify
// steps, short prompts) int8 tensor cores over the quantized weight where
// that is faster (kernels/mmq_q8.cu: Q4_K, Q5_K, Q6_K, Q8_0); larger batches (prefill) and
// the other types dequantize to f16 and run a tensor-core GEMM, except under
// f32 activations (set_act_q8(false)), which keep the f32 GEMV at every width. The CPU reference
// is kernels/ref/matmul.h (matmul_f32).
// defines: MatmulContext, MatmulPath, PrefillPath, matmul_cuda, matmul_cuda_shared_x,
//          matmul_gemm_f16
#pragma once

#include <cuda_runtime.h>

#include <memory>

#include "kernels/l2_prefetch.cuh"
#include "kernels/quantize_act.cuh"
#include "kernels/ref/matmul.h"  // WeightView
#include "runtime/status.h"

namespace ls {

// Which kernels matmul_cuda runs. Auto: the fused GEMV for n_tok <= 8; the
// int8 tensor-core GEMM (kernels/mmq_q8.cuh) from 9 tokens up to where it
// measured faster for the weight's type and rows (mmq_auto_max_tok: 16 to
// 64; LS_MMQ=0 turns it off, and LS_MMQ_MIN_TOK=2..8 gives it decode widths
// from there, for A/B); else dequantize + GEMM (cuBLAS when
// libcublas loads, else the WMMA fallback). The others force one path, for tests and benchmarks
// (Mmq: at any width up to 64, for the types it covers).
enum class MatmulPath { Auto, Gemv, GemmCublas, GemmWmma, Mmq };

// How a GEMM batch gets its f16 operands; every choice gives the same bits.
//   Legacy:  the v2 dequantization kernel (DequantKernel::Rows) and x
//            converted once per weight (the path before 2026-11-30).
//   Tile:    DequantKernel::Tile, and x converted once per group of
//            matmul_cuda_shared_x.
//   Overlap: Tile, and within a group the next weight is dequantized on a
//            second stream into a second scratch while the current GEMM
//            runs (the scratch is allocated on first use; if that fails,
//            Tile).
// The context starts from LS_PREFILL_PATH=legacy|tile|overlap (A/B runs),
// else the default below. Tile, because overlap's second scratch is as large
// as the largest weight (the output head: 1 GiB on an 8b) and is not in the
// planner's reserves, for +2.2 % on an 8b prompt of 512 and -1.7 % on a 70b
// layer (bench/results/2026-11-30-h200-prefill-2.md).
enum class PrefillPath { Legacy, Tile, Overlap };
constexpr PrefillPath kDefaultPrefillPath = PrefillPath::Tile;

// Per-stream state of the matmuls (cuBLAS handle, dequantization scratch).
class MatmulContext {
 public:
  // max_weight_elems: the f16 scratch of the GEMM path, in elements: the
  // largest weight a GEMM dequantizes whole; larger ones go in slices of
  // rows (at least one row must fit).
  static Expected<std::unique_ptr<MatmulContext>> create(cudaStream_t stream,
                                                         int64_t max_weight_elems);
  ~MatmulContext();
  // cuBLAS is loaded at run time (dlopen of libcublas.so.13), so a binary
  // runs where it is missing and falls back to the WMMA GEMM.
  bool has_cublas() const;
  const char* gemm_backend() const;  // "cublas (libcublas.so.13)" or "wmma (why)"
  void set_path(MatmulPath p);
  // The int8 GEMM's kernel (MmqParams::version: 0 its default, 1 the
  // register kernel, 2 the streamed one), for benches that compare them in
  // one process.
  void set_mmq_version(int v);
  // The int8 GEMM at decode widths where it measured faster than the GEMV
  // (mmq_decode_min_tok): 1 on, 0 off, -1 (the default) as LS_MMQ_DECODE
  // says (off unless 1).
  void set_mmq_decode(int on);
  // 8-bit x in the decode GEMVs and f16 operands in the GEMM (default), or
  // f32 x (kernels/gemv_q.cu) at every width: the oracle, no f16 rounding.
  void set_act_q8(bool on);
  MatmulPath path() const;
  void set_prefill_path(PrefillPath p);
  PrefillPath prefill_path() const;
  static const char* prefill_path_name(PrefillPath p);  // "legacy", "tile", "overlap"
  // Sizes the scratch of the 8-bit activations of the decode GEMV (v5) for
  // rows of up to max_n_in values, kGemvMaxTok of them. Call it before a
  // decode is captured into a CUDA graph: matmul_cuda grows the scratch on
  // demand only outside a capture.
  Status reserve_gemv_x(int64_t max_n_in);
  // For a kernel that writes its output's 8-bit form itself (rmsnorm and
  // swiglu with their q8 outputs, kernels/rmsnorm.cuh): whether a decode
  // matmul of this weight and width reads the GEMV's 8-bit x, and the scratch to write
  // it to (reserve_gemv_x first). After that kernel is enqueued,
  // note_gemv_x(x, ...) says the scratch holds x's quantization, and a
  // matmul of x with x_unchanged reuses it.
  bool takes_q8(const WeightView& w, int64_t n_tok) const;
  ActQ8Device gemv_x() const;
  void note_gemv_x(const float* x, int64_t n_in, int64_t n_tok);
  // The next matmul, where it is an 8-bit decode GEMV, asks the L2 for pf as
  // its launch starts (GemvQ8Params::pf: the weights of the GEMV after it);
  // any next matmul drops it, so it never reaches a later one.
  void set_next_prefetch(const L2Prefetch& pf);
  struct Impl;
  Impl* impl() { return impl_.get(); }

 private:
  MatmulContext() = default;
  std::unique_ptr<Impl> impl_;
};

// x, y: device f32, row-major. w.data: device pointer. Asynchronous on `stream`.
// x_unchanged: x is the same buffer with the same values as in the previous
// call on this context (q/k/v and gate/up share their input), so a decode
// GEMV reuses the 8-bit x that call made instead of quantizing it again.
Status matmul_cuda(MatmulContext& ctx, const WeightView& w, const float* x, int64_t n_tok, float* y,
                   cudaStream_t stream, bool x_unchanged = false);

// The matmuls of one input: y[i] (n_tok, w[i].n_out) = x · w[i]ᵀ for
// i < n_w (q, k, v of one normed hidden state; gate and up). The same
// results as n_w calls of matmul_cuda; for a GEMM batch x is converted to
// f16 once (a decode batch's 8-bit x once, and weights of one type with an
// 8-bit GEMV run as one launch), and PrefillPath::Overlap hides the
// dequantization of w[i+1] behind the GEMM of w[i]. The y[i] must not
// overlap x. x_unchanged: as matmul_cuda's, for the first weight.
Status matmul_cuda_shared_x(MatmulContext& ctx, const WeightView* w, float* const* y, int n_w,
                            const float* x, int64_t n_tok, cudaStream_t stream,
                            bool x_unchanged = false);

// The GEMM step alone: y (n_tok, n_out) f32 = x16 (n_tok, n_in) · w16ᵀ, both
// f16 row-major on the device, f32 accumulation; y's rows ldy floats apart
// (0: n_out). Uses cuBLAS unless the path is GemmWmma or cuBLAS is missing.
Status matmul_gemm_f16(MatmulContext& ctx, const void* w16, const void* x16, int64_t n_in,
                       int64_t n_out, int64_t n_tok, float* y, cudaStream_t stream,
                       int64_t ldy = 0);

}  // namespace ls
