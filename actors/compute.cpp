#include "actors/compute.h"

namespace ls {

ComputeActor::ComputeActor(const Model& m, Backend& be, DeviceLink& link, const LayerMemory& mem,
                           CreditPool& slots, CreditPool& depth, Mailbox<StepInput>& steps,
                           Mailbox<LayerJob>& jobs, Mailbox<StepOutput>& to_sampler,
                           Mailbox<CpuWork>& to_cpu, Mailbox<CpuWork>& from_cpu, RunControl& rc,
                           Tracer& tracer, bool io_only)
    : m_(m),
      be_(be),
      link_(link),
      mem_(mem),
      slots_(slots),
      depth_(depth),
      steps_(steps),
      jobs_(jobs),
      to_sampler_(to_sampler),
      to_cpu_(to_cpu),
      from_cpu_(from_cpu),
      rc_(rc),
      tracer_(tracer),
      io_only_(io_only) {}

std::optional<LayerJob> ComputeActor::next_job(int64_t step, int32_t layer, int track) {
  const auto key = std::make_pair(step, layer);
  if (auto it = early_.find(key); it != early_.end()) {
    LayerJob j = it->second;
    early_.erase(it);
    return j;
  }
  TraceScope wait(tracer_, track, "wait layer", SpanKind::Starved, layer, step);
  for (;;) {
    std::optional<LayerJob> j = jobs_.pop(rc_);
    if (!j) return std::nullopt;
    if (j->step == step && j->layer == layer) return j;
    early_[{j->step, j->layer}] = *j;
  }
}

// The hidden state to the CPU compute actor and back.
Status ComputeActor::cpu_layer(int64_t step, int32_t layer, const Batch& b, int track) {
  hidden_.resize(b.size() * m_.config().n_embd);
  {
    TraceScope span(tracer_, track, "to cpu", SpanKind::Busy, layer, step);
    LS_TRY(be_.export_hidden(hidden_.data()));
  }
  if (!to_cpu_.push(CpuWork{step, layer, &b, hidden_.data()}, rc_))
    return make_error("the run was stopped");
  std::optional<CpuWork> back;
  {
    TraceScope wait(tracer_, track, "wait cpu", SpanKind::Starved, layer, step);
    back = from_cpu_.pop(rc_);
  }
  if (!back) return make_error("the run was stopped");
  TraceScope span(tracer_, track, "from cpu", SpanKind::Busy, layer, step);
  return be_.import_hidden(b, hidden_.data());
}

void ComputeActor::run() {
  const int track = tracer_.register_track("compute");
  const LlamaConfig& c = m_.config();
  for (int64_t step = 0; !rc_.stopped(); ++step) {
    std::optional<StepInput> in;
    {
      TraceScope wait(tracer_, track, "wait batch", SpanKind::Starved, -1, step);
      in = steps_.pop(rc_);
    }
    if (!in || in->stop) return;
    const Batch& b = in->batch;
    if (!io_only_) {
      TraceScope span(tracer_, track, "embed", SpanKind::Busy, -1, step);
      if (Status st = be_.begin(b); !st.ok()) {
        rc_.fail("compute", -1, step, st.error().message);
        return;
      }
    }
    for (int32_t l = 0; l < static_cast<int32_t>(c.n_layer); ++l) {
      std::optional<LayerJob> job = next_job(step, l, track);
      if (!job) return;
      if (job->tier == Tier::Cpu) {
        if (!io_only_) {
          if (Status st = cpu_layer(step, l, b, track); !st.ok()) {
            rc_.fail("compute", l, step, st.error().message);
            return;
          }
        }
        depth_.release(0);
        rc_.pulse();
        continue;
      }
      const GpuSpan gs{l, step, m_.map.layers[l].range_bytes, job->slot};
      {
        TraceScope span(tracer_, track, "layer", SpanKind::Busy, l, step,
                        m_.map.layers[l].range_bytes, job->slot, trace_flow_id(step, l),
                        job->tier == Tier::Resident ? kFlowNone : kFlowEnd);
        rc_.chaos();
        Status st = link_.before_layer(job->slot, gs);
        if (st.ok() && !io_only_) {
          // Resident: the backend's own copy when it keeps one (device
          // memory on CUDA), else the mapped file.
          const LayerView v = job->tier == Tier::Resident
                                  ? be_.resident_layer(l).value_or(m_.layer(l))
                                  : packed_layer_view(m_.info.weights.layers[l], m_.map.layers[l],
                                                      mem_.layout(l), mem_.slot(job->slot));
          st = be_.layer(static_cast<uint32_t>(l), v);
        }
        // The slot goes back once the device is done with the layer.
        if (st.ok()) st = link_.after_layer({job->slot >= 0 ? &slots_ : nullptr, job->slot}, gs);
        if (!st.ok()) {
          rc_.fail("compute", l, step, st.error().message);
          return;
        }
      }
      depth_.release(0);
      rc_.pulse();
    }
    StepOutput out;
    out.step = step;
    out.n_rows = static_cast<int32_t>(b.n_logits());
    logits_.resize(static_cast<size_t>(out.n_rows) * c.n_vocab);
    if (!io_only_) {
      TraceScope span(tracer_, track, "head", SpanKind::Busy, -1, step);
      if (Status st = be_.finish(logits_.data()); !st.ok()) {
        rc_.fail("compute", -1, step, st.error().message);
        return;
      }
    }
    out.logits = logits_.data();
    if (!to_sampler_.push(out, rc_)) return;
  }
}

}  // namespace ls
