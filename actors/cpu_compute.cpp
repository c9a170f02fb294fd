#include "actors/cpu_compute.h"

namespace ls {

CpuComputeActor::CpuComputeActor(const Model& m, Backend& cpu, const LayerMemory& mem,
                                 Mailbox<CpuWork>& in, Mailbox<CpuWork>& out, RunControl& rc,
                                 Tracer& tracer)
    : m_(m), cpu_(cpu), mem_(mem), in_(in), out_(out), rc_(rc), tracer_(tracer) {}

void CpuComputeActor::run() {
  const int track = tracer_.register_track("cpu-compute");
  while (!rc_.stopped()) {
    std::optional<CpuWork> w;
    {
      TraceScope wait(tracer_, track, "wait hidden", SpanKind::Starved, -1, -1);
      w = in_.pop(rc_);
    }
    if (!w) return;
    const int32_t l = w->layer;
    if (w->kv_out) {  // compute asks for cached rows (a CPU-tier layer about to run on the GPU)
      TraceScope span(tracer_, track, "kv out", SpanKind::Busy, l, w->step);
      spans_.clear();
      for (int32_t i = 0; i < w->n_kv_out; ++i) {
        KvRows& r = w->kv_out[i];
        spans_.push_back({r.seq, r.p0, r.p1, r.k.data(), r.v.data()});
      }
      if (Status st = cpu_.read_kv_spans(static_cast<uint32_t>(l), spans_.data(), spans_.size());
          !st.ok()) {
        rc_.fail("cpu-compute", l, w->step, st.error().message);
        return;
      }
      if (!out_.push(*w, rc_)) return;
      continue;
    }
    {
      TraceScope span(tracer_, track, "cpu layer", SpanKind::Busy, l, w->step,
                      m_.map.layers[l].range_bytes);
      const HostWorkScope computing(rc_, true);  // movement for the watchdog
      rc_.chaos();
      const LayerView v = packed_layer_view(m_.info.weights.layers[l], m_.map.layers[l],
                                            mem_.layout(l), mem_.ram_layer(l));
      // The batch first: it brings the step's key/value block table, which
      // the rows below are written through.
      Status st = cpu_.import_hidden(*w->batch, w->hidden);
      if (st.ok() && w->n_kv_in > 0) {  // rows the GPU wrote in a wide step
        spans_.clear();
        for (int32_t i = 0; i < w->n_kv_in; ++i) {
          const KvRows& r = w->kv_in[i];
          spans_.push_back(
              {r.seq, r.p0, r.p1, const_cast<float*>(r.k.data()), const_cast<float*>(r.v.data())});
        }
        st = cpu_.write_kv_spans(static_cast<uint32_t>(l), spans_.data(), spans_.size());
      }
      if (st.ok()) st = cpu_.layer(static_cast<uint32_t>(l), v);
      if (st.ok()) st = cpu_.export_hidden(w->hidden);
      if (!st.ok()) {
        rc_.fail("cpu-compute", l, w->step, st.error().message);
        return;
      }
    }
    if (!out_.push(*w, rc_)) return;
  }
}

}  // namespace ls
