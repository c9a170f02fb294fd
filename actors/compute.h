// The compute actor: owns the backend. For each step it takes the batch
// (from the request or the sampler), then runs layers 0..L-1 in order as
// their jobs arrive — resident ones straight from the planner, streamed ones
// from the copier, so they may arrive out of order and wait in a small
// reorder buffer — hands each slot back when the layer is done, returns the
// planner's depth credit, and sends the logits to the sampler. A CPU-tier
// layer (hybrid plans) goes to the CPU compute actor with the hidden state,
// which comes back before the next layer starts. A streamed
// layer's slot goes back through the DeviceLink once the device has finished
// the layer (on CUDA: from the link's watcher thread, after the layer's done
// event; this thread never waits for the GPU inside a step). In I/O-only
// mode it skips the kernels, so the pipeline's own ceiling can be measured.
//
// A CPU-tier layer may also arrive as a streamed job (the planner sends
// some or all of them through PCIe for a wide step: StepWidths, HybridRoute::keep). Its key/value
// cache then lives on both sides: for each such layer compute tracks up to which position each
// backend's rows are current, and before a layer runs on one side it brings over the rows only the
// other side has (Backend::read_kv / write_kv; the CPU side's through the cpu-compute actor, which
// owns that backend), per sequence slot: a step's entries of one sequence are contiguous and at
// consecutive positions, as the sampler forms them.
//
// A hybrid plan re-planned online (a balancer): every layer in host memory
// may run on either side, so each keeps that bookkeeping. After each clean
// decode step (one token, no key/value rows moved) compute gives the
// balancer what the step measured — its wall time, the CPU tier's own time,
// the GPU's compute and copy engine's busy times from the stall counters
// (CUDA events) — and applies the move it returns to the route the planner
// reads (a "re-plan" span on this track marks it).
//
// Routing by width (a WidthRouting): after every step compute gives it the
// step's width and per-layer times, and publishes how many CPU layers each
// width bucket keeps on the CPU (HybridRoute::keep) for the planner.
// defines: ComputeActor
#pragma once

#include <array>
#include <chrono>
#include <vector>

#include "actors/layer_memory.h"
#include "actors/messages.h"
#include "model/device_link.h"
#include "model/hybrid_balance.h"
#include "model/tier_plan.h"
#include "model/model.h"
#include "runtime/credit_pool.h"
#include "runtime/trace.h"

namespace ls {

class ComputeActor {
 public:
  ComputeActor(const Model& m, Backend& be, DeviceLink& link, const LayerMemory& mem,
               CreditPool& slots, CreditPool& depth, Mailbox<StepInput>& steps,
               Mailbox<LayerJob>& jobs, Mailbox<StepOutput>& to_sampler, Mailbox<CpuWork>& to_cpu,
               Mailbox<CpuWork>& from_cpu, const TierPlan& plan, StepWidths& widths,
               HybridRoute* route, HybridBalancer* balancer, WidthRouting* routing, RunControl& rc,
               Tracer& tracer, bool io_only, uint32_t n_seq);
  void run();  // the actor's thread

 private:
  std::optional<LayerJob> next_job(int64_t step, int32_t layer, int track);

  const Model& m_;
  Backend& be_;
  DeviceLink& link_;
  const LayerMemory& mem_;
  CreditPool& slots_;
  CreditPool& depth_;
  Mailbox<StepInput>& steps_;
  Mailbox<LayerJob>& jobs_;
  Mailbox<StepOutput>& to_sampler_;
  Mailbox<CpuWork>& to_cpu_;
  Mailbox<CpuWork>& from_cpu_;
  RunControl& rc_;
  Tracer& tracer_;
  bool io_only_;
  // Jobs that arrived before their turn (resident and CPU-tier ones pass the
  // streamed ones): at most the depth credits' count, so a vector reserved
  // once and searched; nothing allocated per job.
  std::vector<LayerJob> early_;
  std::vector<float> logits_;
  std::vector<int32_t> ids_;   // an argmax_only step's tokens
  std::vector<float> hidden_;  // the state a CPU-tier layer works on (size() x n_embd)
  StepWidths& widths_;
  // CPU-tier layers' caches: positions [0, end) of a slot are current on
  // that side, by layer * n_seq_ + slot.
  std::vector<uint8_t> cpu_home_;  // by layer: the plan puts it on the CPU tier
  std::vector<uint32_t> gpu_kv_end_, cpu_kv_end_;
  uint32_t n_seq_ = 1;
  struct SeqSpan {  // one sequence's entries in the step: positions [p0, p1)
    int32_t seq;
    uint32_t p0, p1;
  };
  std::vector<SeqSpan> spans_;                // the step's, in batch order
  std::vector<KvRows> kv_out_;                // rows on their way to the GPU, a set per sequence
  std::vector<KvRows> kv_in_;                 // rows on their way to the CPU, a set per sequence
  std::vector<Backend::KvRowSpan> kv_spans_;  // kv_in_'s or kv_out_'s, for the backend's calls

  // Online re-planning (balancer: null when the plan is fixed) and routing
  // by width (null: HybridRoute::keep stays as the pipeline set it).
  HybridRoute* route_;
  HybridBalancer* balancer_;
  WidthRouting* routing_;
  std::vector<Tier> plan_tier_;                    // by layer, the plan's
  std::vector<WidthRouting::Kind> layout_;         // routing_'s view of the step
  std::vector<WidthRouting::Kind> placed_layout_;  // the layout the placements were made for
  std::array<WidthRouting::Placement, WidthRouting::kBuckets> placed_;  // in use, per bucket
  struct StepClock {                              // what the current step measured so far
    std::chrono::steady_clock::time_point start;  // its batch arrived
    double cpu_s = 0;                             // the CPU tier's own time
    int32_t n_cpu = 0, n_copied = 0;
    bool kv_moved = false;
    int32_t kv_layers = 0;  // layers whose rows moved between the caches
  } meter_;
  bool copy_seen_ = false;     // copy_busy_ns_ has been read once
  uint64_t copy_busy_ns_ = 0;  // the copy track's busy counter at the last step's end
  uint64_t gpu_busy_ns_ = 0;   // the gpu-compute track's
  void rebalance(int64_t step, const Batch& b, int track);
  void route_by_width(const BalanceSample& s, const Batch& b);

  bool run_layers(int64_t step, const Batch& b, int track);
  Status cpu_layer(int64_t step, int32_t layer, const Batch& b, int track);
  // A job of several resident layers (LayerJob::count) in one backend call.
  Status resident_run(int64_t step, const LayerJob& job, int track);
  std::vector<LayerView> group_;  // the run's views
  Status check_positions(const Batch& b);
  // Before/after a CPU-tier layer runs on the main backend (a wide step).
  Status kv_to_gpu(int64_t step, int32_t layer, int track);
  Expected<size_t> rows_lacking(int32_t l, const std::vector<uint32_t>& have,
                                const std::vector<uint32_t>& other, std::vector<KvRows>& out) const;
  void spans_of(std::vector<KvRows>& rows, size_t n);  // kv_spans_ from rows[0, n)
  void ran_on_gpu(int32_t layer);
  // The step's head as a span of the gpu-compute track (the GPU's work
  // after the layers, so that its busy time counts all it does), closed by
  // Backend::set_on_issued's hook once the head is issued, before finish
  // waits for it. (Not the embedding: its span would time the host's
  // enqueueing of a few small copies, the GPU idle meanwhile.)
  GpuSpan head_span_;
  bool head_open_ = false;
  Status close_head();
};

}  // namespace ls
