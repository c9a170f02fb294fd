// The CPU backend: the Llama forward in float32 activations, weights read in
// place in any GGUF format, threads from one persistent pool. Matmuls in
// Q4_0, Q8_0, Q4_K, Q5_K and Q6_K run the SIMD kernels of kernels/cpu/,
// with 8-bit activations by default (CpuAct::Q8: int8 dot products, what
// makes the CPU tier run at memory speed; each matmul's input is quantized
// once, shared by q/k/v and by gate/up) or f32 ones (CpuAct::F32: the same
// products as the reference, summed in another order: the exact oracle);
// other types are dequantized row by row (kernels/ref/matmul). With f32 it is
// the correctness oracle of the CUDA backend and what CI runs end to end; the
// layer-at-a-time interface is the one the streaming runtime's CPU compute
// actor drives.
// defines: CpuBackend
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <vector>

#include "kernels/cpu/attention_cpu.h"
#include "kernels/cpu/matmul_cpu.h"
#include "kernels/ref/ops.h"
#include "model/backend.h"
#include "model/cpu_op_times.h"
#include "model/kv_cache.h"
#include "runtime/thread_pool.h"

namespace ls {

class CpuBackend final : public Backend {
 public:
  // n_ctx: cache length per sequence; n_seq: sequence slots; kv_blocks:
  // the paged cache's pool (0: n_ctx positions for every slot).
  // act: the activations of the quantized matmuls (Q8 fast, F32 the oracle).
  // pool: a pool of n_threads to share (another backend's, whose calls take
  // turns with this one's: a model and its draft); null or another size: a
  // pool of its own.
  CpuBackend(const LlamaConfig& c, const GlobalView& g, uint32_t n_ctx, uint32_t n_seq,
             KvType kv_type, int n_threads, CpuAct act = CpuAct::Q8,
             const CpuMatmulTuning& tune = {}, uint32_t kv_blocks = 0,
             std::shared_ptr<ThreadPool> pool = nullptr);
  const char* name() const override { return "cpu"; }
  Status begin(const Batch& b) override;
  Status layer(uint32_t index, const LayerView& w) override;
  Status finish(float* logits) override;
  void clear_seq(int32_t, int32_t) override {}  // positions are overwritten as they are reused
  uint32_t kv_pool_blocks() const override { return kv_.n_blocks(); }
  Status export_hidden(float* h) override;
  Status import_hidden(const Batch& b, const float* h) override;
  Status read_kv(uint32_t layer, int32_t seq, uint32_t p0, uint32_t p1, float* k,
                 float* v) override;
  Status write_kv(uint32_t layer, int32_t seq, uint32_t p0, uint32_t p1, const float* k,
                  const float* v) override;
  Status read_kv_spans(uint32_t layer, const KvRowSpan* s, size_t n) override;
  Status write_kv_spans(uint32_t layer, const KvRowSpan* s, size_t n) override;
  const KvCache& kv() const { return kv_; }
  ThreadPool& pool() { return *pool_; }
  std::shared_ptr<ThreadPool> cpu_pool() const override { return pool_; }
  CpuAct act() const { return act_; }

 private:
  void reserve(size_t n_tok);
  // f(span, a, b) over runs [a, b) of every span's [p0, p1), on the pool
  // (the key/value row moves).
  void kv_rows_split(const KvRowSpan* s, size_t n,
                     const std::function<void(const KvRowSpan&, uint32_t, uint32_t)>& f);
  // Takes the batch's block table (when it has one) and checks its entries:
  // tokens in the vocabulary, positions in the context and in blocks.
  Status check_batch(const Batch& b);
  void take_entries(const Batch& b);
  // y = x · Wᵀ through kernels/cpu/ when it handles W, else the reference.
  void matmul(const WeightView& w, const float* x, int64_t n_tok, float* y);
  // Whether all parts take the q8 kernels with one shared 8-bit input.
  bool takes_q8(std::initializer_list<MatmulQ8Part> parts) const;
  // The matmuls of one input x (q/k/v, gate/up, or one): with 8-bit
  // activations x is quantized once (or given, xq) and the parts run as one
  // pool job; otherwise each part takes matmul().
  void matmuls(const float* x, int64_t n_tok, std::initializer_list<MatmulQ8Part> parts,
               const ActQ8View* xq = nullptr);
  // f(t) for each token t < n of the batch, a token a pool task (inline for one).
  template <class F>
  void per_token(int64_t n, const F& f) {
    if (n == 1) return f(0);
    pool_->run(n, [&f](int64_t t, int) { f(t); });
  }
  // gate_ = silu(gate_) * up_ over the pool; with quantize, also gate_'s
  // 8-bit form into mm_scratch_.act() (the input of w_down).
  void swiglu(int64_t n_tok, bool quantize);

  LlamaConfig c_;
  GlobalView g_;
  RopeParams rope_;
  KvCache kv_;
  std::shared_ptr<ThreadPool> pool_;
  std::vector<std::vector<float>> scratch_;  // per thread: dequantized rows (matmul_f32)
  CpuMatmulScratch mm_scratch_;              // per thread: unpacked rows for kernels/cpu/
  AttentionCpuScratch attn_scratch_;         // scores and partial triples of attention_cpu
  AttnCpuTuning attn_tune_;                  // its defaults but for LS_ATTN_SHARE
  CpuAct act_;
  CpuMatmulTuning tune_;
  Batch batch_;
  CpuOpTimes op_times_;  // LS_CPU_OP_TIMES=1: where a layer's time goes
  size_t cap_ = 0;
  // Activations, (n_tok, width) row-major.
  std::vector<float> h_;     // residual stream (n_embd)
  std::vector<float> xn_;    // normalised input (n_embd)
  std::vector<float> q_;     // (n_embd)
  std::vector<float> k_;     // (n_embd_kv)
  std::vector<float> v_;     // (n_embd_kv)
  std::vector<float> att_;   // attention output (n_embd)
  std::vector<float> o_;     // projection output (n_embd)
  std::vector<float> gate_;  // (n_ff)
  std::vector<float> up_;    // (n_ff)
};

}  // namespace ls
