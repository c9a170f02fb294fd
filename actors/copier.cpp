#include "actors/copier.h"

#include <cstring>

namespace ls {

HostCopier::HostCopier(const LayerMap& map, const LayerMemory& mem, CreditPool& staging,
                       CreditPool& slots, Mailbox<LayerJob>& in, Mailbox<LayerJob>& to_compute,
                       RunControl& rc, Tracer& tracer)
    : map_(map),
      mem_(mem),
      staging_(staging),
      slots_(slots),
      in_(in),
      to_compute_(to_compute),
      rc_(rc),
      tracer_(tracer) {}

void HostCopier::run() {
  const int track = tracer_.register_track("copier");
  while (!rc_.stopped()) {
    std::optional<LayerJob> job;
    {
      TraceScope wait(tracer_, track, "wait layer", SpanKind::Starved, -1, -1);
      job = in_.pop(rc_);
    }
    if (!job) return;
    std::optional<int32_t> slot;
    {
      TraceScope wait(tracer_, track, "wait slot", SpanKind::Blocked, job->layer, job->step);
      slot = slots_.acquire(rc_);
    }
    if (!slot) return;
    job->slot = *slot;
    const LayerExtent& e = map_.layers[job->layer];
    const LayerLayout& lay = mem_.layout(job->layer);
    {
      TraceScope span(tracer_, track, "copy", SpanKind::Busy, job->layer, job->step,
                      e.range_bytes, *slot, trace_flow_id(job->step, job->layer),
                      kFlowStep);  // the planner started the flow
      rc_.chaos();
      uint8_t* dst = mem_.slot(*slot);
      if (job->tier == Tier::Ram) {
        std::memcpy(dst, mem_.ram_layer(job->layer), lay.packed_bytes);
      } else {
        const uint8_t* src = mem_.staging(job->staging);
        for (size_t k = 0; k < e.ranges.size(); ++k)
          std::memcpy(dst + lay.packed[k], src + lay.staged[k] + lay.lead[k], e.ranges[k].bytes);
        staging_.release(job->staging);
        job->staging = -1;
      }
    }
    rc_.pulse();
    if (!to_compute_.push(*job, rc_)) return;
  }
}

}  // namespace ls
