#include "actors/planner.h"

#include <chrono>
#include <thread>

namespace ls {

Planner::Planner(const TierPlan& plan, CreditPool& depth, Mailbox<LayerJob>& to_reader,
                 Mailbox<LayerJob>& to_compute, const StepWidths* widths, const HybridRoute* route,
                 RunControl& rc, Tracer& tracer)
    : plan_(plan),
      depth_(depth),
      to_reader_(to_reader),
      to_compute_(to_compute),
      widths_(widths),
      route_(route),
      rc_(rc),
      tracer_(tracer) {}

void Planner::run() {
  const int track = tracer_.register_track("planner");
  const int32_t n_layer = static_cast<int32_t>(plan_.layer_tier.size());
  for (int64_t step = 0; !rc_.stopped(); ++step) {
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
      if (route_ && (job.tier == Tier::Cpu || job.tier == Tier::Ram))
        job.tier = route_->on_cpu[layer].load(std::memory_order_relaxed) ? Tier::Cpu : Tier::Ram;
      if (job.tier == Tier::Cpu && widths_) {
        TraceScope wait(tracer_, track, "wait width", SpanKind::Blocked, layer, step);
        while (widths_->fed_step.load() < step) {
          if (rc_.stopped()) return;
          std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
        if (widths_->wide_step.load() == step)
          job.tier = Tier::Ram;  // prefill through PCIe; compute keeps the layer's cache in step
      }
      // Streamed layers (RAM and storage) all go through the reader, which
      // keeps them in order; resident and CPU-tier ones go straight to compute.
      const bool streamed = job.tier == Tier::Ram || job.tier == Tier::Storage;
      TraceScope span(tracer_, track, "plan", SpanKind::Busy, layer, step, 0, -1,
                      trace_flow_id(step, layer), streamed ? kFlowStart : kFlowNone);
      Mailbox<LayerJob>& out = streamed ? to_reader_ : to_compute_;
      if (!out.push(job, rc_)) return;
    }
  }
}

}  // namespace ls
