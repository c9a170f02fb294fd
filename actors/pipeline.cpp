// The actor graph, on one screen:
//
//   planner ──LayerJob──▶ reader ──LayerJob──▶ copier ──LayerJob──▶ compute ──StepOutput──▶ sampler
//      │ (RAM, storage)      ▲ staging credits    ▲ slot credits    ▲   │ ▲                    │
//      └──────────── (resident and CPU tiers) ─────────────────────▶│   │ │                    │
//      ▲ depth credits (returned by compute as each layer is done) ─────┘ │                    │
//                                          compute ◀──StepInput (each sequence's next token,
//                                                      and prompts joining: continuous batching)┘
//   Clients submit sequences to the sampler (Pipeline::submit); it forms
//   every step's batch and hands each sequence its logits rows.
//                                          compute ──CpuWork (hidden state)──▶ cpu-compute ──┐
//                                             ▲──────────── CpuWork (the state after it) ◀──┘
//   StepWidths (sampler → planner): each step's width; of the CPU-tier
//   layers the step keeps on the CPU only as many as HybridRoute::keep says
//   for that width (compute's WidthRouting, from what steps measured; none
//   for a prompt) and sends the others the streamed way (through PCIe);
//   compute moves their key/value rows between the backends.
//   HybridRoute (compute → planner): a hybrid plan re-planned online — after
//   each clean decode step compute gives the balancer (model/hybrid_balance.h)
//   the step's measurements and applies its moves to the route, which the
//   planner reads as it routes each host-memory layer to cpu-compute or PCIe.
//
//   The device link (the backend's, model/device_link.h) under copier and
//   compute: on CUDA the copier's cudaMemcpyAsync records an event, compute's
//   stream waits on it, and the link's watcher threads hand staging and slot
//   credits back once the GPU is done with them (gpu-copy, gpu-compute tracks).
//
// - Every edge is a bounded Mailbox; every buffer is an id from a CreditPool:
//   `staging` (reader → copier), `slots` (copier → compute), `depth`
//   (planner → compute). A free buffer is the only thing that lets work
//   start, so the pools are the back-pressure.
// - Streamed layers reach the copier in planned order (the reader passes
//   RAM-tier jobs through unread), so slots are taken in that order: a later
//   layer can never hold the last slot while compute waits for an earlier one.
// - The token goes from the sampler straight to compute as the next batch:
//   the planner schedules weights only, since what a layer reads does not
//   depend on the token — that is what lets it read and copy the next step's
//   first layers while the current step finishes.
// - An actor that fails calls RunControl::fail; all others see the stop
//   within kPollInterval and exit; the client's run_request returns the error.
#include "actors/pipeline.h"

#include <algorithm>
#include <chrono>
#include <climits>

#include "actors/compute.h"
#include "actors/copier.h"
#include "actors/cpu_compute.h"
#include "actors/planner.h"
#include "actors/reader.h"

namespace ls {

namespace {

// Runs of resident layers as one job (Planner, Backend::layer_group) only in
// plans without a CPU tier: there the GPU's compute is the step (the 8b
// resident: 478-484 tok/s against 432-445 with a job and a graph a layer;
// the 70b 75.3 against 73.1). In a hybrid plan the resident layers are ~7 ms
// of a ~190 ms step, and the 70b at 24 GiB ran 4.45-5.27 tok/s grouped
// against 5.13-5.45 a layer in four pairs of runs (session 20, calls 5-7;
// each run's plan and re-planner moves differed, so the cause is not
// settled): nothing to win there, so a job a layer as before.
uint32_t resident_group(const TierPlan& plan, const Backend& be) {
  return plan.n_cpu == 0 && !plan.rebalance ? be.layer_group() : 1;
}

}  // namespace

struct Pipeline::Graph {
  // The actors keep references to the plan: the graph's own copy (the
  // caller's may be a temporary), which every initializer below names.
  Graph(const Model& m, Backend& be, DeviceLink& link, const TierPlan& plan_in,
        const PipelineOptions& opt, std::unique_ptr<LayerMemory> memory,
        std::unique_ptr<BlockSource> source, Tracer& tracer, RunControl& rc)
      : plan(plan_in),
        mem(std::move(memory)),
        src(std::move(source)),
        // Credits.
        depth(opt.depth),
        staging(std::max(1, mem->n_staging())),
        slots(std::max(1, mem->n_slots())),
        // Edges. A mailbox never holds more than the credits that gate its
        // sender allow, so `depth` places suffice everywhere but the batch edges.
        to_reader(opt.depth),
        to_copier(opt.depth),
        to_compute(opt.depth),
        steps(2),
        to_sampler(2),
        to_cpu(1),
        from_cpu(1),
        // Online re-planning of a hybrid plan: the balancer decides, compute
        // applies its moves to the route, the planner routes by it.
        route(plan.layer_tier.size()),
        balancer(plan.rebalance
                     ? std::make_unique<HybridBalancer>(m.map, plan, plan.rates, opt.balance)
                     : nullptr),
        by_width(opt.cpu_max_batch > 0 && (plan.n_cpu > 0 || plan.rebalance) &&
                 mem->n_slots() > 0),
        routing(by_width && opt.route_by_width && opt.width_cpu_layers < 0
                    ? make_routing(m, plan, opt)
                    : nullptr),
        // Actors.
        planner(plan, depth, to_reader, to_compute, by_width ? &widths : nullptr,
                by_width || plan.rebalance ? &route : nullptr, rc, tracer,
                resident_group(plan, be)),
        reader(m.map, *mem, src.get(), staging, to_reader, to_copier, rc, tracer),
        copier(m.map, *mem, link, staging, slots, to_copier, to_compute, rc, tracer),
        compute(m, be, link, *mem, slots, depth, steps, to_compute, to_sampler, to_cpu, from_cpu,
                plan, widths, balancer || routing ? &route : nullptr, balancer.get(), routing.get(),
                rc, tracer, opt.io_only, opt.n_seq),
        cpu_compute(m, opt.cpu_backend ? *opt.cpu_backend : be, *mem, to_cpu, from_cpu, rc, tracer),
        sampler(to_sampler, steps, widths, rc, tracer, static_cast<int32_t>(opt.n_seq), opt.chunk,
                opt.n_ctx, opt.kv_blocks, opt.kv_seed) {
    for (size_t l = 0; l < plan.layer_tier.size(); ++l)
      route.on_cpu[l].store(plan.layer_tier[l] == Tier::Cpu);
    // What each width keeps on the CPU until compute measures: all up to
    // cpu_max_batch tokens (or the test's count), none beyond.
    const int widest = WidthRouting::bucket(std::max(1, opt.cpu_max_batch));
    for (int k = 0; k < WidthRouting::kBuckets; ++k) {
      int32_t keep = k <= widest ? INT32_MAX : 0;
      if (k > 0 && k <= widest && opt.width_cpu_layers >= 0) keep = opt.width_cpu_layers;
      if (k > 0 && k <= widest && routing) keep = routing->cpu_layers(k);
      route.keep[k].store(keep);
    }
  }

  // The routing's model starts from the rates the plan measured at load, as
  // per-layer seconds of an average host-memory layer.
  static std::unique_ptr<WidthRouting> make_routing(const Model& m, const TierPlan& plan,
                                                    const PipelineOptions& opt) {
    const int32_t n_layer = static_cast<int32_t>(plan.layer_tier.size());
    int32_t n_res = 0, n_host = 0;
    double host_bytes = 0;
    for (int32_t l = 0; l < n_layer; ++l) {
      const Tier t = plan.layer_tier[l];
      n_res += t == Tier::Resident ? 1 : 0;
      if (t == Tier::Cpu || t == Tier::Ram) {
        ++n_host;
        host_bytes += static_cast<double>(m.map.layers[l].range_bytes);
      }
    }
    const double layer = n_host > 0 ? host_bytes / n_host : 0;
    auto secs = [&](double rate) { return rate > 0 ? layer / rate : 0.0; };
    WidthRouting::Options o;
    o.max_width = opt.cpu_max_batch;
    o.cpu_ratio_8 = plan.rates.cpu_ratio_8;
    return std::make_unique<WidthRouting>(n_layer, plan.n_cpu, n_layer - n_res - plan.n_cpu,
                                          secs(plan.rates.cpu_bytes_per_s),
                                          secs(plan.rates.gpu_bytes_per_s),
                                          secs(plan.rates.copy_bytes_per_s), o);
  }

  const TierPlan plan;
  std::unique_ptr<LayerMemory> mem;
  std::unique_ptr<BlockSource> src;
  CreditPool depth, staging, slots;
  Mailbox<LayerJob> to_reader, to_copier, to_compute;
  Mailbox<StepInput> steps;
  Mailbox<StepOutput> to_sampler;
  Mailbox<CpuWork> to_cpu, from_cpu;
  StepWidths widths;
  HybridRoute route;
  std::unique_ptr<HybridBalancer> balancer;
  bool by_width;  // the planner routes CPU-tier layers by each step's width
  std::unique_ptr<WidthRouting> routing;
  Planner planner;
  Reader reader;
  Copier copier;
  ComputeActor compute;
  CpuComputeActor cpu_compute;
  SamplerActor sampler;
};

Expected<std::unique_ptr<Pipeline>> Pipeline::start(const Model& m, Backend& be,
                                                    const TierPlan& plan,
                                                    const PipelineOptions& opt, Tracer& tracer,
                                                    RunControl& rc) {
  if (opt.depth < 1) return make_error("--depth must be at least 1");
  const bool hybrid = plan.n_cpu > 0 || plan.rebalance;
  if (hybrid && !opt.cpu_backend)
    return make_error(
        "the plan computes layers on the CPU (%d at the start%s) but the pipeline has no CPU "
        "backend",
        plan.n_cpu, plan.rebalance ? ", re-planned online" : "");
  std::unique_ptr<BlockSource> src;
  uint32_t alignment = 4096;
  if (plan.n_storage > 0) {
    auto s = open_block_source(m.file->path(), opt.source);
    if (!s) return s.error();
    src = std::move(*s);
    if (opt.wrap_source) src = opt.wrap_source(std::move(src));
    alignment = std::max<uint32_t>(src->alignment(), 1);
  }
  // One pool of key/value blocks: the sampler's table addresses every
  // backend's cache with the same block ids.
  PipelineOptions o = opt;
  o.n_seq = std::max<uint32_t>(1, opt.n_seq);
  if (o.n_ctx > 0) {
    if (o.kv_blocks == 0) o.kv_blocks = be.kv_pool_blocks();
    if (o.kv_blocks == 0) o.kv_blocks = kv_default_blocks(o.n_seq, o.n_ctx);
    const Backend* backends[] = {&be, hybrid ? opt.cpu_backend : nullptr};
    for (const Backend* b : backends)
      if (b && b->kv_pool_blocks() != 0 && b->kv_pool_blocks() != o.kv_blocks)
        return make_error(
            "the %s backend's key/value pool has %u blocks; the pipeline's has %u (--kv-blocks)",
            b->name(), b->kv_pool_blocks(), o.kv_blocks);
  }
  std::unique_ptr<Pipeline> p(new Pipeline());
  DeviceLink* link = be.link();
  if (!link) {
    p->host_link_ = std::make_unique<HostLink>();
    link = p->host_link_.get();
  }
  link->set_tracer(&tracer);
  auto mem = LayerMemory::create(m.map, plan, m.file->base(), alignment, link->memory_ops());
  if (!mem) return mem.error();
  p->rc_ = &rc;
  p->n_ctx_ = o.n_ctx;
  p->n_seq_ = o.n_seq;
  p->kv_blocks_ = o.kv_blocks;
  p->link_ = link;
  p->g_ =
      std::make_unique<Graph>(m, be, *link, plan, o, std::move(*mem), std::move(src), tracer, rc);
  Graph& g = *p->g_;
  p->threads_.emplace_back([&g] { g.planner.run(); });
  p->threads_.emplace_back([&g] { g.reader.run(); });
  p->threads_.emplace_back([&g] { g.copier.run(); });
  p->threads_.emplace_back([&g] { g.compute.run(); });
  p->threads_.emplace_back([&g] { g.sampler.run(); });
  if (hybrid) p->threads_.emplace_back([&g] { g.cpu_compute.run(); });
  return p;
}

const HybridBalancer* Pipeline::balancer() const {
  return g_ ? g_->balancer.get() : nullptr;
}

const WidthRouting* Pipeline::routing() const {
  return g_ ? g_->routing.get() : nullptr;
}

const char* Pipeline::source_name() const {
  return g_->src ? g_->src->name() : "none";
}

Expected<uint64_t> Pipeline::submit(SeqRequest r, std::promise<SeqEnd> done) {
  if (r.prompt.empty()) return make_error("empty request");
  if (r.slot >= static_cast<int32_t>(n_seq_))
    return make_error("sequence slot %d: the pipeline has %u", r.slot, n_seq_);
  if (n_ctx_ && r.pos0 + r.prompt.size() > n_ctx_)
    return make_error("%zu more tokens do not fit in the context: %u of %u positions are used",
                      r.prompt.size(), r.pos0, n_ctx_);
  // Blocks for the prompt and the first token's position (actors/sampler.h):
  // more than the whole pool would wait for ever.
  if (n_ctx_) {
    const uint64_t want = std::min<uint64_t>(r.pos0 + r.prompt.size() + 1, n_ctx_);
    if (kv_blocks_for(want) > kv_blocks_)
      return make_error(
          "%zu tokens at position %u need %u key/value blocks of %d positions; the pool has %u "
          "(--kv-blocks)",
          r.prompt.size(), r.pos0, kv_blocks_for(want), kKvBlockLen, kv_blocks_);
  }
  if (rc_->stopped()) {
    if (auto e = rc_->error()) return *e;
    return make_error("the run was stopped");
  }
  r.max_pos = n_ctx_ ? n_ctx_ : UINT32_MAX;
  return g_->sampler.submit(std::move(r), std::move(done));
}

void Pipeline::cancel(uint64_t id) {
  g_->sampler.cancel(id);
}

void Pipeline::announce_width(int64_t w) {
  StepWidths& W = g_->widths;
  const int64_t next = W.next_step.load();  // compute set it before this step's rows came
  W.bound[next % StepWidths::kRing].store(std::max<int64_t>(1, w));
  W.bound_step.store(next);
}

int64_t Pipeline::routed_by_announce() const {
  return g_->widths.routed_by_bound.load();
}

double Pipeline::predicted_step_s(int64_t width) const {
  if (!g_->routing) return 0;
  return g_->route.predicted_s[WidthRouting::bucket(width)].load(std::memory_order_relaxed);
}

KvUsage Pipeline::kv_usage() const {
  return g_->sampler.kv_usage();
}

Expected<SeqEnd> Pipeline::wait(std::future<SeqEnd>& done) {
  while (done.wait_for(kPollInterval) != std::future_status::ready) {
    if (rc_->stopped()) {
      if (auto e = rc_->error()) return *e;
      return make_error("the run was stopped");
    }
  }
  return done.get();
}

Status Pipeline::run_request(std::span<const int32_t> prompt, StepCallback cb, size_t logits_from,
                             ArgmaxCallback on_argmax) {
  SeqRequest r;
  r.cb = std::move(cb);
  r.on_argmax = std::move(on_argmax);
  r.logits_from = logits_from;
  return run_slot0(prompt, std::move(r));
}

Status Pipeline::run_request(std::span<const int32_t> prompt, FeedCallback feed) {
  SeqRequest r;
  r.feed = std::move(feed);
  return run_slot0(prompt, std::move(r));
}

Status Pipeline::run_slot0(std::span<const int32_t> prompt, SeqRequest r) {
  rc_->set_busy(true);
  struct Idle {
    RunControl* rc;
    ~Idle() { rc->set_busy(false); }
  } idle{rc_};
  r.prompt.assign(prompt.begin(), prompt.end());
  r.slot = 0;
  r.pos0 = n_past_;
  r.keep_cache = true;  // the next request continues it (a chat), or rewinds
  std::promise<SeqEnd> done;
  std::future<SeqEnd> fut = done.get_future();
  auto id = submit(std::move(r), std::move(done));
  if (!id) return id.error();
  auto end = wait(fut);
  if (!end) return end.error();
  if (!end->error.empty()) return make_error("%s", end->error.c_str());
  n_past_ = end->pos;
  return ok();
}

void Pipeline::stop() {
  if (rc_) rc_->stop();
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
  // Copies and releases still in flight on the device touch the staging
  // buffers and slots: let them land before the memory goes.
  if (link_) (void)link_->drain();
}

Pipeline::~Pipeline() {
  stop();
}

}  // namespace ls
