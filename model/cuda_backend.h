// The CUDA backend: the Llama forward on one GPU. The resident layers (all,
// or those the tier plan keeps on the device), the global tensors (output,
// output_norm, rope_freqs, and token_embd unless the plan leaves it in host
// memory) and a paged f16 KV cache (model/cuda_kv_pool.cuh) are put in
// device memory once, at create(); layer(index, view) takes a view whose
// pointers are DEVICE pointers: resident_layer(l) hands out those of the uploaded layers, and a
// streamed layer's view points into the device slot its copy landed in (the
// CudaLink, link(), moves it there). With token_embd in host memory, begin()
// dequantizes the batch's rows on the CPU and copies them over: a few KB per
// token instead of the table's hundreds of MB of device memory.
// Activations live on the device, sized for a max batch (grown when a larger
// batch comes); finish() copies the logits rows to the host. A step runs
// asynchronously on one stream; finish() synchronises, so a CUDA error of
// any kernel of the step surfaces there at the latest.
// This header has no CUDA types, so host-only code (tools/backends.cpp) can include it.
// defines: CudaBackendOptions, CudaReserve, cuda_reserves(), cuda_memory_info(), CudaBackend,
//          cuda_device_count()
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/backend.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace ls {

struct CudaBackendOptions {
  uint32_t n_ctx = 4096;             // positions per sequence in the KV cache
  uint32_t n_seq = 1;                // sequence slots
  uint32_t max_batch = 512;          // activations are sized for this many tokens (step_tokens_max)
  std::vector<uint8_t> resident;     // per layer, 1: upload it (empty: every layer)
  bool token_embd_on_device = true;  // false: rows gathered on the host each step
  // Decode GEMVs with 8-bit activations (kernels/act_q8.h, dp4a) where the
  // type has them, and f16 GEMMs for wider batches; false: f32 activations at
  // every width (the exact oracle, --act f32).
  bool act_q8 = true;
  // F32: the cache keeps keys and values unrounded (--kv-type f32, the
  // oracle; twice the bytes, and attention never takes the f16 tensor cores).
  KvType kv_type = KvType::F16;
  // Blocks of the paged cache's pool (model/kv_blocks.h, --kv-blocks); 0:
  // n_seq × ceil(n_ctx / kKvBlockLen), the memory of n_ctx positions a slot.
  uint32_t kv_blocks = 0;
  // Rows moving between this cache and the CPU's (read_kv_spans,
  // write_kv_spans) go through pinned staging in groups of up to this many
  // bytes (0: 64 MiB; tests set a few KiB to have several groups).
  uint64_t kv_stage_bytes = 0;
  // import_hidden (a hybrid plan's hidden state back from the CPU tier)
  // read from pinned, mapped host memory by a kernel (kernels/host_read.cuh)
  // instead of a cudaMemcpyAsync, which at widths over 2 (past 64 KiB)
  // queues on the copy engine behind the streamed layer in flight: 65 ms of
  // a 300 ms width-8 step on the H200 (bench/results/2026-12-05-h200-s33.md).
  // The default since session 35, whose GPU tests ran it (the logits bit for
  // bit the copy's); LS_HIDDEN_READ=copy turns it off (tools/backends.cpp).
  bool hidden_by_kernel = true;
  // A step's inputs (token ids, positions, sequences, the rows whose logits
  // are kept; on-host embedding rows; the KV block table) read by a kernel from pinned, mapped
  // host memory (kernels/host_read.cuh) instead of copied: at a step's start
  // the copier has just queued the first streamed layers on the copy
  // engine, and the copies of the inputs waited behind them, the GPU idle
  // for three layers' copies (26-28 ms on the 70b at 24 GiB, in half the
  // steps: session 33's traces). LS_STEP_INPUTS=copy turns it off (A/B).
  bool inputs_by_kernel = true;
};

// Device memory the backend takes besides the layers, each line named, for
// the tier plan: KV cache, activations for max_batch tokens, the prefill
// dequantization scratch, the output head, norms, token_embd (when on the
// device) and a margin for the CUDA context's own allocations (cuBLAS).
struct CudaReserve {
  std::string what;
  uint64_t bytes;
};
std::vector<CudaReserve> cuda_reserves(const Model& m, const CudaBackendOptions& o);
// Free and total device memory (cudaMemGetInfo); an error when there is no device.
Expected<std::pair<uint64_t, uint64_t>> cuda_memory_info();

// Number of CUDA devices; 0 when there is none or no usable driver.
int cuda_device_count();

class CudaBackend final : public Backend {
 public:
  // Uploads the model. Errors: no CUDA device; not enough device memory (says
  // how much is needed, for what, and how much is free); a type with no GPU kernel.
  static Expected<std::unique_ptr<CudaBackend>> create(const Model& m, const CudaBackendOptions& o);
  ~CudaBackend() override;

  const char* name() const override { return "cuda"; }
  Status begin(const Batch& b) override;
  Status layer(uint32_t index, const LayerView& w) override;
  Status layers(uint32_t first, const LayerView* w, uint32_t count) override;
  uint32_t layer_group() const override;
  Status finish(float* logits) override;
  void clear_seq(int32_t, int32_t) override {}  // positions are overwritten as they are reused
  uint32_t kv_pool_blocks() const override;
  std::optional<LayerView> resident_layer(uint32_t index) const override;
  DeviceLink* link() override;
  Status export_hidden(float* h) override;
  Status import_hidden(const Batch& b, const float* h) override;
  Status read_kv(uint32_t layer, int32_t seq, uint32_t p0, uint32_t p1, float* k,
                 float* v) override;
  Status read_kv_spans(uint32_t layer, const KvRowSpan* spans, size_t n) override;
  Status write_kv_spans(uint32_t layer, const KvRowSpan* spans, size_t n) override;
  Status write_kv(uint32_t layer, int32_t seq, uint32_t p0, uint32_t p1, const float* k,
                  const float* v) override;
  // The argmax of each logits row computed on the GPU (kernels/argmax.cuh,
  // the rule of greedy_argmax); only n_logits ints cross to the host.
  Status finish_argmax(int32_t* tokens, int32_t n_rows, int32_t n_vocab) override;
  // Chained steps (Backend::can_chain): a resident or streamed plan's step
  // of one greedy sequence, its embedding table on the device, its next
  // position in the context and in a block it holds; LS_CHAIN_STEPS=0 never.
  bool can_chain() const override;
  Status finish_argmax_issue(int32_t n_rows, int32_t n_vocab) override;
  Status finish_argmax_wait(int32_t* tokens) override;
  Status begin_chained() override;
  bool adopt_chained(const Batch& b) override;
  // Device bytes held (weights, cache, activations, scratch).
  uint64_t device_bytes() const;

  struct Impl;

 private:
  CudaBackend() = default;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ls
