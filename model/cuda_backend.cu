// The CUDA backend (see cuda_backend.h). A layer, on one stream:
//   [h += o] xn = rmsnorm(h) · attn_norm        (the previous layer's residual add, fused;
//                                               a decode batch's 8-bit xn for the GEMVs too)
//   q, k, v = xn · Wq, Wk, Wv                   matmul_cuda_shared_x (one f16 xn for prefill;
//                                               one GEMV launch for decode, Q4_K + Q6_K too)
//   rope(q), rope(k); cache[seq, pos] = k, v   one kernel (f16; f32 with --kv-type f32;
//                                               paged: the row of (seq, pos) through the
//                                               block table); for one token, inside the
//                                               attention kernel (cos, sin: the step's
//                                               table, made in begin())
//   att = attention(q, cache)                   decode and prefill, split over long contexts
//                                               (decode: o's 8-bit x too)
//   o = att · Wo
//   h += o; xn = rmsnorm(h) · ffn_norm          fused
//   o = (silu(xn · Wgate) · (xn · Wup)) · Wdown; the add h += o is left to the next norm
//                                               (swiglu makes down's 8-bit x too)
// The kernels of a captured decode layer are launched with programmatic
// dependent launch (kernels/pdl.cuh): each starts its weight loads while the
// one before it ends.
#include "model/cuda_backend.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <tuple>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/argmax.cuh"
#include "kernels/attention.cuh"
#include "kernels/attention_decode.cuh"
#include "kernels/attention_decode_row.cuh"
#include "kernels/attention_decode_tc.cuh"
#include "kernels/embed.cuh"
#include "kernels/gemv_q.cuh"
#include "kernels/host_read.cuh"
#include "kernels/matmul.cuh"
#include "kernels/pdl.cuh"
#include "kernels/rmsnorm.cuh"
#include "kernels/rope_kv.cuh"
#include "kernels/step_advance.cuh"
#include "kernels/swiglu.cuh"
#include "model/cuda_kv_pool.cuh"
#include "model/cuda_link.cuh"
#include "model/kv_blocks.h"
#include "model/kv_cache.h"
#include "runtime/cuda_util.cuh"
#include "runtime/env.h"
#include "runtime/units.h"

namespace ls {

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear: no driver / no device is not sticky
    return 0;
  }
  return n;
}

namespace {
constexpr uint64_t kAlign = 256;  // every tensor and buffer starts 256-aligned on the device
uint64_t align_up(uint64_t x) {
  return (x + kAlign - 1) / kAlign * kAlign;
}
// The CUDA context's own allocations after cudaMemGetInfo (cuBLAS handle and
// workspace, allocator slack). The GEMM path's f16 x grows with the step and
// is counted with the activations (gemm_x_bytes): a step cap widened into a
// plan's leftover (widen_step_tokens) must not eat this margin.
constexpr uint64_t kContextMargin = 384ull << 20;

// Activations for n tokens: the residual, norm output, q, attention output,
// o (n x n_embd each), k and v (n x n_embd_kv), the two feed-forward halves
// (n x n_ff), logits (logits_rows(n) x n_vocab), the split-attention partials, the
// batch's ints, and the RoPE table (n x n_rot / 2 cos, sin pairs).
// Decode attention cuts each row into a split count that changes only at a
// few context lengths, chunks from the row's own length (kernels/
// attention.cuh: attention_splits_dynamic); LS_ATTENTION_SPLITS=fixed keeps
// chunks of kAttentionChunk (A/B).
bool dynamic_splits() {
  static const bool on = [] {
    const char* e = std::getenv("LS_ATTENTION_SPLITS");
    return !(e && std::string(e) == "fixed");
  }();
  return on;
}

// The attention splits of a batch of n entries whose largest position is
// max_pos, and the most any batch of a context of n_ctx positions uses.
// A/B: LS_ATTENTION_SHORT=splits,min_chunk: that many splits of at least
// min_chunk positions for a row of up to 512 positions (the default: 16 of
// at least kAttentionMinChunk, attention_splits_dynamic).
struct ShortSplits {
  int32_t splits = 0, min_chunk = kAttentionMinChunk;
};
const ShortSplits& short_splits() {
  static const ShortSplits ss = [] {
    ShortSplits r;
    if (const char* e = std::getenv("LS_ATTENTION_SHORT"))
      if (std::sscanf(e, "%d,%d", &r.splits, &r.min_chunk) != 2 || r.splits < 1 || r.min_chunk < 1)
        r = ShortSplits{};
    return r;
  }();
  return ss;
}
int32_t attention_split_count(const LlamaConfig& c, int64_t n, int32_t max_pos) {
  const int32_t h = static_cast<int32_t>(c.n_head);
  const ShortSplits& ss = short_splits();
  if (dynamic_splits() && ss.splits > 0 && n * h < 512 && max_pos + 1 <= 512)
    return max_pos + 1 < 2 * ss.min_chunk ? 1 : ss.splits;
  return dynamic_splits() ? attention_splits_dynamic(n, h, max_pos)
                          : attention_splits(n, h, max_pos);
}
// A split's positions (AttentionParams::chunk; 0: each row's own) and the
// shortest a split of a row's own chunks gets (AttentionParams::min_chunk).
int32_t attention_chunk() {
  return dynamic_splits() ? 0 : kAttentionChunk;
}
int32_t attention_min_chunk() {
  return short_splits().splits > 0 ? short_splits().min_chunk : kAttentionMinChunk;
}
int32_t max_attention_splits(const LlamaConfig& c, uint32_t n_ctx) {
  return attention_split_count(c, 1, static_cast<int32_t>(n_ctx) - 1);
}

// The split-attention partials for batches of up to n entries, in floats.
// An f16 cache splits a batch's rows only while entries x query heads stay
// under 512 (attention_split_count: every branch), so at most 511 / n_head
// entries ever split (7 on a 70b), whatever n is; an f32 cache splits every
// batch at the context's count (layer_split_count, for its bits), so all n.
// Why not min(n, 512) entries for both, as before session 43: on the 70b at
// -c 4096 and 512-token prompts that was 520 MiB of a 24 GiB budget, more
// than a layer, for rows that never split.
int64_t split_partial_floats(const LlamaConfig& c, uint32_t n_ctx, uint64_t n, bool kv_f32) {
  const uint64_t rows = kv_f32 ? n : std::min<uint64_t>(n, 511 / std::max<uint32_t>(c.n_head, 1));
  return std::max<int64_t>(attention_partial_floats(static_cast<int64_t>(rows), c.n_head,
                                                    c.head_dim, max_attention_splits(c, n_ctx)),
                           0);
}

// Rows of logits the device holds at once: the head runs in chunks of them
// (CudaBackend::finish), each copied out (or reduced to its argmax) before
// the next. Why: a step's logits are wanted for one row per sequence
// (decode, a prompt's last token) or for a verify step's K + 1, rarely more
// (perplexity, a prompt's log probabilities); logits for 512 rows of a
// Llama 3 vocabulary are 250 MiB, half a 70b layer of a 24 GiB budget. 64
// keeps every batch of the int8 GEMM's widths in one chunk.
constexpr uint64_t kLogitsRows = 64;
uint64_t logits_rows(uint64_t n) {
  return std::min(n, kLogitsRows);
}

// The matmul context's f16 copy of x for the batched GEMM (kernels/matmul.cu:
// convert_x), allocated there as the widest step comes: n tokens of the
// widest input (n_ff on a Llama). Counted in the plan's activations line,
// not in the backend's arena.
uint64_t gemm_x_bytes(const LlamaConfig& c, uint64_t n) {
  const uint64_t widest = std::max<uint64_t>({c.n_embd, c.n_ff, uint64_t{c.n_head} * c.head_dim});
  return align_up(n * widest * 2);
}

uint64_t activation_bytes(const LlamaConfig& c, uint32_t n_ctx, uint64_t n, bool kv_f32) {
  const uint64_t E = c.n_embd, KV = c.n_embd_kv(), F = c.n_ff, V = c.n_vocab;
  const uint64_t part = static_cast<uint64_t>(split_partial_floats(c, n_ctx, n, kv_f32));
  return align_up(n * E * 4) * 5 + align_up(n * KV * 4) * 2 + align_up(n * F * 4) * 2 +
         align_up(logits_rows(n) * V * 4) + align_up(part * 4) + align_up(n * 4) * 5 +
         align_up(n * c.n_rot / 2 * 8);
}

int64_t weight_elems(const GgufTensor* t) {
  return static_cast<int64_t>(t->shape[0] * t->rows());
}

// The GEMM path's f16 scratch: the largest layer weight, at most
// kDequantScratchMaxElems; a larger weight goes in slices of rows
// (kernels/matmul.cu: gemm_in_slices), as the output head always did (its
// whole f16 form took 1.96 GiB of a 70b's device budget). Why the cap: the
// scratch serves only GEMMs past the int8 GEMM's widths (prompts), and a
// 70b's gate, up and down are 448 MiB each in f16, where 128 MiB slices
// them into GEMMs of 8,192 x 8,192 x n that the tensor cores still run
// whole; the 320 MiB go to weights (with the partials above, one more 70b
// layer resident at 24 GiB). An 8b's largest weight (112 MiB) is unsliced.
// A model without layers (none in practice) sizes it by the head.
constexpr int64_t kDequantScratchMaxElems = int64_t{64} << 20;  // 128 MiB of f16
int64_t max_weight_elems(const LlamaWeights& w) {
  int64_t m = w.layers.empty() ? weight_elems(w.output) : 0;
  for (const LayerWeights& lw : w.layers)
    for (const GgufTensor* t : {lw.wq, lw.wk, lw.wv, lw.wo, lw.w_gate, lw.w_up, lw.w_down})
      m = std::max(m, weight_elems(t));
  return std::min(m, kDequantScratchMaxElems);
}

uint32_t clamp_batch(const CudaBackendOptions& o) {
  return step_tokens_max(o.max_batch, o.n_ctx, o.n_seq);
}
}  // namespace

Expected<std::pair<uint64_t, uint64_t>> cuda_memory_info() {
  if (cuda_device_count() == 0) return make_error("no CUDA device");
  size_t free_b = 0, total_b = 0;
  LS_CUDA_TRY(cudaSetDevice(0));
  LS_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
  return std::make_pair(static_cast<uint64_t>(free_b), static_cast<uint64_t>(total_b));
}

std::vector<CudaReserve> cuda_reserves(const Model& m, const CudaBackendOptions& o) {
  const LlamaConfig& c = m.config();
  const LlamaWeights& w = m.info.weights;
  const uint32_t n = clamp_batch(o);
  std::vector<CudaReserve> r;
  const uint32_t blocks = o.kv_blocks ? o.kv_blocks : kv_default_blocks(o.n_seq, o.n_ctx);
  r.push_back({std::string("KV cache (") + (o.kv_type == KvType::F32 ? "f32" : "f16") + ", " +
                   std::to_string(blocks) + " blocks of " + std::to_string(kKvBlockLen) +
                   " positions; " + std::to_string(o.n_seq) + " sequences of up to " +
                   std::to_string(o.n_ctx) + ")",
               CudaKvPool::bytes_for(c.n_layer, blocks, c.n_embd_kv(), o.kv_type)});
  r.push_back({"activations and logits for " + std::to_string(n) + " tokens",
               activation_bytes(c, o.n_ctx, n, o.kv_type == KvType::F32) + gemm_x_bytes(c, n)});
  r.push_back({"f16 dequantization scratch of the batched matmul",
               align_up(static_cast<uint64_t>(max_weight_elems(w)) * 2)});
  uint64_t head = align_up(w.output->bytes) + align_up(w.output_norm->bytes);
  if (w.rope_freqs) head += align_up(w.rope_freqs->bytes);
  r.push_back(
      {std::string("output head (") + ggml_type_name(w.output->type) + ") and norms", head});
  if (o.token_embd_on_device && w.output != w.token_embd)
    r.push_back({std::string("token_embd (") + ggml_type_name(w.token_embd->type) + ")",
                 align_up(w.token_embd->bytes)});
  r.push_back({"CUDA context margin (cuBLAS workspace, allocator slack)", kContextMargin});
  return r;
}

struct CudaBackend::Impl {
  LlamaConfig c;
  CudaBackendOptions opt;
  cudaStream_t stream = nullptr;
  std::unique_ptr<MatmulContext> mm;
  int64_t max_weight_elems = 0;

  // The L2 prefetch of the next GEMV's weights in decode steps
  // (kernels/l2_prefetch.cuh), bytes a kernel: pf_chain for the kernels
  // between GEMVs (the norms, attention, SwiGLU), pf_gemv for a GEMV (of the
  // one after it). LS_L2_PREFETCH / LS_L2_PREFETCH_GEMV in MiB, 0 off (A/B).
  uint64_t pf_chain = 0, pf_gemv = 0;

  uint8_t* arena = nullptr;  // weights: globals then layers
  uint64_t arena_bytes = 0;
  GlobalView g;                   // device pointers (token_embd: host pointers when embd_on_host)
  std::vector<LayerView> layers;  // by layer; set where is_resident
  std::vector<uint8_t> is_resident;
  bool embd_on_host = false;
  // token_embd in host memory: the batch's quantized rows are gathered into
  // pinned memory, copied over, and decoded by the same kernel as a resident
  // table (so the two give the same bits), with tokens 0..n-1 (iota).
  uint8_t* embd_host = nullptr;  // pinned, (cap, row_bytes)
  uint8_t* embd_dev = nullptr;   // device, (cap, row_bytes)
  int32_t* iota = nullptr;       // device, 0..cap-1
  std::unique_ptr<CudaLink> link;
  // The paged key/value cache and its block table (f16, or f32: kv_f32).
  CudaKvPool kv;
  bool kv_f32 = false;
  uint64_t kv_bytes = 0;
  Status check_kv_rows(uint32_t layer, int32_t seq, uint32_t p0, uint32_t p1) const {
    if (layer >= c.n_layer || seq < 0 || static_cast<uint32_t>(seq) >= opt.n_seq || p0 > p1 ||
        p1 > opt.n_ctx)
      return make_error(
          "cuda backend: key/value rows %u..%u of layer %u, sequence %d are outside the cache", p0,
          p1, layer, seq);
    return ok();
  }

  // Activations, (cap, width) row-major, and the batch's ints.
  uint64_t cap = 0;
  uint8_t* act = nullptr;
  uint64_t act_bytes = 0;
  float *h = nullptr, *xn = nullptr, *q = nullptr, *k = nullptr, *v = nullptr, *att = nullptr,
        *o = nullptr, *gate = nullptr, *up = nullptr, *logits = nullptr, *partial = nullptr;
  int64_t partial_floats = 0;  // partial's size (split_partial_floats)
  int32_t *tok = nullptr, *pos = nullptr, *seq = nullptr, *rows = nullptr, *best = nullptr;
  int32_t* pinned = nullptr;  // host, (6, cap) ints: staging for the batch, two for the argmax
  // Chained steps (CudaBackend::begin_chained): the argmax's ids of
  // consecutive steps go to the two rows of pinned in turn (the next
  // step's copy may land before the host reads this one's), each followed
  // by its event; the token the host read last; whether the step begun is
  // a chained one the sampler has not yet confirmed.
  int ids_slot = 0, ids_wait = 0;
  cudaEvent_t ids_ready[2] = {nullptr, nullptr};
  int32_t chain_token = -1;
  bool chained = false;
  // Their device addresses where CudaBackendOptions::inputs_by_kernel mapped
  // them (null: the copy engine's path).
  const int32_t* pinned_dev = nullptr;
  const uint8_t* embd_host_dev = nullptr;
  // import_hidden's staging: pinned, mapped host memory the GPU reads
  // itself (kernels/host_read.cuh), (hid_rows, n_embd) floats; null until a
  // hybrid step first hands a hidden state back, or where mapping failed.
  float* hid_host = nullptr;
  const void* hid_dev = nullptr;  // its device address
  uint64_t hid_rows = 0;
  bool hid_failed = false;    // mapping failed once: the copy from then on, no retry a step
  float2* rope_cs = nullptr;  // (cap, n_rot / 2): the step's RoPE cos and sin (rope_table_cuda)

  Batch batch;
  int32_t max_pos = 0;
  int64_t n_logits = 0;
  bool pending_add = false;  // h += o not yet done (fused into the next norm)

  // CUDA graphs of decode layers (see CudaBackend::layers): the first layer,
  // its weights, how many layers the graph runs.
  struct GraphKey {
    uint32_t layer;
    const void* weights;
    int64_t n;
    bool pending_add;
    uint32_t count;
    bool operator<(const GraphKey& o) const {
      return std::tie(layer, weights, n, pending_add, count) <
             std::tie(o.layer, o.weights, o.n, o.pending_add, o.count);
    }
  };
  // LS_DEVMEM_TRACE=1: each step's begin prints what the device lost since
  // the last print (cudaMemGetInfo, every allocator and library included)
  // with the widths of the steps in between: where a run's memory beyond the
  // plan goes (print_device_taken in actors/engine.cpp gives the total).
  struct DevMemTrace {
    bool on = false;
    size_t last_free = 0, first_free = 0;
    uint64_t steps = 0;
    int64_t widest = 0;  // the widest step since the last print
    void check(int64_t n) {
      if (!on) return;
      size_t f = 0, t = 0;
      if (cudaMemGetInfo(&f, &t) != cudaSuccess) return;
      if (last_free == 0) first_free = last_free = f;
      if (last_free > f + (1u << 20)) {
        std::fprintf(stderr,
                     "devmem: before step %llu (width %lld; widest since the last line %lld): "
                     "%.1f MiB more in use, %.1f MiB since the backend was made\n",
                     (unsigned long long)steps, (long long)n, (long long)widest,
                     double(last_free - f) / 1048576.0, double(first_free - f) / 1048576.0);
        last_free = f;
        widest = 0;
      }
      widest = std::max(widest, n);
      ++steps;
    }
  } devmem;
  bool grew_past_plan = false;  // reserve's warning, given once
  bool graphs = true;
  uint32_t group = 1;  // layer_group(): the most layers one graph runs
  std::map<GraphKey, cudaGraphExec_t> graph_cache;
  int32_t graph_split = -1;
  int graph_form = -1;  // attention_form at capture
  const uint8_t* graph_act = nullptr;
  void drop_graphs() {
    for (auto& [k, e] : graph_cache) cudaGraphExecDestroy(e);
    graph_cache.clear();
  }

  ~Impl() {
    if (stream) cudaStreamSynchronize(stream);
    drop_graphs();
    link.reset();  // its watchers drain first
    mm.reset();
    if (arena) cudaFree(arena);
    if (act) cudaFree(act);
    if (pinned) cudaFreeHost(pinned);
    for (cudaEvent_t& e : ids_ready)
      if (e) cudaEventDestroy(e);
    if (hid_host) cudaFreeHost(hid_host);
    if (embd_host) cudaFreeHost(embd_host);
    if (embd_dev) cudaFree(embd_dev);
    if (iota) cudaFree(iota);
    if (stream) cudaStreamDestroy(stream);
  }

  uint64_t act_bytes_for(uint64_t n) const { return activation_bytes(c, opt.n_ctx, n, kv_f32); }

  Error error_oom(const char* what, uint64_t want) const {
    size_t free_b = 0, total_b = 0;
    (void)cudaMemGetInfo(&free_b, &total_b);
    (void)cudaGetLastError();
    return make_error(
        "cuda backend: out of device memory for %s: %s needed (weights %s, KV cache %s, "
        "activations for %llu tokens %s); %s free of %s",
        what, human_bytes(want).c_str(), human_bytes(arena_bytes).c_str(),
        human_bytes(kv_bytes).c_str(), static_cast<unsigned long long>(cap ? cap : opt.max_batch),
        human_bytes(act_bytes_for(cap ? cap : opt.max_batch)).c_str(), human_bytes(free_b).c_str(),
        human_bytes(total_b).c_str());
  }

  // Pinned host memory for a step's inputs, mapped for the GPU's own reads
  // where inputs_by_kernel asks (*dev its device address), else (or where
  // mapping fails) plain pinned memory for the copy engine (*dev null).
  Status host_staging(void** host, const void** dev, uint64_t bytes) {
    *dev = nullptr;
    if (opt.inputs_by_kernel && cuda_host_alloc_mapped(bytes, host, dev)) return ok();
    LS_CUDA_TRY(cudaMallocHost(host, bytes));
    return ok();
  }

  // (Re)allocate the activations for n tokens.
  Status reserve(uint64_t n) {
    if (n <= cap) return ok();
    // The engine keeps every step to max_batch (step_tokens_max): a wider one
    // takes device memory the plan did not count, so it is said, once.
    if (act && n > opt.max_batch && !grew_past_plan) {
      grew_past_plan = true;
      std::fprintf(
          stderr,
          "layerstream: warning: a step of %llu tokens is wider than the %u the plan sized "
          "the device's activations for (--ubatch-size): %s more than the plan counted\n",
          (unsigned long long)n, opt.max_batch,
          human_bytes(act_bytes_for(n) - act_bytes_for(opt.max_batch)).c_str());
    }
    if (act) {
      LS_CUDA_TRY(cudaStreamSynchronize(stream));
      cudaFree(act);
      act = nullptr;
      cudaFreeHost(pinned);
      pinned = nullptr;
      pinned_dev = nullptr;
      if (embd_host) cudaFreeHost(embd_host);
      if (embd_dev) cudaFree(embd_dev);
      if (iota) cudaFree(iota);
      embd_host = embd_dev = nullptr;
      embd_host_dev = nullptr;
      iota = nullptr;
    }
    const uint64_t bytes = act_bytes_for(n);
    if (cudaMalloc(&act, bytes) != cudaSuccess) {
      (void)cudaGetLastError();
      act = nullptr;
      cap = 0;
      return error_oom("activations", bytes);
    }
    LS_TRY(host_staging(reinterpret_cast<void**>(&pinned),
                        reinterpret_cast<const void**>(&pinned_dev), n * 6 * sizeof(int32_t)));
    if (embd_on_host) {
      const uint64_t row = ggml_row_bytes(g.token_embd.type, c.n_embd);
      LS_TRY(host_staging(reinterpret_cast<void**>(&embd_host),
                          reinterpret_cast<const void**>(&embd_host_dev), n * row));
      LS_CUDA_TRY(cudaMalloc(&embd_dev, n * row));
      LS_CUDA_TRY(cudaMalloc(&iota, n * sizeof(int32_t)));
      std::vector<int32_t> ids(n);
      for (uint64_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>(i);
      LS_CUDA_TRY(cudaMemcpy(iota, ids.data(), n * sizeof(int32_t), cudaMemcpyHostToDevice));
    }
    cap = n;
    act_bytes = bytes;
    const uint64_t E = c.n_embd, KV = c.n_embd_kv(), F = c.n_ff, V = c.n_vocab;
    uint8_t* p = act;
    auto take = [&](uint64_t b) {
      uint8_t* r = p;
      p += align_up(b);
      return r;
    };
    h = reinterpret_cast<float*>(take(n * E * 4));
    xn = reinterpret_cast<float*>(take(n * E * 4));
    q = reinterpret_cast<float*>(take(n * E * 4));
    att = reinterpret_cast<float*>(take(n * E * 4));
    o = reinterpret_cast<float*>(take(n * E * 4));
    k = reinterpret_cast<float*>(take(n * KV * 4));
    v = reinterpret_cast<float*>(take(n * KV * 4));
    gate = reinterpret_cast<float*>(take(n * F * 4));
    up = reinterpret_cast<float*>(take(n * F * 4));
    logits = reinterpret_cast<float*>(take(logits_rows(n) * V * 4));
    partial_floats = split_partial_floats(c, opt.n_ctx, n, kv_f32);
    partial = reinterpret_cast<float*>(take(4 * partial_floats));
    tok = reinterpret_cast<int32_t*>(take(n * 4));
    pos = reinterpret_cast<int32_t*>(take(n * 4));
    seq = reinterpret_cast<int32_t*>(take(n * 4));
    rows = reinterpret_cast<int32_t*>(take(n * 4));
    best = reinterpret_cast<int32_t*>(take(n * 4));
    rope_cs = reinterpret_cast<float2*>(take(n * c.n_rot / 2 * sizeof(float2)));
    return ok();
  }

  // The step's rotation (its positions on the device).
  // The embedding of the step's n tokens into h: rows of the device's
  // table by the device's token ids (begin() points it at the host's rows
  // where the table stays there).
  EmbedParams embed_params(int64_t n) const {
    EmbedParams ep;
    ep.table = g.token_embd.data;
    ep.tokens = tok;
    ep.type = g.token_embd.type;
    ep.n_embd = c.n_embd;
    ep.row_bytes = ggml_row_bytes(ep.type, c.n_embd);
    ep.n_tok = n;
    ep.out = h;
    return ep;
  }

  RopeCudaParams rope_params() const {
    RopeCudaParams r;
    r.pos = pos;
    r.freq_factors = g.rope_freqs;
    r.n_tok = static_cast<int64_t>(batch.size());
    r.head_dim = static_cast<int32_t>(c.head_dim);
    r.n_rot = static_cast<int32_t>(c.n_rot);
    r.freq_base = c.rope_freq_base;
    r.freq_scale = c.rope_freq_scale;
    return r;
  }

  // x_unchanged: x is the previous matmul's input, unchanged (its int8 copy is reused).
  Status matmul(const WeightView& w, const float* x, int64_t n, float* y,
                bool x_unchanged = false) {
    return matmul_cuda(*mm, w, x, n, y, stream, x_unchanged);
  }

  // The head: final norm of the rows that want logits (into xn, packed),
  // then the output matmul of rows [r0, r0 + logits_rows(cap)) of them into
  // logits, by head_rows.
  // The first bytes of ws (in order) up to cap, for a decode batch of n.
  L2Prefetch prefetch_of(std::initializer_list<WeightView> ws, uint64_t cap, int64_t n) const {
    L2Prefetch pf;
    if (n > kGemvMaxTok) return pf;  // the GEMM path: weights are reused across rows
    for (const WeightView& w : ws)
      cap = l2_prefetch_add(pf, w.data, ggml_row_bytes(w.type, w.n_in) * uint64_t(w.n_out), cap);
    return pf;
  }

  Status head_norm() {
    RmsNormParams np;
    np.h = h;
    np.add = pending_add ? o : nullptr;
    np.w = g.output_norm;
    np.y = xn;
    np.rows = rows;
    np.n = c.n_embd;
    np.n_out = n_logits;
    np.eps = c.rms_eps;
    np.pf = prefetch_of({g.output}, pf_chain, n_logits);
    LS_TRY(rmsnorm_f32_cuda(np, stream));
    pending_add = false;
    return ok();
  }
  // The chunk of the head's rows from r0 (*n_rows of them) into logits.
  Status head_rows(int64_t r0, int64_t* n_rows) {
    *n_rows = std::min<int64_t>(static_cast<int64_t>(logits_rows(cap)), n_logits - r0);
    return matmul(g.output, xn + r0 * static_cast<int64_t>(c.n_embd), *n_rows, logits);
  }
};

Expected<std::unique_ptr<CudaBackend>> CudaBackend::create(const Model& m,
                                                           const CudaBackendOptions& o) {
  const int n_dev = cuda_device_count();
  if (n_dev == 0)
    return make_error(
        "--backend cuda: no CUDA device (cudaGetDeviceCount found none or no driver)");
  std::unique_ptr<CudaBackend> be(new CudaBackend());
  be->impl_ = std::make_unique<Impl>();
  Impl& s = *be->impl_;
  s.c = m.config();
  s.opt = o;
  s.opt.max_batch = clamp_batch(o);
  if (const char* g = std::getenv("LS_CUDA_GRAPHS"); g && std::string(g) == "0") s.graphs = false;
  if (const char* g = std::getenv("LS_DEVMEM_TRACE"); g && std::string(g) == "1")
    s.devmem.on = true;
  s.devmem.check(0);
  s.group = static_cast<uint32_t>(m.config().n_layer);
  if (const char* g = std::getenv("LS_LAYER_GRAPH"); g && std::string(g) == "0") s.group = 1;
  const LlamaConfig& c = s.c;
  const LlamaWeights& w = m.info.weights;
  if (!s.opt.resident.empty() && s.opt.resident.size() != c.n_layer)
    return make_error("cuda backend: the resident mask has %zu entries for %u layers",
                      s.opt.resident.size(), c.n_layer);
  auto resident = [&](uint32_t l) { return s.opt.resident.empty() || s.opt.resident[l] != 0; };
  // token_embd: on the device (the GPU gathers rows) or in the mapped file
  // (the CPU dequantizes the batch's rows, which needs only the reference
  // decoder of the type). A tied output keeps the table on the device anyway.
  s.embd_on_host = !s.opt.token_embd_on_device && w.output != w.token_embd;
  if (!embed_type_supported(w.token_embd->type))
    return make_error("cuda backend: token_embd.weight has type %s, which has no GPU decoder",
                      ggml_type_name(w.token_embd->type));
  if (c.head_dim % 32 != 0 || c.head_dim > static_cast<uint32_t>(kAttentionMaxHeadDim))
    return make_error("cuda backend: head_dim %u is not a multiple of 32 up to %d", c.head_dim,
                      kAttentionMaxHeadDim);
  LS_CUDA_TRY(cudaSetDevice(0));
  // The L2's largest fetch from device memory (cudaLimitMaxL2FetchGranularity,
  // a hint) at 128 bytes: the weights are read whole, once a step. Session
  // 54 (H100, the same binary): the 8b decode 455.3-455.5 tok/s against
  // 450.9-452.1 at the driver's setting (Q4_K_M), 309.5-310.0 against
  // 307.9-308.2 (Q8_0). LS_L2_FETCH=32|64|128 sets another, 0 leaves the
  // driver's (A/B).
  {
    const int64_t v = env_int("LS_L2_FETCH", 128, 0);
    if (v != 0 && v != 32 && v != 64 && v != 128)
      return make_error("LS_L2_FETCH=%lld: want 0 (the driver's), 32, 64 or 128 (bytes)",
                        static_cast<long long>(v));
    if (v != 0)
      LS_CUDA_TRY(cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity, static_cast<size_t>(v)));
  }
  // The L2 prefetch (Impl::pf_chain, pf_gemv), MiB.
  s.pf_chain = static_cast<uint64_t>(env_mib("LS_L2_PREFETCH", 0, 1024));
  s.pf_gemv = static_cast<uint64_t>(env_mib("LS_L2_PREFETCH_GEMV", 0, 1024));
  LS_CUDA_TRY(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));

  // Weights: one arena, each tensor 256-aligned; tied output shares token_embd.
  std::vector<std::pair<const GgufTensor*, uint64_t>> place;  // tensor, arena offset
  auto add = [&](const GgufTensor* t) -> uint64_t {
    for (auto& [pt, off] : place)
      if (pt == t) return off;
    const uint64_t off = s.arena_bytes;
    place.emplace_back(t, off);
    s.arena_bytes += align_up(t->bytes);
    return off;
  };
  const uint64_t o_embd = s.embd_on_host ? 0 : add(w.token_embd);
  const uint64_t o_out = add(w.output);
  const uint64_t o_onorm = add(w.output_norm);
  const uint64_t o_rope = w.rope_freqs ? add(w.rope_freqs) : 0;
  s.max_weight_elems = max_weight_elems(w);
  struct LayerOffsets {
    uint64_t attn_norm, wq, wk, wv, wo, ffn_norm, w_gate, w_up, w_down;
  };
  std::vector<LayerOffsets> lo(c.n_layer);
  for (uint32_t l = 0; l < c.n_layer; ++l) {
    if (!resident(l)) continue;
    const LayerWeights& lw = w.layers[l];
    lo[l] = {add(lw.attn_norm), add(lw.wq),     add(lw.wk),   add(lw.wv),    add(lw.wo),
             add(lw.ffn_norm),  add(lw.w_gate), add(lw.w_up), add(lw.w_down)};
  }
  s.kv_f32 = o.kv_type == KvType::F32;
  if (s.opt.kv_blocks == 0) s.opt.kv_blocks = kv_default_blocks(s.opt.n_seq, s.opt.n_ctx);
  s.kv_bytes = CudaKvPool::bytes_for(c.n_layer, s.opt.kv_blocks, c.n_embd_kv(), o.kv_type);
  // Check the whole need against what is free before allocating any of it.
  {
    size_t free_b = 0, total_b = 0;
    LS_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    const uint64_t need = s.arena_bytes + s.kv_bytes + s.act_bytes_for(s.opt.max_batch) +
                          static_cast<uint64_t>(s.max_weight_elems) * 2;
    if (need > free_b) return s.error_oom("the model", need);
  }
  if (cudaMalloc(&s.arena, s.arena_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    s.arena = nullptr;
    return s.error_oom("the weights", s.arena_bytes);
  }
  const uint8_t* file = m.file->base();
  for (auto& [t, off] : place)
    LS_CUDA_TRY(cudaMemcpy(s.arena + off, file + t->offset, t->bytes, cudaMemcpyHostToDevice));
  auto wv = [&](const GgufTensor* t, uint64_t off) {
    WeightView v;
    v.type = t->type;
    v.data = s.arena + off;
    v.n_in = static_cast<int64_t>(t->shape[0]);
    v.n_out = static_cast<int64_t>(t->rows());
    return v;
  };
  auto f32 = [&](uint64_t off) { return reinterpret_cast<const float*>(s.arena + off); };
  if (s.embd_on_host) {
    s.g.token_embd = m.globals().token_embd;  // host pointers into the mapped file
  } else {
    s.g.token_embd = wv(w.token_embd, o_embd);
  }
  s.g.output = wv(w.output, o_out);
  s.g.output_norm = f32(o_onorm);
  s.g.rope_freqs = w.rope_freqs ? f32(o_rope) : nullptr;
  s.layers.assign(c.n_layer, LayerView{});
  s.is_resident.assign(c.n_layer, 0);
  for (uint32_t l = 0; l < c.n_layer; ++l) {
    if (!resident(l)) continue;
    const LayerWeights& lw = w.layers[l];
    LayerView v;
    v.attn_norm = f32(lo[l].attn_norm);
    v.wq = wv(lw.wq, lo[l].wq);
    v.wk = wv(lw.wk, lo[l].wk);
    v.wv = wv(lw.wv, lo[l].wv);
    v.wo = wv(lw.wo, lo[l].wo);
    v.ffn_norm = f32(lo[l].ffn_norm);
    v.w_gate = wv(lw.w_gate, lo[l].w_gate);
    v.w_up = wv(lw.w_up, lo[l].w_up);
    v.w_down = wv(lw.w_down, lo[l].w_down);
    s.layers[l] = v;
    s.is_resident[l] = 1;
  }
  // The KV cache, zeroed (positions are written before they are read), and its block table.
  if (Status st = s.kv.create(c.n_layer, s.opt.n_seq, s.opt.n_ctx, c.n_embd_kv(), o.kv_type,
                              s.opt.kv_blocks, s.stream, s.opt.inputs_by_kernel);
      !st.ok())
    return s.kv.allocated() ? st.error() : s.error_oom("the KV cache", s.kv_bytes);
  if (o.kv_stage_bytes) s.kv.set_stage_cap(o.kv_stage_bytes);
  LS_TRY(s.reserve(s.opt.max_batch));
  auto mm = MatmulContext::create(s.stream, s.max_weight_elems);
  if (!mm) return mm.error();
  s.mm = std::move(*mm);
  s.mm->set_act_q8(o.act_q8);
  // The decode GEMV's int8 x, sized before any graph capture (rows: n_embd, n_ff, q heads).
  LS_TRY(s.mm->reserve_gemv_x(
      std::max<int64_t>({static_cast<int64_t>(c.n_embd), static_cast<int64_t>(c.n_ff),
                         static_cast<int64_t>(c.n_head) * c.head_dim})));
  auto link = CudaLink::create(s.stream);
  if (!link) return link.error();
  s.link = std::move(*link);
  LS_CUDA_TRY(cudaStreamSynchronize(s.stream));
  return std::move(be);
}

CudaBackend::~CudaBackend() = default;

uint32_t CudaBackend::kv_pool_blocks() const {
  return impl_->kv.n_blocks();
}

uint64_t CudaBackend::device_bytes() const {
  return impl_->arena_bytes + impl_->kv_bytes + impl_->act_bytes;
}

std::optional<LayerView> CudaBackend::resident_layer(uint32_t index) const {
  if (index >= impl_->layers.size() || !impl_->is_resident[index]) return std::nullopt;
  return impl_->layers[index];
}

DeviceLink* CudaBackend::link() {
  return impl_->link.get();
}

Status CudaBackend::begin(const Batch& b) {
  Impl& s = *impl_;
  const uint32_t n_ctx = s.opt.n_ctx, n_seq = s.opt.n_seq;
  s.max_pos = 0;
  for (size_t t = 0; t < b.size(); ++t) {
    if (b.token[t] < 0 || static_cast<uint32_t>(b.token[t]) >= s.c.n_vocab)
      return make_error("token id %d is outside the vocabulary (%u)", b.token[t], s.c.n_vocab);
    if (b.pos[t] < 0 || static_cast<uint32_t>(b.pos[t]) >= n_ctx)
      return make_error("position %d is outside the context (%u)", b.pos[t], n_ctx);
    if (b.seq[t] < 0 || static_cast<uint32_t>(b.seq[t]) >= n_seq)
      return make_error("sequence %d is outside the %u sequence slots", b.seq[t], n_seq);
    s.max_pos = std::max(s.max_pos, b.pos[t]);
  }
  LS_TRY(s.reserve(b.size()));
  LS_CUDA_TRY(cudaStreamSynchronize(s.stream));  // the pinned staging is free again
  s.devmem.check(static_cast<int64_t>(b.size()));
  // The step's block table (uploaded when it changed), then every entry's row in a block.
  if (!b.kv_table.empty()) LS_TRY(s.kv.set_table(b.kv_table, s.stream));
  for (size_t t = 0; t < b.size(); ++t) {
    const uint32_t sq = static_cast<uint32_t>(b.seq[t]), p = static_cast<uint32_t>(b.pos[t]);
    if (!s.kv.holds(sq, p, p + 1))
      return make_error(
          "position %u of sequence %u has no key/value block (the table gives it %u of the "
          "pool's %u blocks)",
          p, sq, s.kv.held(sq), s.kv.n_blocks());
  }
  s.batch = b;
  s.chained = false;
  const size_t n = b.size();
  int32_t* hp = s.pinned;
  std::memcpy(hp, b.token.data(), n * 4);
  std::memcpy(hp + n, b.pos.data(), n * 4);
  std::memcpy(hp + 2 * n, b.seq.data(), n * 4);
  int64_t m = 0;
  for (size_t t = 0; t < n; ++t)
    if (b.logits[t]) hp[3 * n + m++] = static_cast<int32_t>(t);
  s.n_logits = m;
  if (const int32_t* d = s.pinned_dev) {  // read by a kernel (CudaBackendOptions::inputs_by_kernel)
    const int64_t ni = static_cast<int64_t>(n);
    const HostI32Seg segs[] = {
        {d, s.tok, ni}, {d + n, s.pos, ni}, {d + 2 * n, s.seq, ni}, {d + 3 * n, s.rows, m}};
    LS_TRY(read_host_i32_cuda(segs, 4, s.stream));
  } else {
    LS_CUDA_TRY(cudaMemcpyAsync(s.tok, hp, n * 4, cudaMemcpyHostToDevice, s.stream));
    LS_CUDA_TRY(cudaMemcpyAsync(s.pos, hp + n, n * 4, cudaMemcpyHostToDevice, s.stream));
    LS_CUDA_TRY(cudaMemcpyAsync(s.seq, hp + 2 * n, n * 4, cudaMemcpyHostToDevice, s.stream));
    if (m > 0)
      LS_CUDA_TRY(cudaMemcpyAsync(s.rows, hp + 3 * n, m * 4, cudaMemcpyHostToDevice, s.stream));
  }
  // Every layer's RoPE reads its cos and sin from this table.
  LS_TRY(rope_table_cuda(s.rope_params(), s.rope_cs, s.stream));
  EmbedParams ep = s.embed_params(static_cast<int64_t>(n));
  if (s.embd_on_host) {
    // Gather the batch's rows (quantized, a few KB each) and decode them on the GPU.
    const uint64_t row = ggml_row_bytes(s.g.token_embd.type, s.c.n_embd);
    const uint8_t* table = static_cast<const uint8_t*>(s.g.token_embd.data);
    for (size_t t = 0; t < n; ++t)
      std::memcpy(s.embd_host + t * row, table + static_cast<uint64_t>(b.token[t]) * row, row);
    if (s.embd_host_dev)
      LS_TRY(read_host_cuda(s.embd_host_dev, s.embd_dev, n * row, s.stream));
    else
      LS_CUDA_TRY(
          cudaMemcpyAsync(s.embd_dev, s.embd_host, n * row, cudaMemcpyHostToDevice, s.stream));
    ep.table = s.embd_dev;
    ep.tokens = s.iota;
  }
  LS_TRY(embed_rows_cuda(ep, s.stream));
  s.pending_add = false;
  return ok();
}

namespace {
// Whether a layer's decode attention of n entries runs on the row kernel.
bool row_attention(const CudaBackend::Impl& s, int64_t n) {
  return attention_decode_row_wanted(n, s.kv_f32, static_cast<int32_t>(s.c.head_dim),
                                     static_cast<int32_t>(s.c.n_head),
                                     static_cast<int32_t>(s.c.n_head_kv), s.max_pos);
}

// Which decode attention a layer graph holds, by its splits' length
// (kernels/attention_decode.cuh, attention_decode_tc.cuh): 0 the grouped
// kernel whose warps own heads, 1 the tensor-core kernel with one tile in
// flight, 2 with two (or, each, the grouped kernel's other form: an f32
// cache, LS_ATTENTION_TC=0). A change means a new capture.
// The row kernel of one token's short rows (kernels/attention_decode_row.cuh)
// is a form of its own for each capacity its launch holds.
int attention_form(const CudaBackend::Impl& s, int64_t n_tok, int32_t n_split) {
  if (row_attention(s, n_tok)) return 4 + attention_decode_row_rows(s.max_pos);
  const int32_t n =
      attention_decode_longest(attention_chunk(), n_split, attention_min_chunk(), s.max_pos);
  return n < 0 ? 3 : n <= kAttentionDecodeTcMin ? 0 : n <= kAttentionDecodeSmall ? 1 : 2;
}

// A layer's attention splits for a batch of n entries. The exact oracle (an
// f32 cache) takes the count of its whole context, never of the batch: the
// count by the batch (n entries, the largest position) is a function of the
// other sequences, and a row cut in other splits is merged in another order,
// so a sequence in a batch would not be bit for bit the sequence alone
// (tests/gpu/test_pipeline_batch.cpp; since session 17's 16 splits of at
// least 8 positions, rows of 16 positions and more split alone but not in a
// batch of 16 entries or more).
// One token over a short row takes the row kernel, one split, by default.
int32_t layer_split_count(const CudaBackend::Impl& s, int64_t n) {
  if (s.kv_f32) return max_attention_splits(s.c, s.opt.n_ctx);
  return row_attention(s, n) ? 1 : attention_split_count(s.c, n, s.max_pos);
}

// LS_STEP_OMIT (a measurement switch, never for output): the kernels a
// layer leaves out, a sum of 1 (the two norms), 2 (attention, with its
// RoPE and KV store) and 4 (SwiGLU). A decode step's time with and without
// them, replayed in its graph, is what they cost there, PDL overlap and
// boundaries included, where ncu times each alone with its caches flushed
// ("time variants that leave one stage out": the device notes). The GEMVs
// then read stale inputs: the tokens are not the model's, and the first
// use says so on stderr.
int step_omit() {
  static const int v = [] {
    const int x = static_cast<int>(env_int("LS_STEP_OMIT", 0, 0) & 7);
    if (x)
      std::fprintf(stderr,
                   "LS_STEP_OMIT=%d: each layer leaves out%s%s%s, for timing; the output is not "
                   "the model's\n",
                   x, x & 1 ? " the norms" : "", x & 2 ? " attention" : "",
                   x & 4 ? " SwiGLU" : "");
    return x;
  }();
  return v;
}

// One layer's kernels on s.stream (see the top of this file).
// next: the layer after it in the same graph, whose q, k, v weights the
// down GEMV asks the L2 for (nullptr: none).
Status enqueue_layer(CudaBackend::Impl& s, uint32_t il, const LayerView& w,
                     const LayerView* next = nullptr) {
  const LlamaConfig& c = s.c;
  const int64_t n = static_cast<int64_t>(s.batch.size());
  if (n == 0) return ok();
  const int64_t E = c.n_embd, KV = c.n_embd_kv(), F = c.n_ff;

  // A decode batch whose GEMVs read 8-bit x gets it from the kernel that
  // makes x (the norms, swiglu) instead of a quantize_act launch; where the
  // int8 GEMM takes some of a group's weights (a 70b's q at 4-8 tokens, not
  // its k and v), it quantizes x in its own layout for them.
  MatmulContext& mm = *s.mm;
  auto q8_for = [&](std::initializer_list<WeightView> ws) {
    for (const WeightView& x : ws)
      if (mm.takes_q8(x, n)) return mm.gemv_x();
    return ActQ8Device{nullptr, nullptr};
  };
  RmsNormParams np;
  np.h = s.h;
  np.add = s.pending_add ? s.o : nullptr;
  np.w = w.attn_norm;
  np.y = s.xn;
  np.n = E;
  np.n_out = n;
  np.eps = c.rms_eps;
  np.q8 = q8_for({w.wq, w.wk, w.wv});
  np.pf = s.prefetch_of({w.wq, w.wk, w.wv}, s.pf_chain, n);
  const int omit = step_omit();
  if (!(omit & 1)) LS_TRY(rmsnorm_f32_cuda(np, s.stream));
  if (np.q8.q) mm.note_gemv_x(s.xn, E, n);
  mm.set_next_prefetch(s.prefetch_of({w.wo}, s.pf_gemv, n));
  {  // q, k, v read the same xn: one f16 conversion of it (and overlap) for prefill
    const WeightView qkv[3] = {w.wq, w.wk, w.wv};
    float* const out[3] = {s.q, s.k, s.v};
    LS_TRY(matmul_cuda_shared_x(mm, qkv, out, 3, s.xn, n, s.stream, np.q8.q != nullptr));
  }

  AttentionParams ap;
  ap.q = s.q;
  ap.k_cache = s.kv.k_layer(il);
  ap.v_cache = s.kv.v_layer(il);
  ap.pages = s.kv.pages();
  ap.kv_f32 = s.kv_f32;
  ap.pos = s.pos;
  ap.seq = s.seq;
  ap.out = s.att;
  ap.partial = s.partial;
  ap.n_tok = n;
  ap.n_head = static_cast<int32_t>(c.n_head);
  ap.n_head_kv = static_cast<int32_t>(c.n_head_kv);
  ap.head_dim = static_cast<int32_t>(c.head_dim);
  ap.n_ctx = static_cast<int32_t>(s.opt.n_ctx);
  ap.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  ap.chunk = attention_chunk();
  ap.n_split = layer_split_count(s, n);
  // The partials were sized for the splits a batch can have (split_partial_floats);
  // an A/B setting (LS_ATTENTION_SHORT) may ask for more: an error, never a write past them.
  if (attention_partial_floats(n, ap.n_head, ap.head_dim, ap.n_split) > s.partial_floats)
    return make_error(
        "cuda backend: attention of %lld entries in %d splits needs more partials than the %lld "
        "floats reserved",
        (long long)n, ap.n_split, (long long)s.partial_floats);
  ap.min_chunk = attention_min_chunk();
  ap.max_pos = s.max_pos;

  RopeCudaParams rope = s.rope_params();  // rope(q), rope(k), then k and v into the cache
  rope.cs = s.rope_cs;
  if (attention_fuses_rope(ap)) {  // one token: inside the attention kernel
    ap.k_new = s.k;
    ap.v_new = s.v;
    ap.rope = rope;
  } else {  // one kernel before attention
    RopeKvParams rk;
    rk.rope = rope;
    rk.q = s.q;
    rk.n_head = static_cast<int32_t>(c.n_head);
    KvStoreParams& kp = rk.kv;
    kp.k = s.k;
    kp.v = s.v;
    kp.pos = s.pos;
    kp.seq = s.seq;
    kp.k_cache = ap.k_cache;
    kp.v_cache = ap.v_cache;
    kp.pages = ap.pages;
    kp.n_tok = n;
    kp.n_embd_kv = static_cast<int32_t>(KV);
    kp.n_ctx = static_cast<int32_t>(s.opt.n_ctx);
    kp.f32 = s.kv_f32;
    if (!(omit & 2)) LS_TRY(rope_kv_store_cuda(rk, s.stream));
  }
  ap.q8 = q8_for({w.wo});  // the o GEMV's x, made by the attention kernel
  ap.pf = s.prefetch_of({w.wo}, s.pf_chain, n);
  if (!(omit & 2)) LS_TRY(attention_cuda(ap, s.stream));
  if (ap.q8.q) mm.note_gemv_x(s.att, ap.n_head * ap.head_dim, n);
  mm.set_next_prefetch(s.prefetch_of({w.w_gate, w.w_up}, s.pf_gemv, n));
  LS_TRY(s.matmul(w.wo, s.att, n, s.o, ap.q8.q != nullptr));

  np.add = s.o;  // h += attention output, fused with the feed-forward norm
  np.w = w.ffn_norm;
  np.q8 = q8_for({w.w_gate, w.w_up});
  np.pf = s.prefetch_of({w.w_gate, w.w_up}, s.pf_chain, n);
  if (!(omit & 1)) LS_TRY(rmsnorm_f32_cuda(np, s.stream));
  if (np.q8.q) mm.note_gemv_x(s.xn, E, n);
  mm.set_next_prefetch(s.prefetch_of({w.w_down}, s.pf_gemv, n));
  {
    const WeightView gu[2] = {w.w_gate, w.w_up};
    float* const out[2] = {s.gate, s.up};
    LS_TRY(matmul_cuda_shared_x(mm, gu, out, 2, s.xn, n, s.stream, np.q8.q != nullptr));
  }
  SwigluParams sp;
  sp.gate = s.gate;
  sp.up = s.up;
  sp.out = s.gate;
  sp.n = n * F;
  sp.q8 = q8_for({w.w_down});
  sp.pf = s.prefetch_of({w.w_down}, s.pf_chain, n);
  if (!(omit & 4)) LS_TRY(swiglu_f32_cuda(sp, s.stream));
  if (sp.q8.q) mm.note_gemv_x(s.gate, F, n);
  if (next) mm.set_next_prefetch(s.prefetch_of({next->wq, next->wk, next->wv}, s.pf_gemv, n));
  LS_TRY(s.matmul(w.w_down, s.gate, n, s.o, sp.q8.q != nullptr));
  s.pending_add = true;
  return ok();
}

}  // namespace

// Decode batches (n <= kGemvMaxTok, no cuBLAS) run as CUDA graphs: one launch
// instead of ~15 a layer, and the GPU runs the kernels back to back. A run
// of consecutive resident layers (layers(): a resident model's every layer)
// is one graph, so a step is one launch and the kernels overlap across layer
// boundaries too (programmatic dependent launch reaches only inside a graph);
// a streamed layer is a graph of its own, per device slot it lands in. A
// graph is captured the first time a (first layer, weights, n, count,
// pending add) combination comes and replayed after; positions and tokens
// are read from device memory, so they need no new capture. The cache is
// dropped when the activations move (reserve), the attention split count
// changes (at two context lengths: attention_splits_dynamic) or the
// attention kernel's form does (attention_form: at ~512 and 1,024
// positions). LS_CUDA_GRAPHS=0 turns graphs off, LS_LAYER_GRAPH=0 makes each
// layer a graph of its own (A/B runs).
Status CudaBackend::layer(uint32_t il, const LayerView& w) {
  return layers(il, &w, 1);
}

uint32_t CudaBackend::layer_group() const {
  return impl_->group;
}

Status CudaBackend::layers(uint32_t first, const LayerView* w, uint32_t count) {
  Impl& s = *impl_;
  const int64_t n = static_cast<int64_t>(s.batch.size());
  if (n == 0 || count == 0) return ok();
  if (!s.graphs || n > kGemvMaxTok) {
    for (uint32_t i = 0; i < count; ++i)
      LS_TRY(enqueue_layer(s, first + i, w[i], i + 1 < count ? &w[i + 1] : nullptr));
    return ok();
  }
  const int32_t n_split = layer_split_count(s, n);
  const int form_now = attention_form(s, n, n_split);
  if (n_split != s.graph_split || form_now != s.graph_form || s.act != s.graph_act) {
    s.drop_graphs();
    s.graph_split = n_split;
    s.graph_form = form_now;
    s.graph_act = s.act;
  }
  const Impl::GraphKey key{first, w[0].wq.data, n, s.pending_add, count};
  auto it = s.graph_cache.find(key);
  if (it == s.graph_cache.end()) {
    LS_CUDA_TRY(cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeThreadLocal));
    const Status st = [&]() -> Status {
      const PdlScope pdl;  // the kernels overlap their neighbours (kernels/pdl.cuh)
      for (uint32_t i = 0; i < count; ++i)
        LS_TRY(enqueue_layer(s, first + i, w[i], i + 1 < count ? &w[i + 1] : nullptr));
      return ok();
    }();
    cudaGraph_t g = nullptr;
    const cudaError_t e = cudaStreamEndCapture(s.stream, &g);
    if (!st.ok()) {
      if (g) cudaGraphDestroy(g);
      return st;
    }
    if (e != cudaSuccess) return cuda_error(e, "cudaStreamEndCapture", __FILE__, __LINE__);
    cudaGraphExec_t exec = nullptr;
    const cudaError_t ie = cudaGraphInstantiate(&exec, g, 0);
    cudaGraphDestroy(g);
    if (ie != cudaSuccess) return cuda_error(ie, "cudaGraphInstantiate", __FILE__, __LINE__);
    it = s.graph_cache.emplace(key, exec).first;
  }
  LS_CUDA_TRY(cudaGraphLaunch(it->second, s.stream));
  s.pending_add = true;  // what enqueue_layer leaves behind
  return ok();
}

// The hidden state to and from the CPU tier. The pending residual add is made
// first (through the norm kernel with its fused add; its normalised output
// is scratch that the next layer overwrites). The copies run on the compute
// stream and are waited for: 16 KB per token on the 8b, 32 KB on the 70b.
Status CudaBackend::export_hidden(float* h) {
  Impl& s = *impl_;
  const int64_t n = static_cast<int64_t>(s.batch.size());
  if (s.pending_add) {
    RmsNormParams np;
    np.h = s.h;
    np.add = s.o;
    np.w = s.g.output_norm;
    np.y = s.xn;
    np.n = s.c.n_embd;
    np.n_out = n;
    np.eps = s.c.rms_eps;
    LS_TRY(rmsnorm_f32_cuda(np, s.stream));
    s.pending_add = false;
  }
  LS_CUDA_TRY(
      cudaMemcpyAsync(h, s.h, n * s.c.n_embd * sizeof(float), cudaMemcpyDeviceToHost, s.stream));
  LS_CUDA_TRY(cudaStreamSynchronize(s.stream));
  return ok();
}

// Key/value rows between this cache and host memory (hybrid plans: see
// Backend::read_kv), through the block table (model/cuda_kv_pool.cuh). On
// the compute stream, so they order with the layers that write and read
// them, and waited for: the other backend reads the rows next.
Status CudaBackend::read_kv(uint32_t layer, int32_t seq, uint32_t p0, uint32_t p1, float* k,
                            float* v) {
  Impl& s = *impl_;
  LS_TRY(s.check_kv_rows(layer, seq, p0, p1));
  return s.kv.read_rows(layer, static_cast<uint32_t>(seq), p0, p1, k, v, s.stream);
}

namespace {

// The spans in the pool's form, each checked first (nothing moves when one is bad).
template <class Impl>
Status pool_spans(Impl& s, uint32_t layer, const Backend::KvRowSpan* spans, size_t n,
                  std::vector<CudaKvPool::Span>& v) {
  v.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const Backend::KvRowSpan& r = spans[i];
    LS_TRY(s.check_kv_rows(layer, r.seq, r.p0, r.p1));
    v[i] = {static_cast<uint32_t>(r.seq), r.p0, r.p1, r.k, r.v};
  }
  return ok();
}

}  // namespace

Status CudaBackend::read_kv_spans(uint32_t layer, const KvRowSpan* spans, size_t n) {
  Impl& s = *impl_;
  std::vector<CudaKvPool::Span> v;
  LS_TRY(pool_spans(s, layer, spans, n, v));
  return s.kv.read_spans(layer, v.data(), n, s.stream);
}

Status CudaBackend::write_kv_spans(uint32_t layer, const KvRowSpan* spans, size_t n) {
  Impl& s = *impl_;
  std::vector<CudaKvPool::Span> v;
  LS_TRY(pool_spans(s, layer, spans, n, v));
  return s.kv.write_spans(layer, v.data(), n, s.stream);
}

Status CudaBackend::write_kv(uint32_t layer, int32_t seq, uint32_t p0, uint32_t p1, const float* k,
                             const float* v) {
  Impl& s = *impl_;
  LS_TRY(s.check_kv_rows(layer, seq, p0, p1));
  return s.kv.write_rows(layer, static_cast<uint32_t>(seq), p0, p1, k, v, s.stream);
}

Status CudaBackend::import_hidden(const Batch& b, const float* h) {
  Impl& s = *impl_;
  if (b.size() != s.batch.size())
    return make_error("cuda backend: import_hidden of %zu rows into a step of %zu", b.size(),
                      s.batch.size());
  const uint64_t bytes = b.size() * s.c.n_embd * sizeof(float);
  if (s.hid_rows < b.size() && s.opt.hidden_by_kernel && !s.hid_failed) {
    // Room for the widest step, once; a failure leaves the copy engine's path.
    if (s.hid_host) cudaFreeHost(s.hid_host);
    s.hid_host = nullptr;
    s.hid_dev = nullptr;
    s.hid_rows = 0;
    const uint64_t rows = std::max<uint64_t>(b.size(), s.cap);
    void* p = nullptr;
    if (cuda_host_alloc_mapped(rows * s.c.n_embd * sizeof(float), &p, &s.hid_dev)) {
      s.hid_host = static_cast<float*>(p);
      s.hid_rows = rows;
    } else {
      s.hid_failed = true;
    }
  }
  if (s.hid_rows >= b.size()) {
    std::memcpy(s.hid_host, h, bytes);
    LS_TRY(read_host_cuda(s.hid_dev, s.h, bytes, s.stream));
  } else {
    LS_CUDA_TRY(cudaMemcpyAsync(s.h, h, bytes, cudaMemcpyHostToDevice, s.stream));
  }
  // h (and the staging, which the next call overwrites) is host memory
  // that must not change while the GPU reads it.
  LS_CUDA_TRY(cudaStreamSynchronize(s.stream));
  s.pending_add = false;
  return ok();
}

Status CudaBackend::finish(float* logits) {
  Impl& s = *impl_;
  LS_TRY(s.head_norm());
  // The same stream orders each chunk's copy before the next chunk's matmul.
  for (int64_t r0 = 0, r = 0; r0 < s.n_logits; r0 += r) {
    LS_TRY(s.head_rows(r0, &r));
    LS_CUDA_TRY(cudaMemcpyAsync(logits + r0 * s.c.n_vocab, s.logits,
                                static_cast<uint64_t>(r) * s.c.n_vocab * sizeof(float),
                                cudaMemcpyDeviceToHost, s.stream));
  }
  LS_TRY(issued());
  LS_CUDA_TRY(cudaStreamSynchronize(s.stream));
  return ok();
}

Status CudaBackend::finish_argmax(int32_t* tokens, int32_t n_rows, int32_t n_vocab) {
  LS_TRY(finish_argmax_issue(n_rows, n_vocab));
  return finish_argmax_wait(tokens);
}

Status CudaBackend::finish_argmax_issue(int32_t n_rows, int32_t n_vocab) {
  Impl& s = *impl_;
  if (n_rows != s.n_logits || n_vocab != static_cast<int32_t>(s.c.n_vocab))
    return make_error("cuda backend: finish_argmax of %d rows of %d for a step of %lld rows of %u",
                      n_rows, n_vocab, static_cast<long long>(s.n_logits), s.c.n_vocab);
  LS_TRY(s.head_norm());
  for (int64_t r0 = 0, r = 0; r0 < s.n_logits; r0 += r) {
    LS_TRY(s.head_rows(r0, &r));
    ArgmaxParams ap;
    ap.x = s.logits;
    ap.out = s.best + r0;
    ap.n_rows = r;
    ap.n = s.c.n_vocab;
    LS_TRY(argmax_f32_cuda(ap, s.stream));
  }
  for (cudaEvent_t& e : s.ids_ready)
    if (!e) LS_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  s.ids_wait = s.ids_slot;
  s.ids_slot ^= 1;
  if (s.n_logits > 0)
    LS_CUDA_TRY(cudaMemcpyAsync(s.pinned + (4 + s.ids_wait) * s.cap, s.best, s.n_logits * 4,
                                cudaMemcpyDeviceToHost, s.stream));
  LS_CUDA_TRY(cudaEventRecord(s.ids_ready[s.ids_wait], s.stream));
  return issued();
}

Status CudaBackend::finish_argmax_wait(int32_t* tokens) {
  Impl& s = *impl_;
  LS_CUDA_TRY(cudaEventSynchronize(s.ids_ready[s.ids_wait]));
  std::memcpy(tokens, s.pinned + (4 + s.ids_wait) * s.cap, static_cast<size_t>(s.n_logits) * 4);
  s.chain_token = s.n_logits == 1 ? tokens[0] : -1;
  return ok();
}

// A chained step is the step begun, one position on, its token the argmax
// on the device: nothing crosses from the host. The kernels before the
// layers are those of begin() (the RoPE table, the embedding), after one that
// moves the token and the position on (kernels/step_advance.cuh).
bool CudaBackend::can_chain() const {
  static const bool off = [] {  // A/B: LS_CHAIN_STEPS=0, every step from the host
    const char* e = std::getenv("LS_CHAIN_STEPS");
    return e && std::string(e) == "0";
  }();
  const Impl& s = *impl_;
  if (off || !s.graphs || s.embd_on_host || s.batch.size() != 1 || s.n_logits != 1 ||
      !s.batch.argmax_only)
    return false;
  const uint32_t next = static_cast<uint32_t>(s.batch.pos[0]) + 1;
  return next < s.opt.n_ctx && s.kv.holds(static_cast<uint32_t>(s.batch.seq[0]), next, next + 1);
}

Status CudaBackend::begin_chained() {
  Impl& s = *impl_;
  if (!can_chain()) return make_error("cuda backend: this step cannot be chained");
  s.batch.pos[0] += 1;
  s.batch.token[0] = -1;  // on the device until the sampler's batch confirms it
  s.max_pos = s.batch.pos[0];
  LS_TRY(step_advance_cuda(s.tok, s.pos, s.best, 1, s.stream));
  LS_TRY(rope_table_cuda(s.rope_params(), s.rope_cs, s.stream));
  LS_TRY(embed_rows_cuda(s.embed_params(1), s.stream));
  s.pending_add = false;
  s.chained = true;
  return ok();
}

bool CudaBackend::adopt_chained(const Batch& b) {
  Impl& s = *impl_;
  if (!s.chained) return false;
  s.chained = false;
  const Batch& c = s.batch;
  if (b.size() != 1 || b.seq[0] != c.seq[0] || b.pos[0] != c.pos[0] ||
      b.token[0] != s.chain_token || b.logits[0] != 1 || !b.argmax_only ||
      (!b.kv_table.empty() && b.kv_table != s.kv.table()))
    return false;
  s.batch.token[0] = b.token[0];
  return true;
}

}  // namespace ls
