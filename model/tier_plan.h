// The tier plan: where each layer's weights live for the run.
//   Resident — in device memory (on the CPU backend: read in place from the
//              mapped file), no cost per token;
//   Cpu      — in host memory, computed there by the CPU compute actor (the
//              hidden state crosses to it and back): no copy, the CPU reads
//              the weights once, in place (DESIGN's tier B');
//   Ram      — in (pinned) host memory, one copy into a device slot per use;
//   Storage  — in the file, one read into a staging buffer and one copy per use.
// Device memory first takes its reserves (KV cache, activations, the global
// tensors, the device slots), then layers; host memory takes the staging
// buffers, then layers; the rest stays on storage. Every reserve is printed.
// defines: Tier, tier_name(), PlanInputs, TierPlan, plan_tiers(), widen_step_tokens()
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/layer_map.h"
#include "model/llama_config.h"
#include "runtime/status.h"

namespace ls {

enum class Tier : uint8_t { Resident, Ram, Storage, Cpu };
const char* tier_name(Tier t);

struct PlanLine {
  std::string what;
  uint64_t bytes;
};

struct PlanInputs {
  uint64_t vram_budget = UINT64_MAX;      // device memory for the run (UINT64_MAX: unlimited)
  uint64_t ram_budget = UINT64_MAX;       // host memory for RAM-tier layers and staging
  std::vector<PlanLine> device_reserves;  // KV cache, activations, head, ... (device)
  // token_embd, when the planner may leave it in host memory: on the device
  // only if the whole model fits (a step needs just its batch's rows, which
  // the CPU gathers). 0: it is counted in device_reserves or not on a device.
  uint64_t token_embd_bytes = 0;
  int32_t device_slots = 2;
  int32_t staging_buffers = 2;
  uint32_t read_alignment = 4096;  // staging buffers hold aligned over-reads
  // Layers the CPU computes from RAM (--cpu-layers), chosen among the
  // non-resident ones and spread evenly between the streamed ones, so the
  // copier has a slot to fill while the CPU computes.
  int32_t cpu_layers = 0;
};

// The rates a hybrid plan is balanced with, measured with both paths busy at
// once (they share the host's DRAM): bytes per second the CPU tier computes
// through, and bytes per second the copy engine moves.
struct HybridRates {
  double cpu_bytes_per_s = 0;
  double copy_bytes_per_s = 0;
  // The GPU's own part of a step at batch 1 (0: not measured, left out):
  // bytes per second it computes a layer through, and the seconds of the
  // rest of a step (output head, embedding, synchronisation).
  double gpu_bytes_per_s = 0;
  double gpu_step_s = 0;
  // The fastest and slowest of the CPU's timed reps of its largest layer
  // (0: not measured): how far the calibration can be trusted.
  double cpu_rep_min_s = 0, cpu_rep_max_s = 0;
  // The CPU's time for that layer at 8 tokens over its time at one (0: not
  // measured): the width routing's start for the widths it has not stepped
  // yet (WidthRouting::Options::cpu_ratio_8).
  double cpu_ratio_8 = 0;
};

struct TierPlan {
  using Line = PlanLine;
  std::vector<Tier> layer_tier;  // by layer
  std::vector<Line> vram, ram;   // reserves and layers, as placed
  uint64_t vram_budget = 0, ram_budget = 0, vram_used = 0, ram_used = 0;
  uint64_t slot_bytes = 0;     // one device slot: the largest streamed layer, packed
  uint64_t staging_bytes = 0;  // one staging buffer: the largest storage layer, aligned
  int32_t device_slots = 0, staging_buffers = 0;  // 0 when the plan needs none
  int32_t n_resident = 0, n_ram = 0, n_storage = 0, n_cpu = 0;
  uint64_t streamed_bytes_per_step = 0;  // RAM + storage layers: copied every step
  uint64_t storage_bytes_per_step = 0;   // storage layers: read every step
  uint64_t cpu_bytes_per_step = 0;       // CPU-tier layers: read by the CPU every step
  bool token_embd_on_device = true;      // false: in host memory, rows gathered per step
  // Hybrid plans chosen from measured rates (--cpu-layers auto): the
  // planner's own predicted seconds per decode step (0 when not predicted)
  // for the copy engine, and for the chain of computation one token goes
  // through: the GPU's layers and head (predicted_gpu_s) and the CPU tier's
  // layers (predicted_cpu_s), one after the other. The larger of the copy
  // and the chain bounds the step.
  double predicted_copy_s = 0, predicted_cpu_s = 0, predicted_gpu_s = 0;
  // Re-planned online (--cpu-layers auto): the layers in host memory (CPU and
  // RAM tiers) change sides between decode steps as the measurements say
  // (model/hybrid_balance.h); layer_tier is where they start. rates: those
  // measured at load, the balancer's prior.
  bool rebalance = false;
  HybridRates rates;
  // Why the plan has the CPU tier it has (printed with the plan).
  std::string hybrid_reason;
  std::string to_text() const;
};

// Place the layers. An error says what does not fit in which budget.
Expected<TierPlan> plan_tiers(const LayerMap& map, const PlanInputs& in);

// A decode step of a hybrid plan, predicted from the rates. At batch 1 a
// token goes through the layers in order, so the GPU's layers and the CPU's
// run one after the other (the chain); only the copies overlap them.
struct HybridStep {
  double copy_s = 0, cpu_s = 0, gpu_s = 0;
  double chain_s() const { return cpu_s + gpu_s; }
  double step_s() const { return copy_s > chain_s() ? copy_s : chain_s(); }
};
HybridStep predict_hybrid_step(const LayerMap& map, const TierPlan& plan, const HybridRates& r);

// The step cap widened into the device memory a streamed plan left over:
// less than a layer (else the plan would hold one more), which a wider step
// turns into fewer passes over the streamed layers for a long prompt (each
// step reads them once), at no cost to decoding. From `tokens` (the cap the
// plan's activations line is for) by whole 64-token units up to `most`,
// while the line's growth fits what the budget left; act_line(n) is the
// activations line for n tokens (its bytes; an error: not widened). The
// plan's line and vram_used follow; returns the new cap (`tokens` when it
// stays). Plans that stream nothing keep their cap: their steps cost no
// pass, and a wide prompt step beside decoding sequences delays their next
// token.
using ActivationsLine = std::function<Expected<PlanLine>(uint32_t tokens)>;
uint32_t widen_step_tokens(TierPlan& plan, uint32_t tokens, uint32_t most,
                           const ActivationsLine& act_line);

// How many of a draft plan's RAM-tier layers the CPU should compute so that
// the copy engine and the chain of computation finish a decode step
// together: the N that minimises max(copy, chain) of HybridStep, with the
// CPU layers spread as plan_tiers spreads them (every non-resident layer
// taken at their mean size). 0 when nothing is streamed.
int32_t balance_cpu_layers(const LayerMap& map, const TierPlan& draft, const HybridRates& r);

// A plan with the tiers given per layer (tests, --tiers): the budgets are
// ignored, slots and staging buffers are sized for the layers that need them.
TierPlan plan_forced(const LayerMap& map, const std::vector<Tier>& tiers, int32_t device_slots,
                     int32_t staging_buffers, uint32_t read_alignment);

// Bytes of a layer in a staging buffer: every range as an aligned over-read.
uint64_t staged_bytes(const LayerExtent& e, uint32_t alignment);

}  // namespace ls
