#include "actors/compute.h"

#include <algorithm>

#include "runtime/env.h"

namespace ls {

ComputeActor::ComputeActor(const Model& m, Backend& be, DeviceLink& link, const LayerMemory& mem,
                           CreditPool& slots, CreditPool& depth, Mailbox<StepInput>& steps,
                           Mailbox<LayerJob>& jobs, Mailbox<StepOutput>& to_sampler,
                           Mailbox<CpuWork>& to_cpu, Mailbox<CpuWork>& from_cpu,
                           const TierPlan& plan, StepWidths& widths, HybridRoute* route,
                           HybridBalancer* balancer, WidthRouting* routing, RunControl& rc,
                           Tracer& tracer, bool io_only, uint32_t n_seq)
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
      io_only_(io_only),
      widths_(widths),
      n_seq_(std::max<uint32_t>(1, n_seq)),
      route_(route),
      balancer_(route ? balancer : nullptr),
      routing_(route ? routing : nullptr) {
  const size_t n = plan.layer_tier.size();
  plan_tier_ = plan.layer_tier;
  cpu_home_.resize(n);
  // With a balancer, every layer in host memory may change sides.
  for (size_t l = 0; l < n; ++l)
    cpu_home_[l] =
        plan.layer_tier[l] == Tier::Cpu || (balancer_ && plan.layer_tier[l] == Tier::Ram);
  gpu_kv_end_.assign(n * n_seq_, 0);
  cpu_kv_end_.assign(n * n_seq_, 0);
  early_.reserve(static_cast<size_t>(depth.size()));
}

// The cache bookkeeping below assumes what the sampler sends: each
// sequence's entries contiguous, at consecutive positions.
Status ComputeActor::check_positions(const Batch& b) {
  spans_.clear();
  for (size_t i = 0; i < b.size(); ++i) {
    const uint32_t pos = static_cast<uint32_t>(b.pos[i]);
    if (b.seq[i] < 0 || static_cast<uint32_t>(b.seq[i]) >= n_seq_)
      return make_error("entry %zu is sequence %d, outside the %u slots", i, b.seq[i], n_seq_);
    if (!spans_.empty() && spans_.back().seq == b.seq[i]) {
      if (pos != spans_.back().p1)
        return make_error(
            "a plan with CPU-tier layers runs each sequence at consecutive positions (entry %zu "
            "is sequence %d, position %u, after %u)",
            i, b.seq[i], pos, spans_.back().p1 - 1);
      ++spans_.back().p1;
      continue;
    }
    for (const SeqSpan& sp : spans_)
      if (sp.seq == b.seq[i])
        return make_error(
            "a plan with CPU-tier layers needs each sequence's entries together (entry %zu, "
            "sequence %d)",
            i, b.seq[i]);
    spans_.push_back({b.seq[i], pos, pos + 1});
  }
  return ok();
}

// The rows of layer l that one side's cache lacks (have: its ends, by layer
// and slot) and the other's holds, a set per sequence of the step, into
// out[0, n); an error where neither holds them.
Expected<size_t> ComputeActor::rows_lacking(int32_t l, const std::vector<uint32_t>& have,
                                            const std::vector<uint32_t>& other,
                                            std::vector<KvRows>& out) const {
  size_t n = 0;
  for (const SeqSpan& sp : spans_) {
    const size_t at = static_cast<size_t>(l) * n_seq_ + static_cast<size_t>(sp.seq);
    if (have[at] >= sp.p0) continue;
    if (other[at] < sp.p0)
      return make_error("layer %d, sequence %d: positions %u..%u are cached on neither backend", l,
                        sp.seq, have[at], sp.p0);
    if (out.size() <= n) out.resize(n + 1);
    KvRows& r = out[n++];
    r.layer = static_cast<uint32_t>(l);
    r.seq = sp.seq;
    r.p0 = have[at];
    r.p1 = sp.p0;
    const size_t e = size_t{sp.p0 - r.p0} * m_.config().n_embd_kv();
    r.k.resize(std::max(r.k.size(), e));
    r.v.resize(std::max(r.v.size(), e));
  }
  return n;
}

void ComputeActor::spans_of(std::vector<KvRows>& rows, size_t n) {
  kv_spans_.clear();
  for (size_t i = 0; i < n; ++i)
    kv_spans_.push_back({rows[i].seq, rows[i].p0, rows[i].p1, rows[i].k.data(), rows[i].v.data()});
}

// The rows [gpu end, p0) of a CPU-tier layer that only the CPU has, before
// the GPU runs the layer for positions p0..: every sequence's in one request
// to the cpu-compute actor and one write (Backend::write_kv_spans: the CUDA
// backend waits for the device once; a sequence at a time, 32 round trips
// and waits took 14.6 ms a layer at width 32 on the 70b, session 45).
Status ComputeActor::kv_to_gpu(int64_t step, int32_t l, int track) {
  auto lacking = rows_lacking(l, gpu_kv_end_, cpu_kv_end_, kv_out_);
  if (!lacking) return lacking.error();
  const size_t n_out = *lacking;
  if (n_out == 0) return ok();
  TraceScope span(tracer_, track, "kv from cpu", SpanKind::Busy, l, step);
  meter_.kv_moved = true;
  ++meter_.kv_layers;  // a layer, as the other direction counts
  CpuWork w{step, l, nullptr, nullptr};
  w.kv_out = kv_out_.data();
  w.n_kv_out = static_cast<int32_t>(n_out);
  if (!to_cpu_.push(w, rc_)) return make_error("the run was stopped");
  std::optional<CpuWork> back = from_cpu_.pop(rc_);
  if (!back) return make_error("the run was stopped");
  spans_of(kv_out_, n_out);
  LS_TRY(be_.write_kv_spans(static_cast<uint32_t>(l), kv_spans_.data(), n_out));
  for (size_t i = 0; i < n_out; ++i) {
    const size_t at = static_cast<size_t>(l) * n_seq_ + static_cast<size_t>(kv_out_[i].seq);
    gpu_kv_end_[at] = kv_out_[i].p1;
  }
  return ok();
}

void ComputeActor::ran_on_gpu(int32_t l) {
  for (const SeqSpan& sp : spans_) {
    const size_t at = static_cast<size_t>(l) * n_seq_ + static_cast<size_t>(sp.seq);
    gpu_kv_end_[at] = sp.p1;
    cpu_kv_end_[at] = std::min(cpu_kv_end_[at], sp.p0);
  }
}

std::optional<LayerJob> ComputeActor::next_job(int64_t step, int32_t layer, int track) {
  for (size_t i = 0; i < early_.size(); ++i) {
    if (early_[i].step == step && early_[i].layer == layer) {
      const LayerJob j = early_[i];
      early_[i] = early_.back();
      early_.pop_back();
      return j;
    }
  }
  TraceScope wait(tracer_, track, "wait layer", SpanKind::Starved, layer, step);
  for (;;) {
    std::optional<LayerJob> j = jobs_.pop(rc_);
    if (!j) return std::nullopt;
    if (j->step == step && j->layer == layer) return j;
    early_.push_back(*j);
  }
}

// The hidden state to the CPU compute actor and back.
Status ComputeActor::cpu_layer(int64_t step, int32_t layer, const Batch& b, int track) {
  hidden_.resize(b.size() * m_.config().n_embd);
  {
    TraceScope span(tracer_, track, "to cpu", SpanKind::Busy, layer, step);
    LS_TRY(be_.export_hidden(hidden_.data()));
  }
  CpuWork w{step, layer, &b, hidden_.data()};
  // The rows the GPU wrote in a wide step, which the CPU has not seen.
  auto lacking = rows_lacking(layer, cpu_kv_end_, gpu_kv_end_, kv_in_);
  if (!lacking) return lacking.error();
  const size_t n_in = *lacking;
  if (n_in > 0) {
    meter_.kv_moved = true;
    ++meter_.kv_layers;
  }
  // All of the layer's sequences in one call (the device waited for once).
  if (n_in > 0) {
    TraceScope span(tracer_, track, "kv to cpu", SpanKind::Busy, layer, step);
    spans_of(kv_in_, n_in);
    LS_TRY(be_.read_kv_spans(static_cast<uint32_t>(layer), kv_spans_.data(), n_in));
  }
  w.kv_in = n_in ? kv_in_.data() : nullptr;
  w.n_kv_in = static_cast<int32_t>(n_in);
  // The CPU layer's time on the chain, for the balancer and the width
  // routing: from the hand-over to the hidden state back on the GPU. Not
  // the export above, which waits for the GPU stream (its layers, and the
  // copies they wait for). The import is in it: nothing on the chain moves
  // until it is done, and it is not free (at width 8 on the 70b, a copy
  // that queued 6-9 ms behind a streamed layer's, session 33's trace).
  const auto t_cpu = std::chrono::steady_clock::now();
  if (!to_cpu_.push(w, rc_)) return make_error("the run was stopped");
  std::optional<CpuWork> back;
  {
    TraceScope wait(tracer_, track, "wait cpu", SpanKind::Starved, layer, step);
    back = from_cpu_.pop(rc_);
  }
  if (!back) return make_error("the run was stopped");
  for (const SeqSpan& sp : spans_) {
    const size_t at = static_cast<size_t>(layer) * n_seq_ + static_cast<size_t>(sp.seq);
    cpu_kv_end_[at] = sp.p1;
    gpu_kv_end_[at] = std::min(gpu_kv_end_[at], sp.p0);
  }
  Status st;
  {
    TraceScope span(tracer_, track, "from cpu", SpanKind::Busy, layer, step);
    st = be_.import_hidden(b, hidden_.data());
  }
  meter_.cpu_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t_cpu).count();
  return st;
}

// A run of resident layers (the planner's job for layers l .. l + count - 1)
// in one backend call (Backend::layers): one span on the trace ("layers", at
// the run's first layer, with all their bytes) and one depth credit back.
Status ComputeActor::resident_run(int64_t step, const LayerJob& job, int track) {
  const int32_t l = job.layer;
  group_.clear();
  uint64_t bytes = 0;
  for (int32_t k = 0; k < job.count; ++k) {
    group_.push_back(be_.resident_layer(l + k).value_or(m_.layer(l + k)));
    bytes += m_.map.layers[l + k].range_bytes;
  }
  const GpuSpan gs{l, step, bytes, -1, "layers"};
  {
    TraceScope span(tracer_, track, "layers", SpanKind::Busy, l, step, bytes, -1,
                    trace_flow_id(step, l), kFlowNone);
    rc_.chaos();
    LS_TRY(link_.before_layer(-1, gs));
    if (!io_only_)
      LS_TRY(be_.layers(static_cast<uint32_t>(l), group_.data(), static_cast<uint32_t>(job.count)));
    LS_TRY(link_.after_layer({nullptr, -1}, gs));
  }
  depth_.release(0);
  rc_.pulse();
  return ok();
}

// The layers of one step in order, as their jobs arrive; false when the run
// stops or fails (rc_ told).
bool ComputeActor::run_layers(int64_t step, const Batch& b, int track) {
  const int32_t n_layer = static_cast<int32_t>(m_.config().n_layer);
  for (int32_t l = 0; l < n_layer; ++l) {
    std::optional<LayerJob> job = next_job(step, l, track);
    if (!job) return false;
    if (job->tier == Tier::Ram || job->tier == Tier::Storage) ++meter_.n_copied;
    if (job->tier == Tier::Cpu) {
      if (!io_only_) {
        if (Status st = cpu_layer(step, l, b, track); !st.ok()) {
          rc_.fail("compute", l, step, st.error().message);
          return false;
        }
        ++meter_.n_cpu;
      }
      depth_.release(0);
      rc_.pulse();
      continue;
    }
    if (job->count > 1) {
      if (Status st = resident_run(step, *job, track); !st.ok()) {
        rc_.fail("compute", l, step, st.error().message);
        return false;
      }
      l += job->count - 1;
      continue;
    }
    const GpuSpan gs{l, step, m_.map.layers[l].range_bytes, job->slot};
    {
      TraceScope span(tracer_, track, "layer", SpanKind::Busy, l, step,
                      m_.map.layers[l].range_bytes, job->slot, trace_flow_id(step, l),
                      job->tier == Tier::Resident ? kFlowNone : kFlowEnd);
      rc_.chaos();
      Status st = link_.before_layer(job->slot, gs);
      const bool cpu_home = cpu_home_[l] && !io_only_;
      if (st.ok() && cpu_home) st = kv_to_gpu(step, l, track);
      if (st.ok() && !io_only_) {
        // Resident: the backend's own copy when it keeps one (device
        // memory on CUDA), else the mapped file.
        const LayerView v = job->tier == Tier::Resident
                                ? be_.resident_layer(l).value_or(m_.layer(l))
                                : packed_layer_view(m_.info.weights.layers[l], m_.map.layers[l],
                                                    mem_.layout(l), mem_.slot(job->slot));
        const HostWorkScope computing(rc_, be_.link() == nullptr);  // a host backend's layer
        st = be_.layer(static_cast<uint32_t>(l), v);
        if (st.ok() && cpu_home) ran_on_gpu(l);
      }
      // The slot goes back once the device is done with the layer.
      if (st.ok()) st = link_.after_layer({job->slot >= 0 ? &slots_ : nullptr, job->slot}, gs);
      if (!st.ok()) {
        rc_.fail("compute", l, step, st.error().message);
        return false;
      }
    }
    depth_.release(0);
    rc_.pulse();
  }
  return true;
}

// Chained steps (Backend::can_chain): a greedy step of one sequence has the
// next step's embedding and layers issued behind its head before the host
// waits for its token, so the GPU goes from one step to the next without
// waiting for the sampler's round trip (56 us a step on the H200 host of
// session 20, about 3 % of the 8b's step). Only where nothing of a step
// waits on the host, and where the GPU's compute is the step: every layer
// resident (a streamed layer's copy is the step there, and issuing the next
// step's layers would wait for slots behind this step's head, delaying its
// token by a step), no re-planning, no width routing.
void ComputeActor::run() {
  const int track = tracer_.register_track("compute");
  be_.set_on_issued([this] { return close_head(); });
  struct Unhook {  // the backend may outlive this actor
    Backend& be;
    ~Unhook() { be.set_on_issued({}); }
  } unhook{be_};
  const LlamaConfig& c = m_.config();
  const bool has_cpu_tier = std::find(cpu_home_.begin(), cpu_home_.end(), 1) != cpu_home_.end();
  const bool all_resident = std::all_of(plan_tier_.begin(), plan_tier_.end(),
                                        [](Tier t) { return t == Tier::Resident; });
  const bool may_chain = !io_only_ && all_resident && !balancer_ && !routing_;
  int64_t chained = -1;  // the step begun behind the last head, its layers issued
  for (int64_t step = 0; !rc_.stopped(); ++step) {
    std::optional<StepInput> in;
    {
      TraceScope wait(tracer_, track, "wait batch", SpanKind::Starved, -1, step);
      // Between steps the sampler answers within microseconds: poll first
      // (Mailbox::pop_expecting).
      in = steps_.pop_expecting(rc_, std::chrono::nanoseconds(0));
    }
    if (!in || in->stop) return;
    const Batch& b = in->batch;
    // The step begun behind the last head is this batch, or it is dropped
    // and this batch is the step after it (its jobs were the chained one's).
    bool ran = false;
    if (chained == step) {
      ran = be_.adopt_chained(b);
      if (!ran) ++step;
    }
    chained = -1;
    meter_ = StepClock{};
    meter_.start = std::chrono::steady_clock::now();
    if (!ran) {
      if (!io_only_) {
        TraceScope span(tracer_, track, "embed", SpanKind::Busy, -1, step);
        Status st = has_cpu_tier ? check_positions(b) : ok();
        if (st.ok()) st = be_.begin(b);
        if (!st.ok()) {
          rc_.fail("compute", -1, step, st.error().message);
          return;
        }
      }
      if (!run_layers(step, b, track)) return;
    }
    StepOutput out;
    out.step = step;
    out.n_rows = static_cast<int32_t>(b.n_logits());
    out.n_vocab = static_cast<int32_t>(c.n_vocab);
    // Greedy steps take the argmax where the logits are (only ids cross);
    // an I/O-only run computes nothing, and its rows and ids are zeros.
    if (b.argmax_only) {
      ids_.assign(static_cast<size_t>(out.n_rows), 0);
      out.ids = ids_.data();
    } else {
      logits_.resize(static_cast<size_t>(out.n_rows) * c.n_vocab);
      out.logits = logits_.data();
    }
    if (!io_only_) {
      TraceScope span(tracer_, track, "head", SpanKind::Busy, -1, step);
      head_span_ = GpuSpan{-1, step, 0, -1, "head"};
      Status st = link_.before_layer(-1, head_span_);
      head_open_ = st.ok();
      if (st.ok() && b.argmax_only && may_chain && be_.can_chain()) {
        st = be_.finish_argmax_issue(out.n_rows, out.n_vocab);
        if (const Status closed = close_head(); st.ok()) st = closed;
        if (st.ok()) st = be_.begin_chained();
        if (st.ok()) {
          chained = step + 1;
          if (!run_layers(chained, b, track)) return;
          st = be_.finish_argmax_wait(ids_.data());
        }
      } else if (st.ok()) {
        st = b.argmax_only ? be_.finish_argmax(ids_.data(), out.n_rows, out.n_vocab)
                           : be_.finish(logits_.data());
      }
      // A backend that computes on this thread never calls the hook.
      if (const Status closed = close_head(); st.ok()) st = closed;
      if (!st.ok()) {
        rc_.fail("compute", -1, step, st.error().message);
        return;
      }
    }
    widths_.next_step.store(step + 1);  // before the client can see this step end
    if (!to_sampler_.push(out, rc_)) return;
    if ((balancer_ || routing_) && !io_only_) rebalance(step, b, track);
  }
}

Status ComputeActor::close_head() {
  if (!head_open_) return ok();
  head_open_ = false;
  return link_.after_layer({}, head_span_);
}

void ComputeActor::rebalance(int64_t step, const Batch& b, int track) {
  const auto now = std::chrono::steady_clock::now();
  // The copy engine's busy time: the GPU's own copy spans when the link
  // times them (CUDA events), else the copier's (a host link copies inline);
  // and the GPU's compute time (CUDA events; 0 on a host link, whose layers
  // run on this thread: they are in the step's time, as the chain).
  uint64_t copy_ns = 0, gpu_ns = 0;
  bool gpu_copy = false;
  for (const TrackStats& t : tracer_.track_stats()) {
    if (t.name == "gpu-copy") copy_ns = t.busy_ns, gpu_copy = true;
    if (t.name == "copier" && !gpu_copy) copy_ns = t.busy_ns;
    if (t.name == "gpu-compute") gpu_ns = t.busy_ns;
  }
  const bool first = !copy_seen_;
  copy_seen_ = true;
  BalanceSample s;
  s.step = step;
  // From the batch's arrival: a gap between requests (a chat's user typing)
  // is not part of any step.
  s.wall_s = std::chrono::duration<double>(now - meter_.start).count();
  s.cpu_s = meter_.cpu_s;
  s.gpu_s = static_cast<double>(gpu_ns - std::min(gpu_ns, gpu_busy_ns_)) * 1e-9;
  s.copy_s = static_cast<double>(copy_ns - std::min(copy_ns, copy_busy_ns_)) * 1e-9;
  gpu_busy_ns_ = gpu_ns;
  s.n_cpu = meter_.n_cpu;
  s.n_copied = meter_.n_copied;
  copy_busy_ns_ = copy_ns;
  if (routing_ && !first) route_by_width(s, b);
  if (!balancer_) return;
  // Only a decode step of the plan as it stands measures the plan: a prompt
  // or rows moved between the caches would mislead it.
  s.n_pos = spans_.empty() ? 0 : spans_.front().p0;
  if (!first && b.size() == 1 && meter_.kv_moved) {
    balancer_->moved_rows(s, meter_.kv_layers);
    return;
  }
  if (first || b.size() != 1) {
    balancer_->skip();
    return;
  }
  std::optional<BalanceMove> mv = balancer_->observe(s);
  if (!mv) return;
  TraceScope span(tracer_, track, "re-plan", SpanKind::Busy,
                  mv->to_cpu.empty() ? mv->to_pcie.front() : mv->to_cpu.front(), step);
  for (int32_t l : mv->to_cpu) route_->on_cpu[l].store(1, std::memory_order_relaxed);
  for (int32_t l : mv->to_pcie) route_->on_cpu[l].store(0, std::memory_order_relaxed);
}

// The step's per-layer times for its width (not a step that moved rows
// between the caches: their cost would count as the layers'), then what
// each width keeps on the CPU from now on.
void ComputeActor::route_by_width(const BalanceSample& s, const Batch& b) {
  const int32_t n_layer = static_cast<int32_t>(m_.config().n_layer);
  if (!meter_.kv_moved) {
    WidthSample w;
    w.width = static_cast<int64_t>(b.size());
    w.n_cpu = s.n_cpu;
    w.n_gpu = n_layer - s.n_cpu;
    w.n_copied = s.n_copied;
    w.cpu_s = s.cpu_s;
    w.gpu_s = s.gpu_s;
    w.copy_s = s.copy_s;
    routing_->observe(w);
  }
  // The layout the planner routes by (the balancer's CPU set, else the
  // plan's), for the routing's simulation of a step.
  layout_.resize(static_cast<size_t>(n_layer));
  for (int32_t l = 0; l < n_layer; ++l) {
    const bool set = balancer_ ? balancer_->on_cpu(l) : cpu_home_[l] != 0;
    layout_[l] = set                               ? WidthRouting::Kind::CpuSet
                 : plan_tier_[l] == Tier::Resident ? WidthRouting::Kind::Resident
                                                   : WidthRouting::Kind::Streamed;
  }
  const bool layout_changed = layout_ != placed_layout_;
  routing_->set_layout(layout_, slots_.size(), depth_.size());
  // Per bucket, how many stay and which (by layer); buckets not measured
  // yet keep the even spread of their count, as do all with LS_WIDTH_PLACE=0
  // (A/B runs). The search (~0.2 ms a bucket on the 70b's plan) runs for the
  // bucket this step measured, and for every bucket when the CPU set
  // changed; the others keep their placement until a step of theirs (a
  // batch whose width moves would otherwise pay it for every bucket, every
  // step).
  static const bool place = env_int("LS_WIDTH_PLACE", 1, 0) != 0;
  const int measured = WidthRouting::bucket(static_cast<int64_t>(b.size()));
  for (int k = 1; k < WidthRouting::kBuckets; ++k) {
    if (!place) {
      route_->keep[k].store(routing_->cpu_layers(k), std::memory_order_relaxed);
      continue;
    }
    if (!layout_changed && k != measured && route_->placed[k].load(std::memory_order_relaxed))
      continue;
    const size_t kb = static_cast<size_t>(k);
    const WidthRouting::Placement p =
        routing_->placement(k, layout_changed ? nullptr : &placed_[kb]);
    placed_[kb] = p;
    route_->keep[k].store(p.k, std::memory_order_relaxed);
    if (p.predicted_s <= 0) {
      route_->placed[k].store(0, std::memory_order_release);
      continue;
    }
    size_t i = 0;
    for (int32_t l = 0; l < n_layer; ++l)
      if (layout_[l] == WidthRouting::Kind::CpuSet && i < p.keep.size())
        route_->keep_at[static_cast<size_t>(k) * route_->n_layer + static_cast<size_t>(l)].store(
            p.keep[i++], std::memory_order_relaxed);
    route_->placed[k].store(1, std::memory_order_release);
  }
  placed_layout_ = layout_;
  // Each bucket's step as it will now be routed, simulated (one simulation
  // a bucket, reused from the placement where it made one): what a
  // speculative run's K chooser prices its unmeasured widths by
  // (Pipeline::predicted_step_s).
  for (int k = 0; k < WidthRouting::kBuckets; ++k) {
    const int32_t keep = k == 0 ? routing_->cpu_layers(0) : route_->keep[k].load();
    const size_t kb = static_cast<size_t>(k);
    const double placed_s =
        place && k > 0 && route_->placed[k].load() ? placed_[kb].predicted_s : 0;
    route_->predicted_s[k].store(placed_s > 0 ? placed_s : routing_->predict_s(k, keep),
                                 std::memory_order_relaxed);
  }
}

}  // namespace ls
