// The messages of the actor graph (actors/pipeline.cpp draws the graph).
// Buffers move, never copy: a message carries buffer ids from fixed pools.
// defines: LayerJob, StepInput, StepOutput, KvRows, CpuWork, StepWidths, HybridRoute
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "model/backend.h"
#include "model/tier_plan.h"
#include "model/width_routing.h"

namespace ls {

// One layer of one step on its way to compute: planner -> (reader ->)
// (copier ->) compute. Holds a depth credit from the planner until compute is
// done with it.
struct LayerJob {
  int64_t step = -1;
  int32_t layer = -1;
  Tier tier = Tier::Resident;
  int32_t staging = -1;  // staging buffer holding the layer (storage tier, reader -> copier)
  int32_t slot = -1;     // device slot holding the layer (RAM and storage tiers, copier -> compute)
  // Resident layers layer .. layer + count - 1: the planner sends a run of
  // consecutive resident layers as one job (one depth credit) when the
  // backend takes runs at once (Backend::layer_group); 1 otherwise.
  int32_t count = 1;
};

// The batch of one step: the prompt, or the token the sampler chose
// (sampler -> compute). stop ends the compute actor.
struct StepInput {
  int64_t step = -1;
  Batch batch;
  bool stop = false;
};

// Key/value rows of one layer, positions [p0, p1) of sequence (slot) seq,
// as f32 values: a CPU-tier layer's cache moving between the GPU and CPU
// backends.
struct KvRows {
  uint32_t layer = 0, p0 = 0, p1 = 0;
  int32_t seq = 0;
  std::vector<float> k, v;  // (p1 - p0) x n_embd_kv each
};

// A CPU-tier layer (compute <-> cpu-compute): the hidden state of `batch`
// in `hidden` (size() x n_embd floats, owned by compute, which waits for the
// reply before it touches either again). The reply is the same message with
// the state after the layer, or an error.
struct CpuWork {
  int64_t step = -1;
  int32_t layer = -1;
  const Batch* batch = nullptr;
  float* hidden = nullptr;
  bool failed = false;
  // Rows the GPU wrote that the CPU cache lacks (n_kv_in sets, one per
  // sequence): written before the layer runs.
  const KvRows* kv_in = nullptr;
  int32_t n_kv_in = 0;
  // A request with no layer (batch null): fill these rows from the CPU cache
  // (n_kv_out sets, one per sequence).
  KvRows* kv_out = nullptr;
  int32_t n_kv_out = 0;
};

// Each step's width (tokens in its batch), for the planner to route the CPU
// tier's layers of the step by it (HybridRoute::keep: a CPU layer's cost
// grows with the width, a streamed one's hardly does). Compute publishes the
// step it will run next before the current one's logits leave, so the
// sampler reads the right step when it forms the next batch; it writes that
// step's width, then marks it fed, before sending it. The planner routes a
// CPU-tier layer of step s once s is fed (resident and streamed layers never
// wait: the next step's copies still start early). A step is fed only after
// the previous one's logits, so a ring of a few entries never wraps early.
struct StepWidths {
  static constexpr int kRing = 4;
  std::atomic<int64_t> next_step{0};       // compute: the step after the one finishing
  std::atomic<int64_t> fed_step{-1};       // sampler: the last step whose batch is known
  std::atomic<int64_t> width[kRing] = {};  // sampler: step s's width at s % kRing
  // A bound on a step's width announced before its batch is formed
  // (Pipeline::announce_width: speculative decoding knows K + 1 before it
  // drafts): bound[s % kRing] for step bound_step, which the sampler's batch
  // for that step keeps to. The planner routes by it rather than wait.
  std::atomic<int64_t> bound_step{-1};
  std::atomic<int64_t> bound[kRing] = {};
  mutable std::atomic<int64_t> routed_by_bound{0};  // planner: steps routed so (tests)
};

// Which of the layers in host memory the CPU computes now, by layer: a
// hybrid plan re-planned online (model/hybrid_balance.h). Compute writes it
// between steps; the planner reads it as it routes each job, so a change
// takes effect from the next layer it plans (jobs already planned keep
// their side; compute moves a layer's key/value rows when it changes side).
// keep: of the layers on the CPU, how many the CPU computes in a step of
// each width bucket (model/width_routing.h); the planner sends the others
// through PCIe for that step, spread evenly (WidthRouting::keeps). Compute
// writes it after each step.
//
// predicted_s[b]: the routing's simulated step of bucket b as it will be
// routed (seconds; 0: nothing to predict from yet), written after each step
// for every bucket: what a speculative run's K chooser takes for the widths
// it has not measured (model/speculative.h, SpecK::set_prior).
//
// placed[b]: compute has chosen which layers a step of bucket b keeps
// (WidthRouting::placement: a local search on the simulated step), given
// by layer in keep_at[b * n_layer + l]; the planner follows it instead of
// the even spread. Written entries first, then placed[b] (release): a
// step routed while compute rewrites them may mix two placements, which is
// still a valid step (each layer goes one way).
struct HybridRoute {
  explicit HybridRoute(size_t n_layer)
      : n_layer(n_layer),
        on_cpu(new std::atomic<uint8_t>[n_layer]),
        keep_at(new std::atomic<uint8_t>[n_layer * WidthRouting::kBuckets]) {
    for (size_t l = 0; l < n_layer; ++l) on_cpu[l].store(0);
    for (size_t l = 0; l < n_layer * WidthRouting::kBuckets; ++l) keep_at[l].store(0);
    for (auto& k : keep) k.store(0);
    for (auto& p : placed) p.store(0);
    for (auto& p : predicted_s) p.store(0);
  }
  size_t n_layer;
  std::unique_ptr<std::atomic<uint8_t>[]> on_cpu;
  std::atomic<int32_t> keep[WidthRouting::kBuckets];
  std::unique_ptr<std::atomic<uint8_t>[]> keep_at;
  std::atomic<uint8_t> placed[WidthRouting::kBuckets];
  std::atomic<double> predicted_s[WidthRouting::kBuckets];
  static bool keeps_layer(int32_t i, int32_t n, int32_t k) { return WidthRouting::keeps(i, n, k); }
  // Whether the planner keeps layer l (on the CPU now) on the CPU in a step
  // of bucket b, the i-th of n such layers, keep of them kept.
  bool keeps(int b, int32_t l, int32_t i, int32_t n, int32_t k) const {
    if (placed[b].load(std::memory_order_acquire))
      return keep_at[static_cast<size_t>(b) * n_layer + static_cast<size_t>(l)].load(
                 std::memory_order_relaxed) != 0;
    return keeps_layer(i, n, k);
  }
};

// The logits of a step's entries that asked for them (compute -> sampler).
// They stay valid until compute starts the next step, which it does only
// after the sampler's next StepInput.
struct StepOutput {
  int64_t step = -1;
  const float* logits = nullptr;  // n_rows x n_vocab; null in an argmax_only step
  const int32_t* ids = nullptr;   // n_rows greedy tokens, in an argmax_only step
  int32_t n_rows = 0;
  int32_t n_vocab = 0;
};

}  // namespace ls
