// What a compute backend does, whatever it runs on: a step is a batch of
// (sequence, position, token) entries that goes through every layer, each
// layer's weights handed in as a view of wherever they lie (the mapped file,
// a RAM buffer, a device slot). Batch 1 is a case, not the design.
// defines: Batch, LayerView, GlobalView, layer_view(), global_view(), Backend
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "kernels/ref/matmul.h"
#include "model/llama_config.h"
#include "runtime/status.h"

namespace ls {

class ThreadPool;  // runtime/thread_pool.h

class DeviceLink;

// The most tokens a step holds: --ubatch-size, and no more than every
// slot's context could hold. The device's activations are sized for it (the
// tier plan's line) and the sampler keeps every step to it, a longer prompt
// going in chunks, as llama.cpp's n_ubatch: a step past it grew the
// activations beyond the plan (a 70b at 24 GiB with 32 sequences of 128
// prompt tokens took steps of 1,152 and 2,944 tokens and 1.1-1.4 GiB more
// than its plan: session 44).
inline uint32_t step_tokens_max(uint32_t ubatch, uint32_t n_ctx, uint32_t n_seq) {
  const uint64_t most = uint64_t{n_ctx} * (n_seq > 0 ? n_seq : 1);
  const uint64_t n = ubatch < most ? ubatch : most;
  return n > 0 ? static_cast<uint32_t>(n) : 1;
}

struct Batch {
  std::vector<int32_t> token;
  std::vector<int32_t> pos;
  std::vector<int32_t> seq;
  std::vector<uint8_t> logits;  // 1: compute logits for this entry
  // The paged key/value cache's block table (kernels/kv_pages.h), (slots,
  // ceil(n_ctx / kKvBlockLen)), from the sampler's model/kv_blocks.h, for
  // this step and after; empty: the backend keeps the table it has (at the
  // start, each slot n_ctx positions of its own when the pool has them).
  std::vector<int32_t> kv_table;
  // Every logits row of the step is wanted only for its greedy token: the
  // step ends with Backend::finish_argmax instead of finish (set by the
  // sampler actor when each sequence of the step is greedy_plain).
  bool argmax_only = false;
  size_t size() const { return token.size(); }
  size_t n_logits() const {
    size_t n = 0;
    for (uint8_t l : logits) n += l;
    return n;
  }
  void add(int32_t t, int32_t p, int32_t s, bool want_logits) {
    token.push_back(t);
    pos.push_back(p);
    seq.push_back(s);
    logits.push_back(want_logits ? 1 : 0);
  }
  void clear() {
    token.clear();
    pos.clear();
    seq.clear();
    logits.clear();
    kv_table.clear();
    argmax_only = false;
  }
};

// A layer's weights wherever they are. Norm weights are f32 (as llama.cpp writes them).
struct LayerView {
  const float* attn_norm = nullptr;  // (n_embd)
  WeightView wq, wk, wv, wo;
  const float* ffn_norm = nullptr;  // (n_embd)
  WeightView w_gate, w_up, w_down;
};

struct GlobalView {
  WeightView token_embd;  // (n_embd, n_vocab)
  const float* output_norm = nullptr;
  WeightView output;                  // (n_embd, n_vocab)
  const float* rope_freqs = nullptr;  // (n_rot/2) or nullptr
};

// The view of layer weights whose file bytes [base_offset, ...) lie at base.
LayerView layer_view(const LayerWeights& w, const uint8_t* base, uint64_t base_offset);
// The view of the global tensors, all in the mapped file.
GlobalView global_view(const LlamaWeights& w, const uint8_t* file_base);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  // Start a step: embed the batch's tokens into the hidden state.
  virtual Status begin(const Batch& b) = 0;
  // Apply one layer to the hidden state (and write its keys/values to the cache).
  virtual Status layer(uint32_t index, const LayerView& w) = 0;
  // Layers first .. first + count - 1 in turn, as layer() does one by one (the
  // default). The compute actor hands a backend whose layer_group() is more
  // than 1 each run of consecutive resident layers at once: the CUDA backend
  // makes them one graph a step (issue 20: one launch for a resident model's
  // layers, and its kernels overlap across layer boundaries).
  virtual Status layers(uint32_t first, const LayerView* w, uint32_t count) {
    for (uint32_t i = 0; i < count; ++i) LS_TRY(layer(first + i, w[i]));
    return ok();
  }
  virtual uint32_t layer_group() const { return 1; }
  // Final norm and head for the entries with logits set; writes n_logits x n_vocab floats.
  virtual Status finish(float* logits) = 0;
  // finish(), then each row's greedy token (greedy_argmax, model/sampler.h)
  // into ids (n_logits of them) instead of the rows. The default computes
  // the rows into host memory; the CUDA backend takes the argmax on the
  // device and copies only the ids (a 128k vocabulary's row is 513 KB).
  virtual Status finish_argmax(int32_t* ids, int32_t n_rows, int32_t n_vocab);
  // Chained greedy steps (issue 20: the GPU does not wait for the host
  // between two decode steps of one greedy sequence). finish_argmax in two
  // halves, issue and wait; between them, where can_chain() says so,
  // begin_chained() starts the next step of the step's one sequence on the
  // device (its token the argmax being computed, its position the next) and
  // the caller issues that step's layers. The sampler's batch for the step
  // then goes to adopt_chained(): true when it is the step started (its
  // token the one the wait returned, its position, sequence and block
  // table), which then runs on to its head; false drops the chained step (its
  // work runs to no use; the key/value row it wrote is written again before
  // anything reads it) and the batch begins as usual. Backends that compute
  // on the calling thread do not chain (the defaults).
  virtual bool can_chain() const { return false; }
  virtual Status finish_argmax_issue(int32_t, int32_t) {
    return make_error("%s: no chained steps", name());
  }
  virtual Status finish_argmax_wait(int32_t*) { return make_error("%s: no chained steps", name()); }
  virtual Status begin_chained() { return make_error("%s: no chained steps", name()); }
  virtual bool adopt_chained(const Batch&) { return false; }
  // Forget the cached keys/values of a sequence from position `from` on.
  virtual void clear_seq(int32_t seq, int32_t from) = 0;
  // Blocks of the paged key/value cache's pool (model/kv_blocks.h); 0: a
  // backend that does not say (the pipeline then takes its own options').
  virtual uint32_t kv_pool_blocks() const { return 0; }
  // The pool of CPU threads this backend computes on, to share with another
  // backend that takes turns with it (a draft model's); null: none.
  virtual std::shared_ptr<ThreadPool> cpu_pool() const { return nullptr; }
  // The view of a resident layer as this backend holds it, when it keeps its
  // own copy (the CUDA backend: device pointers); nullopt: the mapped file's
  // view (Model::layer) is the one to pass to layer().
  virtual std::optional<LayerView> resident_layer(uint32_t) const { return std::nullopt; }
  // The hidden state crossing between backends (hybrid plans: the CPU tier
  // computes some layers). export_hidden writes the residual stream after
  // the layers so far, size() x n_embd floats, to host memory; import_hidden
  // takes the step's batch (no embedding: the state comes from the other
  // backend) and sets the residual stream from host memory.
  virtual Status export_hidden(float*) { return make_error("%s: no hidden-state export", name()); }
  virtual Status import_hidden(const Batch&, const float*) {
    return make_error("%s: no hidden-state import", name());
  }
  // A layer's cached keys and values for positions [p0, p1) of sequence
  // `seq` (through the block table of the last batch), as f32 (n_embd_kv per
  // position; exact for f16 and f32 caches), out of this backend and into it:
  // hybrid plans compute a CPU-tier layer on the GPU for a wide step (prefill
  // through PCIe) and on the CPU for the next, so the rows one side wrote move
  // to the other before it reads them (actors/compute.cpp).
  virtual Status read_kv(uint32_t, int32_t, uint32_t, uint32_t, float*, float*) {
    return make_error("%s: no key/value row export", name());
  }
  virtual Status write_kv(uint32_t, int32_t, uint32_t, uint32_t, const float*, const float*) {
    return make_error("%s: no key/value row import", name());
  }
  // read_kv and write_kv of one layer for several sequences at once (a wide
  // step's sequences, when a CPU-tier layer changes sides): the CUDA backend
  // waits for the device once rather than once a sequence.
  struct KvRowSpan {
    int32_t seq;
    uint32_t p0, p1;
    float *k, *v;  // (p1 - p0) x n_embd_kv each: filled by read_kv_spans, read by write_kv_spans
  };
  virtual Status read_kv_spans(uint32_t layer, const KvRowSpan* s, size_t n) {
    for (size_t i = 0; i < n; ++i)
      LS_TRY(read_kv(layer, s[i].seq, s[i].p0, s[i].p1, s[i].k, s[i].v));
    return ok();
  }
  virtual Status write_kv_spans(uint32_t layer, const KvRowSpan* s, size_t n) {
    for (size_t i = 0; i < n; ++i)
      LS_TRY(write_kv(layer, s[i].seq, s[i].p0, s[i].p1, s[i].k, s[i].v));
    return ok();
  }
  // How streamed layers reach this backend's memory (model/device_link.h);
  // nullptr: host memory and memcpy (a HostLink).
  virtual DeviceLink* link() { return nullptr; }
  // Called by finish and finish_argmax once the step's device work is
  // issued, before they wait for it: the compute actor closes the head's
  // GPU span there, so that the span ends with the work rather than with
  // the host's wake-up. Backends that compute on the calling thread never
  // call it.
  void set_on_issued(std::function<Status()> f) { on_issued_ = std::move(f); }

 protected:
  Status issued() { return on_issued_ ? on_issued_() : ok(); }

 private:
  std::vector<float> argmax_rows_;  // finish_argmax's rows (the default)
  std::function<Status()> on_issued_;
};

}  // namespace ls
