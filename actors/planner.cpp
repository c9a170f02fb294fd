#include "actors/planner.h"

#include <chrono>
#include <thread>

namespace ls {

Planner::Planner(const TierPlan& plan, CreditPool& depth, Mailbox<LayerJob>& to_reader,
                 Mailbox<LayerJob>& to_compute, const StepWidths* widths, const HybridRoute* route,
                 RunControl& rc, Tracer& tracer, uint32_t group)
    : plan_(plan),
      depth_(depth),
      to_reader_(to_reader),
      to_compute_(to_compute),
      widths_(widths),
      route_(route),
      rc_(rc),
      tracer_(tracer),
      group_(group < 1 ? 1 : group) {}

void Planner::run() {
  const int track = tracer_.register_track("planner");
  const int32_t n_layer = static_cast<int32_t>(plan_.layer_tier.size());
  const bool online = route_ && plan_.rebalance;
  auto on_cpu = [&](int32_t l) {
    return online ? route_->on_cpu[l].load(std::memory_order_relaxed) != 0
                  : plan_.layer_tier[l] == Tier::Cpu;
  };
  for (int64_t step = 0; !rc_.stopped(); ++step) {
    int32_t n_set = -1, i_set = 0, keep = 0;  // this step's CPU layers, which one, how many stay
    int bucket = 0;                           // this step's width bucket
    for (int32_t layer = 0; layer < n_layer; ++layer) {
      {
        TraceScope wait(tracer_, track, "wait depth", SpanKind::Blocked, layer, step);
        if (!depth_.acquire(rc_)) return;
      }
      rc_.chaos();
      LayerJob job;
      job.step = step;
      job.layer = layer;
      job.tier = plan_.layer_tier[layer];
      if (online && (job.tier == Tier::Cpu || job.tier == Tier::Ram))
        job.tier = on_cpu(layer) ? Tier::Cpu : Tier::Ram;
      // A run of resident layers (the plan's: the online re-planner moves
      // only host-memory layers) as one job.
      while (job.tier == Tier::Resident && static_cast<uint32_t>(job.count) < group_ &&
             layer + 1 < n_layer && plan_.layer_tier[layer + 1] == Tier::Resident) {
        ++job.count;
        ++layer;
      }
      if (job.tier == Tier::Cpu && widths_ && route_) {
        if (n_set < 0) {
          TraceScope wait(tracer_, track, "wait width", SpanKind::Blocked, layer, step);
          int64_t w = -1;
          while (widths_->fed_step.load() < step) {
            if (rc_.stopped()) return;
            // A bound announced for this step: route by it now (the batch
            // keeps to it), so the copies start while the step is drafted.
            if (widths_->bound_step.load() == step) {
              w = widths_->bound[step % StepWidths::kRing].load();
              widths_->routed_by_bound.fetch_add(1);
              break;
            }
            std::this_thread::sleep_for(std::chrono::microseconds(20));
          }
          if (w < 0) w = widths_->width[step % StepWidths::kRing].load();
          bucket = WidthRouting::bucket(w);
          keep = route_->keep[bucket].load(std::memory_order_relaxed);
          n_set = 0;
          for (int32_t l = 0; l < n_layer; ++l) n_set += on_cpu(l) ? 1 : 0;
        }
        // Through PCIe for this step; compute keeps the layer's cache in step.
        if (!route_->keeps(bucket, layer, i_set++, n_set, keep)) job.tier = Tier::Ram;
      }
      // Streamed layers (RAM and storage) all go through the reader, which
      // keeps them in order; resident and CPU-tier ones go straight to compute.
      const bool streamed = job.tier == Tier::Ram || job.tier == Tier::Storage;
      TraceScope span(tracer_, track, "plan", SpanKind::Busy, job.layer, step, 0, -1,
                      trace_flow_id(step, job.layer), streamed ? kFlowStart : kFlowNone);
      Mailbox<LayerJob>& out = streamed ? to_reader_ : to_compute_;
      if (!out.push(job, rc_)) return;
    }
  }
}

}  // namespace ls
