#include "actors/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "model/cpu_backend.h"
#include "model/default_model.h"
#include "model/layer_skip.h"
#include "model/kv_blocks.h"
#include "runtime/units.h"

namespace ls {

Expected<std::vector<Tier>> parse_tiers(const std::string& s, uint32_t n_layer) {
  std::vector<Tier> t;
  for (char c : s) {
    switch (c) {
      case 'A':
      case 'a':
        t.push_back(Tier::Resident);
        break;
      case 'B':
      case 'b':
        t.push_back(Tier::Ram);
        break;
      case 'C':
      case 'c':
        t.push_back(Tier::Storage);
        break;
      case 'H':
      case 'h':
        t.push_back(Tier::Cpu);
        break;
      default:
        return make_error(
            "--tiers '%s': '%c' is not a tier (A resident, H computed on the CPU, B RAM, C "
            "storage)",
            s.c_str(), c);
    }
  }
  if (t.size() == 1) t.assign(n_layer, t[0]);
  if (t.size() != n_layer)
    return make_error(
        "--tiers '%s' names %zu layers; the model has %u (or give one letter for all)", s.c_str(),
        t.size(), n_layer);
  return t;
}

// The widest step a plan's leftover device memory may give (widen_step_tokens):
// past it a step of prompt tokens beside decoding sequences delays their
// next token for long, and a 70b's prefill gains little from fewer passes.
constexpr uint32_t kWidestStep = 4096;

int32_t default_device_slots(uint32_t n_seq) {
  return n_seq >= 32 ? 4 : 3;
}

namespace {

Expected<TierPlan> plan_with_slots(const Model& m, const EngineOptions& opt, int32_t slots) {
  const LlamaConfig& c = m.config();
  const uint32_t n_ctx = opt.n_ctx ? opt.n_ctx : std::min<uint32_t>(c.n_ctx_train, 4096);
  const uint32_t align = 4096;
  if (!opt.tiers.empty()) {
    auto t = parse_tiers(opt.tiers, c.n_layer);
    if (!t) return t.error();
    return plan_forced(m.map, *t, slots, opt.staging_buffers, align);
  }
  PlanInputs in;
  std::optional<DeviceMemory> dev;
  if (opt.device_memory) {
    auto d = opt.device_memory(m, opt);
    if (!d) return d.error();
    dev = std::move(*d);
  }
  if (!dev && opt.cpu_layers > 0)
    return make_error(
        "--cpu-layers %d: the CPU backend computes every layer on the CPU already (the CPU tier "
        "splits the layers a GPU plan keeps in RAM; --backend cuda)",
        opt.cpu_layers);
  if (dev) {
    // Budgets default to what the machine has: free device memory, and the
    // host's MemAvailable less a margin for the rest of the system.
    in.vram_budget = dev->free_bytes;
    const uint64_t avail = mem_available_bytes();
    constexpr uint64_t kHostMargin = 4ull << 30;
    in.ram_budget = avail > kHostMargin ? avail - kHostMargin : 0;
    if (opt.print_plan) {
      if (opt.vram_budget.empty())
        std::fprintf(stderr, "layerstream: %s: %s free of %s: the default --vram-budget\n",
                     dev->device.c_str(), human_bytes(dev->free_bytes).c_str(),
                     human_bytes(dev->total_bytes).c_str());
      if (opt.ram_budget.empty())
        std::fprintf(stderr,
                     "layerstream: host: MemAvailable %s less %s: the default --ram-budget\n",
                     human_bytes(avail).c_str(), human_bytes(kHostMargin).c_str());
    }
    in.device_reserves = dev->reserves;
    in.token_embd_bytes = dev->token_embd_bytes;
  } else {
    // The CPU backend: "device memory" is host memory too, and the budgets
    // default to unlimited: every layer resident, read in place.
    const uint32_t blocks = kv_pool_blocks(m, opt);
    in.device_reserves = {
        {"KV cache (" + std::to_string(blocks) + " blocks of " + std::to_string(kKvBlockLen) +
             " positions; " + std::to_string(std::max<uint32_t>(1, opt.n_seq)) +
             " sequences of up to " + std::to_string(n_ctx) + ")",
         KvCache::bytes_for(c.n_layer, blocks, c.n_embd_kv(), opt.kv_type)},
        // Activations and logits for a 512-token batch: the residual, norms,
        // q/k/v, attention output, the two feed-forward halves, a row of logits each.
        {"activations and logits", 4ull * (8ull * c.n_embd + 2ull * c.n_ff + c.n_vocab) * 512},
        {"global tensors (token_embd, output, norms)", m.map.globals.tensor_bytes},
    };
  }
  if (!opt.vram_budget.empty()) {
    auto b = parse_bytes(opt.vram_budget);
    if (!b) return make_error("--vram-budget: %s", b.error().message.c_str());
    in.vram_budget = *b;
  }
  if (!opt.ram_budget.empty()) {
    auto b = parse_bytes(opt.ram_budget);
    if (!b) return make_error("--ram-budget: %s", b.error().message.c_str());
    in.ram_budget = *b;
  }
  in.device_slots = slots;
  in.staging_buffers = opt.staging_buffers;
  in.read_alignment = align;
  in.cpu_layers = std::max(opt.cpu_layers, 0);
  if (opt.cpu_layers >= 0 || !dev || !opt.calibrate_hybrid) {
    auto p = plan_tiers(m.map, in);
    if (p && dev && p->n_ram + p->n_cpu > 0)
      p->hybrid_reason = opt.cpu_layers == 0
                             ? "off (--cpu-layers 0)"
                             : "--cpu-layers " + std::to_string(opt.cpu_layers) +
                                   " fixed: not re-planned (auto re-plans between steps)";
    return p;
  }
  // --cpu-layers auto (the default): a draft without CPU layers; if it
  // streams from RAM, measure both rates, balance the two paths, and let the
  // balancer move layers between them as the run goes (model/hybrid_balance.h).
  auto draft = plan_tiers(m.map, in);
  if (!draft) return draft;
  if (draft->n_ram == 0 && draft->n_storage == 0) {
    draft->hybrid_reason = "off: every layer is resident on the device";
    return draft;
  }
  if (draft->n_storage > 0) {
    draft->hybrid_reason =
        "off: " + std::to_string(draft->n_storage) +
        " layers are read from storage every step, which bounds it; the CPU tier computes "
        "layers held in RAM (a larger --ram-budget holds more)";
    return draft;
  }
  auto rates = opt.calibrate_hybrid(m, opt, *draft);
  if (!rates) return rates.error();
  in.cpu_layers = balance_cpu_layers(m.map, *draft, *rates);
  auto p = plan_tiers(m.map, in);
  if (!p) return p.error();
  const HybridStep h = predict_hybrid_step(m.map, *p, *rates);
  const HybridStep h0 = predict_hybrid_step(m.map, *draft, *rates);
  p->predicted_copy_s = h.copy_s;
  p->predicted_cpu_s = h.cpu_s;
  p->predicted_gpu_s = h.gpu_s;
  p->rebalance = true;
  p->rates = *rates;
  char wide[48] = "", reps[128] = "";
  if (rates->cpu_ratio_8 > 0)
    std::snprintf(wide, sizeof wide, ", %.2fx that at 8 tokens", rates->cpu_ratio_8);
  if (rates->cpu_rep_max_s > 0)
    std::snprintf(reps, sizeof reps, " (its largest layer %.1f-%.1f ms%s)",
                  rates->cpu_rep_min_s * 1e3, rates->cpu_rep_max_s * 1e3, wide);
  char why[520];
  std::snprintf(
      why, sizeof why,
      "auto: the CPU computes a layer at %.1f GB/s%s and the copy engine moves %.1f "
      "GB/s, both at once; the GPU computes a layer at %.0f GB/s, plus %.1f ms a step: %d "
      "CPU layers, predicted %.2f tok/s (%.2f over PCIe alone); re-planned between "
      "decode steps from what they measure",
      rates->cpu_bytes_per_s / 1e9, reps, rates->copy_bytes_per_s / 1e9,
      rates->gpu_bytes_per_s / 1e9, rates->gpu_step_s * 1e3, in.cpu_layers,
      h.step_s() > 0 ? 1 / h.step_s() : 0.0, h0.step_s() > 0 ? 1 / h0.step_s() : 0.0);
  p->hybrid_reason = why;
  return p;
}

}  // namespace

// The plan, with the device slots asked for, else default_device_slots; where
// that default's fourth slot does not fit the budget, with three.
Expected<TierPlan> plan_for(const Model& m, const EngineOptions& opt) {
  if (opt.device_slots > 0) return plan_with_slots(m, opt, opt.device_slots);
  const int32_t slots = default_device_slots(opt.n_seq);
  auto p = plan_with_slots(m, opt, slots);
  if (!p && slots > 3) return plan_with_slots(m, opt, 3);
  return p;
}

uint64_t mem_available_bytes() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  unsigned long long kb = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
  std::fclose(f);
  return static_cast<uint64_t>(kb) * 1024;
}

uint32_t kv_pool_blocks(const Model& m, const EngineOptions& opt) {
  if (opt.kv_blocks) return opt.kv_blocks;
  const uint32_t n_ctx = opt.n_ctx ? opt.n_ctx : std::min<uint32_t>(m.config().n_ctx_train, 4096);
  return kv_default_blocks(std::max<uint32_t>(1, opt.n_seq), n_ctx);
}

int hybrid_cpu_threads(const EngineOptions& opt) {
  return opt.threads > 0 ? opt.threads : std::max(1, default_thread_count() - 1);
}

std::unique_ptr<Backend> make_cpu_backend(const Model& m, const EngineOptions& opt, int threads) {
  const LlamaConfig& c = m.config();
  const uint32_t n_ctx = opt.n_ctx ? opt.n_ctx : std::min<uint32_t>(c.n_ctx_train, 4096);
  if (threads <= 0) threads = opt.threads > 0 ? opt.threads : default_thread_count();
  return std::make_unique<CpuBackend>(c, m.globals(), n_ctx, std::max<uint32_t>(1, opt.n_seq),
                                      opt.kv_type, threads, opt.cpu_act, opt.cpu_tuning,
                                      kv_pool_blocks(m, opt), opt.cpu_pool);
}

std::shared_ptr<ThreadPool> Engine::cpu_pool() const {
  if (cpu_backend_) return cpu_backend_->cpu_pool();
  return backend_ ? backend_->cpu_pool() : nullptr;
}

int32_t hybrid_depth(const TierPlan& plan) {
  const size_t n = plan.layer_tier.size();
  size_t longest = 0, run = 0;
  // Twice round: a run at the step's end goes on into the next one's start.
  for (size_t i = 0; i < 2 * n; ++i) {
    run = plan.layer_tier[i % n] == Tier::Resident ? run + 1 : 0;
    longest = std::max(longest, std::min(run, n));
  }
  return kDepthHybrid + static_cast<int32_t>(longest);
}

Expected<std::unique_ptr<Engine>> Engine::open(EngineOptions opt) {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Engine> e(new Engine());
  if (opt.backend != "auto" && opt.backend != "cpu" && opt.backend != "cuda")
    return make_error("--backend must be cpu, cuda or auto (got '%s')", opt.backend.c_str());
  if (opt.backend == "cuda" && !opt.make_backend)
    return make_error(
        "--backend cuda: this engine was given no CUDA backend (a build without CUDA, or a "
        "caller that set no EngineOptions::make_backend); use cpu or auto");
  if (opt.depth < 0 || opt.staging_buffers < 1 || opt.device_slots < 0)
    return make_error(
        "--depth and --device-slots must be 0 (auto) or more, --staging-buffers at least 1");
  if (opt.model.empty()) {
    auto p = default_model_path();
    if (!p) return p.error();
    opt.model = *p;
  }
  auto m = open_model(opt.model);
  if (!m) return m.error();
  e->model_ = std::move(*m);
  if (!opt.skip_layers.empty()) {
    auto skip = parse_skip_layers(opt.skip_layers, e->model_->config().n_layer, opt.model);
    if (!skip) return skip.error();
    const uint32_t n_before = e->model_->config().n_layer;
    const uint64_t saved = skip_layers(*e->model_, *skip);
    std::string names;
    for (uint32_t l : *skip) {
      if (!names.empty()) names += ',';
      names += std::to_string(l);
    }
    if (opt.print_plan)
      std::fprintf(stderr,
                   "layer skip: %zu of %u layers left out (%s): %s a step never read, copied "
                   "or computed\n",
                   skip->size(), n_before, names.c_str(), human_bytes(saved).c_str());
  }
  const LlamaConfig& c = e->model_->config();
  if (opt.n_ctx == 0) opt.n_ctx = std::min<uint32_t>(c.n_ctx_train, 4096);
  if (opt.n_ctx > c.n_ctx_train)
    std::fprintf(stderr, "layerstream: warning: -c %u is beyond the model's training context %u\n",
                 opt.n_ctx, c.n_ctx_train);
  // A block table row holds one slot's n_ctx positions: more blocks than all
  // the slots' rows could never be used.
  const uint32_t most = kv_default_blocks(std::max<uint32_t>(1, opt.n_seq), opt.n_ctx);
  if (opt.kv_blocks > most)
    return make_error(
        "--kv-blocks %u: --parallel %u sequences of up to -c %u positions use at most %u blocks "
        "of %d",
        opt.kv_blocks, std::max<uint32_t>(1, opt.n_seq), opt.n_ctx, most, kKvBlockLen);

  // Every decoding sequence puts a token in each step: a step cap below them
  // would send steps wider than the device's activations were sized for.
  if (opt.ubatch < std::max<uint32_t>(1, opt.n_seq))
    return make_error(
        "--ubatch-size %u is less than --parallel %u: a step holds a token of every running "
        "sequence",
        opt.ubatch, opt.n_seq);

  auto plan = plan_for(*e->model_, opt);
  if (!plan) return plan.error();
  e->plan_ = std::move(*plan);
  if (!opt.ubatch_set && opt.device_memory) {
    // The device memory a streamed plan left (under a layer) widens its steps
    // (widen_step_tokens), up to kWidestStep tokens: the backend and the
    // sampler then take the cap the plan's activations line is for.
    const uint32_t n_seq = std::max<uint32_t>(1, opt.n_seq);
    EngineOptions probe = opt;
    const ActivationsLine act = [&](uint32_t n) -> Expected<PlanLine> {
      probe.ubatch = n;
      auto d = opt.device_memory(*e->model_, probe);
      if (!d) return d.error();
      if (*d)
        for (const PlanLine& l : (*d)->reserves)
          if (l.what.rfind("activations and logits", 0) == 0) return l;
      return make_error("no activations line");
    };
    opt.ubatch = widen_step_tokens(e->plan_, step_tokens_max(opt.ubatch, opt.n_ctx, n_seq),
                                   step_tokens_max(kWidestStep, opt.n_ctx, n_seq), act);
  }
  if (opt.print_plan) std::fprintf(stderr, "%s", e->plan_.to_text().c_str());

  if (opt.stats && opt.device_memory)
    if (auto d = opt.device_memory(*e->model_, opt); d && *d)
      e->device_free_before_ = (*d)->free_bytes;
  if (opt.make_backend) {
    auto be = opt.make_backend(*e->model_, opt, e->plan_);
    if (!be) return be.error();
    e->backend_ = std::move(*be);
  } else {
    e->backend_ = make_cpu_backend(*e->model_, opt);
  }
  e->tracer_ = std::make_unique<Tracer>(!opt.trace_path.empty());
  e->control_ =
      std::make_unique<ControlPlane>(e->rc_, *e->tracer_, opt.watchdog_s, opt.handle_signals);
  // The CPU tier's own backend (hybrid plans): its KV cache holds the CPU layers' keys.
  const bool hybrid = e->plan_.n_cpu > 0 || e->plan_.rebalance;
  if (hybrid) e->cpu_backend_ = make_cpu_backend(*e->model_, opt, hybrid_cpu_threads(opt));
  PipelineOptions po;
  po.cpu_backend = e->cpu_backend_.get();
  po.depth = opt.depth > 0 ? opt.depth : hybrid ? hybrid_depth(e->plan_) : kDepthStreaming;
  po.source = opt.source;
  po.io_only = opt.io_only;
  po.n_ctx = opt.n_ctx;
  po.n_seq = std::max<uint32_t>(1, opt.n_seq);
  po.kv_blocks = kv_pool_blocks(*e->model_, opt);
  po.chunk = static_cast<int32_t>(step_tokens_max(opt.ubatch, opt.n_ctx, po.n_seq));
  auto pl = Pipeline::start(*e->model_, *e->backend_, e->plan_, po, *e->tracer_, e->rc_);
  if (!pl) return pl.error();
  e->pipeline_ = std::move(*pl);
  e->opt_ = opt;
  e->load_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return e;
}

Status Engine::finish() {
  if (finished_) return ok();
  finished_ = true;
  if (pipeline_) pipeline_->stop();
  control_.reset();
  if (!tracer_) return ok();
  Status st = finish_trace(*tracer_, opt_.trace_path, opt_.stats);
  if (opt_.stats && pipeline_ && pipeline_->balancer())
    std::fprintf(stderr, "%s", pipeline_->balancer()->summary().c_str());
  if (opt_.stats && pipeline_ && pipeline_->routing())
    std::fprintf(stderr, "CPU tier by width: %s\n", pipeline_->routing()->summary().c_str());
  if (opt_.stats) print_device_taken();
  return st;
}

// What the run took of the device (free memory before the backend was made
// less free memory now, the pipeline's device slots and every library's own
// allocations since included) against what the plan counted for it: the
// plan's CUDA context margin is a guess at the part no line names, and this
// is the measure of it.
void Engine::print_device_taken() const {
  if (device_free_before_ == 0 || !opt_.device_memory) return;
  auto d = opt_.device_memory(*model_, opt_);
  if (!d || !*d) return;
  const uint64_t now = (*d)->free_bytes;
  const double taken = now < device_free_before_ ? double(device_free_before_ - now) : 0.0;
  const double plan = double(plan_.vram_used);
  std::fprintf(stderr,
               "device memory: the run took %s (cudaMemGetInfo before the backend and now); the "
               "plan counted %s: %s %s the plan\n",
               human_bytes(static_cast<uint64_t>(taken)).c_str(),
               human_bytes(plan_.vram_used).c_str(),
               human_bytes(static_cast<uint64_t>(std::abs(plan - taken))).c_str(),
               taken <= plan ? "under" : "over");
}

Engine::~Engine() {
  (void)finish();
}

}  // namespace ls
