#include "actors/copier.h"

namespace ls {

Copier::Copier(const LayerMap& map, const LayerMemory& mem, DeviceLink& link, CreditPool& staging,
               CreditPool& slots, Mailbox<LayerJob>& in, Mailbox<LayerJob>& to_compute,
               RunControl& rc, Tracer& tracer)
    : map_(map),
      mem_(mem),
      link_(link),
      staging_(staging),
      slots_(slots),
      in_(in),
      to_compute_(to_compute),
      rc_(rc),
      tracer_(tracer) {}

void Copier::run() {
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
    if (lay.packed_bytes > mem_.slot_bytes()) {  // a planning bug; never write past a slot
      rc_.fail("copier", job->layer, job->step,
               "layer of " + std::to_string(lay.packed_bytes) + " bytes does not fit a slot of " +
                   std::to_string(mem_.slot_bytes()));
      return;
    }
    const uint64_t flow = trace_flow_id(job->step, job->layer);
    {
      // The planner started the flow; on CUDA this span is the issue, the
      // gpu-copy track holds the copy itself.
      TraceScope span(tracer_, track, "copy", SpanKind::Busy, job->layer, job->step, e.range_bytes,
                      *slot, flow, kFlowStep);
      rc_.chaos();
      pieces_.clear();
      Release src_free;
      if (job->tier == Tier::Ram) {
        pieces_.push_back({0, mem_.ram_layer(job->layer), lay.packed_bytes});
      } else {
        const uint8_t* src = mem_.staging(job->staging);
        for (size_t k = 0; k < e.ranges.size(); ++k)
          pieces_.push_back({lay.packed[k], src + lay.staged[k] + lay.lead[k], e.ranges[k].bytes});
        src_free = {&staging_, job->staging};
        job->staging = -1;
      }
      const GpuSpan gs{job->layer, job->step, e.range_bytes, *slot};
      if (Status st = link_.copy_to_slot(mem_.slot(*slot), *slot, pieces_, src_free, gs);
          !st.ok()) {
        rc_.fail("copier", job->layer, job->step, st.error().message);
        return;
      }
    }
    rc_.pulse();
    if (!to_compute_.push(*job, rc_)) return;
  }
}

}  // namespace ls
