// The actor graph, on one screen:
//
//   planner ──LayerJob──▶ reader ──LayerJob──▶ copier ──LayerJob──▶ compute ──StepOutput──▶ sampler
//      │ (RAM, storage)      ▲ staging credits    ▲ slot credits    ▲   │ ▲                    │
//      └──────────── (resident and CPU tiers) ─────────────────────▶│   │ │                    │
//      ▲ depth credits (returned by compute as each layer is done) ─────┘ │                    │
//                                          compute ◀──StepInput (the prompt, or the next token)┘
//                                          compute ──CpuWork (hidden state)──▶ cpu-compute ──┐
//                                             ▲──────────── CpuWork (the state after it) ◀──┘
//   StepWidths (client → planner): a step whose prompt is wider than the CPU
//   tier's batch sends the CPU-tier layers the streamed way (prefill through
//   PCIe); compute moves their key/value rows between the backends.
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

#include <chrono>

#include "actors/compute.h"
#include "actors/copier.h"
#include "actors/cpu_compute.h"
#include "actors/planner.h"
#include "actors/reader.h"

namespace ls {

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
        // Actors.
        planner(plan, depth, to_reader, to_compute,
                opt.cpu_max_batch > 0 && (plan.n_cpu > 0 || plan.rebalance) && mem->n_slots() > 0
                    ? &widths
                    : nullptr,
                plan.rebalance ? &route : nullptr, rc, tracer),
        reader(m.map, *mem, src.get(), staging, to_reader, to_copier, rc, tracer),
        copier(m.map, *mem, link, staging, slots, to_copier, to_compute, rc, tracer),
        compute(m, be, link, *mem, slots, depth, steps, to_compute, to_sampler, to_cpu, from_cpu,
                plan, widths, balancer ? &route : nullptr, balancer.get(), rc, tracer, opt.io_only),
        cpu_compute(m, opt.cpu_backend ? *opt.cpu_backend : be, *mem, to_cpu, from_cpu, rc, tracer),
        sampler(to_sampler, steps, widths, rc, tracer) {
    for (size_t l = 0; l < plan.layer_tier.size(); ++l)
      route.on_cpu[l].store(plan.layer_tier[l] == Tier::Cpu);
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
  p->n_ctx_ = opt.n_ctx;
  p->cpu_max_batch_ = opt.cpu_max_batch;
  p->link_ = link;
  p->g_ =
      std::make_unique<Graph>(m, be, *link, plan, opt, std::move(*mem), std::move(src), tracer, rc);
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

const char* Pipeline::source_name() const {
  return g_->src ? g_->src->name() : "none";
}

Status Pipeline::run_request(std::span<const int32_t> prompt, StepCallback cb, size_t logits_from) {
  if (prompt.empty()) return make_error("empty request");
  if (n_ctx_ && n_past_ + prompt.size() > n_ctx_)
    return make_error("%zu more tokens do not fit in the context: %u of %u positions are used",
                      prompt.size(), n_past_, n_ctx_);
  if (rc_->stopped()) {
    if (auto e = rc_->error()) return *e;
    return make_error("the run was stopped");
  }
  std::promise<uint32_t> done;
  std::future<uint32_t> fut = done.get_future();
  rc_->set_busy(true);
  struct Idle {
    RunControl* rc;
    ~Idle() { rc->set_busy(false); }
  } idle{rc_};
  const uint32_t first_gen = n_past_ + static_cast<uint32_t>(prompt.size());
  // A prompt wider than the CPU tier's batch goes through PCIe (the planner).
  const int64_t step = g_->widths.next_step.load();
  if (cpu_max_batch_ > 0 && prompt.size() > static_cast<size_t>(cpu_max_batch_))
    g_->widths.wide_step.store(step);
  g_->widths.fed_step.store(step);
  g_->sampler.begin_request(std::move(cb), 0, first_gen, n_ctx_ ? n_ctx_ : UINT32_MAX,
                            std::move(done));
  StepInput in;
  for (size_t i = 0; i < prompt.size(); ++i)
    in.batch.add(prompt[i], static_cast<int32_t>(n_past_ + i), 0,
                 i + 1 == prompt.size() || i >= logits_from);
  if (!g_->steps.push(std::move(in), *rc_)) {
    if (auto e = rc_->error()) return *e;
    return make_error("the run was stopped");
  }
  while (fut.wait_for(kPollInterval) != std::future_status::ready) {
    if (rc_->stopped()) {
      if (auto e = rc_->error()) return *e;
      return make_error("the run was stopped");
    }
  }
  n_past_ = fut.get();
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
