// layerstream bench: run the pipeline over a grid of settings and print a
// markdown table — tok/s, GB/s streamed from storage, the ratio to the
// storage ceiling that `probe` measures for the same file in the same run,
// and the stage that bounds the pipeline. --io-only skips the kernels, so the
// pipeline's own ceiling is measured. Where the CPU computes layers (the CPU
// backend, or a hybrid plan's CPU tier) the host memory read that its
// threads reach (runtime/probe_host) is measured right before and after each
// run too, and the bytes the CPU reads per token are set against it.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "io/probe_storage.h"
#ifdef LS_HAVE_CUDA
#include "runtime/probe_gpu.h"
#endif
#include "actors/engine.h"
#include "model/sampler.h"
#include "runtime/probe_host.h"
#include "runtime/units.h"
#include "tools/commands.h"
#include "tools/engine_flags.h"

namespace ls {
namespace {

struct BenchArgs {
  EngineOptions engine;
  EngineFlagText text;
  std::vector<std::string> sweeps;
  int steps = 16;
  int prompt_tokens = 1;  // > 1: also time the prefill of a prompt this long (a warm request)
  bool io_only = false;
  std::string json;
  int probe_passes = 1;
};

// NAME=v1,v2,... -> (NAME, [v1, v2, ...])
Expected<std::pair<std::string, std::vector<std::string>>> parse_sweep(const std::string& s) {
  const size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
    return make_error("--sweep '%s': expected NAME=v1,v2,...", s.c_str());
  std::pair<std::string, std::vector<std::string>> out{s.substr(0, eq), {}};
  std::stringstream ss(s.substr(eq + 1));
  for (std::string v; std::getline(ss, v, ',');)
    if (!v.empty()) out.second.push_back(v);
  static const char* known[] = {"depth", "staging", "slots", "qd",   "chunk",
                                "threads", "tiers", "cpu", "batch"};
  bool ok_name = false;
  for (const char* k : known) ok_name |= out.first == k;
  if (!ok_name)
    return make_error(
        "--sweep: unknown setting '%s' (depth, staging, slots, qd, chunk, threads, tiers, cpu, "
        "batch)",
        out.first.c_str());
  return out;
}

Status apply(EngineOptions& o, const std::string& name, const std::string& v) {
  auto int_of = [&](int32_t& dst) -> Status {
    char* end = nullptr;
    const long x = std::strtol(v.c_str(), &end, 10);
    if (!end || *end || x < 1 || x > 1 << 20)
      return make_error("--sweep %s%s: '%s' is not a positive integer", name.c_str(),
                        name == "batch" ? " (--batch)" : "", v.c_str());
    dst = static_cast<int32_t>(x);
    return ok();
  };
  if (name == "depth") return int_of(o.depth);
  if (name == "staging") return int_of(o.staging_buffers);
  if (name == "slots") return int_of(o.device_slots);
  if (name == "threads") return int_of(o.threads);
  if (name == "batch") {  // sequences decoded at once (--parallel)
    int32_t n = 0;
    LS_TRY(int_of(n));
    o.n_seq = static_cast<uint32_t>(n);
    return ok();
  }
  if (name == "tiers") {
    o.tiers = v;
    return ok();
  }
  if (name == "cpu") {  // --cpu-layers: auto, or a fixed count (0 too)
    if (v == "auto") {
      o.cpu_layers = -1;
      return ok();
    }
    char* end = nullptr;
    const long x = std::strtol(v.c_str(), &end, 10);
    if (!end || *end || x < 0 || x > 100000)
      return make_error("--sweep cpu: '%s' is not auto or a number of layers", v.c_str());
    o.cpu_layers = static_cast<int32_t>(x);
    return ok();
  }
  if (name == "qd") {
    int32_t q = 0;
    LS_TRY(int_of(q));
    o.source.queue_depth = static_cast<uint32_t>(q);
    return ok();
  }
  if (name == "chunk") {
    auto b = parse_bytes(v);
    if (!b || *b == 0) return make_error("--sweep chunk: '%s' is not a size", v.c_str());
    o.source.chunk_bytes = *b;
    return ok();
  }
  return make_error("--sweep: unknown setting '%s'", name.c_str());
}

// Bytes the CPU reads from host memory per decode step: on the CPU backend
// every layer and the output head (token_embd gives one row, unless it is
// the output head too); in a hybrid plan the CPU tier's layers.
uint64_t host_bytes_per_step(const Engine& e) {
  if (std::string(e.backend_name()) != "cpu") return e.plan().cpu_bytes_per_step;
  const LayerMap& map = e.model().map;
  uint64_t b = 0;
  for (const LayerExtent& l : map.layers) b += l.tensor_bytes;
  bool has_output = false;
  uint64_t embd = 0;
  for (const GgufTensor* t : map.globals.tensors) {
    if (t->name == "output.weight") has_output = true;
    if (t->name == "token_embd.weight") embd = t->bytes;
  }
  return b + map.globals.tensor_bytes - (has_output ? embd : 0);
}

// Bytes the copy engine has moved and the CPU tier has read so far, from the
// tracer's busy spans: what a re-planned hybrid run streamed, whose split
// between the two paths changes as it goes.
struct MovedBytes {
  uint64_t copy = 0, cpu = 0;
};
MovedBytes moved_bytes(Engine& e) {
  MovedBytes m;
  bool gpu_copy = false;
  for (const TrackStats& t : e.tracer().track_stats()) {
    if (t.name == "gpu-copy") m.copy = t.bytes, gpu_copy = true;
    if (t.name == "copier" && !gpu_copy) m.copy = t.bytes;
    if (t.name == "cpu-compute") m.cpu = t.bytes;
  }
  return m;
}

// Bytes a decode step reads from device memory when every layer is resident
// on the GPU: each layer's tensors, the head (token_embd only as a gather of
// a few rows), and the K and V of every layer at `mean_pos` cached positions
// for each of `width` sequences. The bound of issue 20's lines
// (bench/results/2026-12-02-h200-s14.md counts the same bytes).
struct DeviceStep {
  double weights = 0, kv = 0;
};
// (Used by CUDA builds only.)
[[maybe_unused]] DeviceStep device_bytes_per_step(const Model& m, KvType kv_type, double mean_pos,
                                                  int width) {
  DeviceStep d;
  for (const LayerExtent& l : m.map.layers) d.weights += static_cast<double>(l.range_bytes);
  const GlobalView g = m.globals();
  const WeightView& head = g.output;  // token_embd itself when the model ties them
  d.weights += static_cast<double>(ggml_row_bytes(head.type, static_cast<uint64_t>(head.n_in))) *
               static_cast<double>(head.n_out);
  const LlamaConfig& c = m.config();
  const double elem = kv_type == KvType::F32 ? 4.0 : 2.0;
  d.kv = 2.0 * c.n_embd_kv() * elem * c.n_layer * mean_pos * width;
  return d;
}

struct Row {
  std::map<std::string, std::string> settings;
  double tok_s = 0, storage_gbps = 0, streamed_gbps = 0, probe_gbps = 0, ratio = 0;
  double h2d_gbps = 0, pcie_ratio = 0;      // pinned H2D probe around the run; streamed / probe
  double bound_tok_s = 0, bound_ratio = 0;  // the slowest link (storage, PCIe, host reads,
                                            // device memory), as tokens/s
  double prefill_tok_s = 0;                 // --prompt-tokens: the warm request's prompt rate
  double width_tok_s = 0;     // batch > 1: every sequence's tokens in the window all decode
  double per_seq_tok_s = 0;   // tok_s / batch
  double host_gbps = 0, host_probe_gbps = 0, host_ratio = 0;  // CPU-read bytes; host read probe
  // A fully resident CUDA plan: device-memory bytes a step and the D2D probe
  // (read + written, GB/s) right after the run; both 0 otherwise.
  double device_step_bytes = 0, device_kv_bytes = 0, d2d_gbps = 0;
  std::string bound, error, source;
  std::string cpu_layers;  // the CPU tier's layers: "28", or "24->27" when re-planned online
};

int run_bench(BenchArgs& a) {
  if (Status st = finish_engine_flags(a.engine, a.text); !st.ok()) {
    std::fprintf(stderr, "error: %s\n", st.error().message.c_str());
    return 1;
  }
  if (a.prompt_tokens < 1) {
    std::fprintf(stderr, "error: --prompt-tokens must be at least 1\n");
    return 1;
  }
  if (a.steps < 2) {
    std::fprintf(stderr, "error: -n must be at least 2 (the first step fills the pipeline)\n");
    return 1;
  }
  std::vector<std::pair<std::string, std::vector<std::string>>> grid;
  for (const std::string& s : a.sweeps) {
    auto p = parse_sweep(s);
    if (!p) {
      std::fprintf(stderr, "error: %s\n", p.error().message.c_str());
      return 1;
    }
    grid.push_back(*p);
  }
  // Every value checked before a model is loaded: a bad one late in a sweep
  // would otherwise end a run that had already taken minutes.
  for (const auto& [name, values] : grid)
    for (const std::string& v : values) {
      EngineOptions scratch = a.engine;
      if (Status st = apply(scratch, name, v); !st) {
        std::fprintf(stderr, "error: %s\n", st.error().message.c_str());
        return 1;
      }
    }
  a.engine.io_only = a.io_only;
  a.engine.watchdog_s = 0;

  // Every combination of the sweeps (the first varies slowest).
  std::vector<std::vector<std::string>> combos{{}};
  for (const auto& [name, values] : grid) {
    std::vector<std::vector<std::string>> next;
    for (const auto& c : combos)
      for (const std::string& v : values) {
        auto d = c;
        d.push_back(v);
        next.push_back(d);
      }
    combos = next;
  }

  std::vector<Row> rows;
  // The storage ceiling is measured around every run: one probe pass over
  // the same number of bytes at the same queue depth and chunk right before
  // the run and one right after, so a disk whose speed drifts (virtual disks
  // with burst credits do) is compared with itself.
  std::vector<double> all_probes;
  std::string probe_how, probe_error;
  std::unique_ptr<HostReadBuffer> host_buf;  // made at the first host probe, kept
  auto probe_once = [&](const Engine& e, const SourceOptions& src, int passes_of_layers) {
    ProbeOptions po;
    po.kind = src.kind;
    po.chunk_bytes = src.chunk_bytes;
    po.queue_depths = {src.queue_depth};
    po.passes = a.probe_passes;
    po.ranges_in_flight = static_cast<uint32_t>(e.options().staging_buffers);
    // The same bytes the run reads: the storage layers' ranges, in order.
    for (int k = 0; k < passes_of_layers; ++k)
      for (size_t l = 0; l < e.plan().layer_tier.size(); ++l)
        if (e.plan().layer_tier[l] == Tier::Storage)
          for (const ByteRange& r : e.model().map.layers[l].ranges)
            po.ranges.push_back({r.offset, r.bytes});
    const std::string& path = e.model().file->path();
    auto pr = probe_storage(path, po);
    if (!pr || !pr->best()) {
      if (!pr) probe_error = pr.error().message;
      return 0.0;
    }
    char buf[200];
    std::snprintf(buf, sizeof buf, "%s%s", pr->source.c_str(),
                  pr->direct ? " O_DIRECT" : " (buffered: the page cache may serve it)");
    probe_how = buf;
    all_probes.insert(all_probes.end(), pr->best()->gbps.begin(), pr->best()->gbps.end());
    return pr->best()->gbps_median;
  };
  for (size_t ci = 0; ci < combos.size(); ++ci) {
    EngineOptions o = a.engine;
    o.print_plan = ci == 0;
    Row row;
    Status st;
    for (size_t k = 0; k < grid.size() && st.ok(); ++k) {
      row.settings[grid[k].first] = combos[ci][k];
      st = apply(o, grid[k].first, combos[ci][k]);
    }
    if (!st.ok()) {
      std::fprintf(stderr, "error: %s\n", st.error().message.c_str());
      return 1;
    }
    auto er = Engine::open(o);
    if (!er) {
      row.error = er.error().message;
      rows.push_back(row);
      std::fprintf(stderr, "bench: %s\n", row.error.c_str());
      continue;
    }
    Engine& e = **er;
    const Model& m = e.model();
    const uint64_t run_bytes = e.plan().storage_bytes_per_step * static_cast<uint64_t>(a.steps - 1);
    // Probe over as many passes of the layers as the run's steady state reads
    // (at least one, at most enough for ~8 GiB), right before and right after.
    const uint64_t per_step = std::max<uint64_t>(1, e.plan().storage_bytes_per_step);
    const int probe_steps =
        static_cast<int>(std::clamp<uint64_t>((8ull << 30) / per_step, 1, a.steps - 1));
    double before = 0, after = 0;
    if (run_bytes > 0) before = probe_once(e, o.source, probe_steps);
    // The PCIe ceiling, when the GPU streams: pinned H2D right before and after.
    const bool pcie =
        std::string(e.backend_name()) == "cuda" && e.plan().streamed_bytes_per_step > 0;
    double h2d_before = 0, h2d_after = 0;
    auto h2d_once = [&]() -> double {
#ifdef LS_HAVE_CUDA
      auto r = probe_h2d(1ull << 30, 3, true);
      if (r) return r->max;
      std::fprintf(stderr, "bench: H2D probe: %s\n", r.error().message.c_str());
#endif
      return 0.0;
    };
    if (pcie) h2d_before = h2d_once();
    // The host read ceiling of the threads that compute on the CPU, right
    // before and after the run (it drifts on a shared machine by ±10 %).
    const uint64_t host_bytes = host_bytes_per_step(e);
    const int host_threads = std::string(e.backend_name()) == "cpu"
                                 ? (o.threads > 0 ? o.threads : default_thread_count())
                                 : hybrid_cpu_threads(o);
    auto host_once = [&]() -> double {
      if (host_bytes == 0 || a.io_only) return 0.0;
      ThreadPool pool(host_threads);
      if (!host_buf) {
        auto b = HostReadBuffer::make(pool, 2ull << 30);
        if (!b) {
          std::fprintf(stderr, "bench: host read probe: %s\n", b.error().message.c_str());
          return 0.0;
        }
        host_buf = std::make_unique<HostReadBuffer>(std::move(*b));
      }
      return probe_host_read(pool, *host_buf, 3).median;
    };
    const double host_before = host_once();
    const int32_t V = static_cast<int32_t>(m.config().n_vocab);
    std::vector<std::chrono::steady_clock::time_point> t;
    const int32_t bos = m.tokenizer->bos() >= 0 ? m.tokenizer->bos() : 0;
    std::vector<int32_t> prompt{bos};
    // A longer prompt: bos, then a fixed pseudo-random walk over the vocabulary.
    for (int i = 1; i < a.prompt_tokens; ++i)
      prompt.push_back(static_cast<int32_t>((1000003ull * i + 12345) % static_cast<uint64_t>(V)));
    Status rs = ok();
    const int width = static_cast<int>(std::max<uint32_t>(1, o.n_seq));
    // `width` sequences at once, each its own walk after bos; each token's
    // time per sequence in tok_t. A first run of the same shape warms the
    // process (lazy module loading, first-use allocations, activations for
    // the width); the second one is timed. A one-token prompt too, so that
    // rows of different prompt lengths are measured alike.
    std::vector<std::vector<std::chrono::steady_clock::time_point>> tok_t(width);
    // Bytes moved at the window's start and end (the first sequence to
    // finish closes it: the steps after it are narrower).
    MovedBytes moved0, moved_end;
    std::atomic<bool> window_closed{false};
    // Prompts are prefilled in chunks beside the decoding sequences, so the
    // first sequences decode while the last still prefill. Each sequence goes
    // on until -n steps have run with every sequence decoding (counted from
    // the last one's first token): the timed window then holds -n steps of
    // the full width, whatever the width and the prompt length.
    std::atomic<int> n_started{0};
    auto run_seqs = [&](bool timed) -> Status {
      std::vector<std::future<SeqEnd>> futs;
      std::vector<int> after_all(width, 0);  // tokens since every sequence decodes
      n_started = 0;
      window_closed = false;
      for (int w = 0; w < width; ++w) {
        SeqRequest r;
        r.prompt = prompt;
        for (size_t i = 1; i < r.prompt.size(); ++i)
          r.prompt[i] = static_cast<int32_t>((1000003ull * i + 12345 + 7919ull * w) %
                                             static_cast<uint64_t>(V));
        auto* times = &tok_t[w];
        // Greedy: the argmax is taken where the logits are (on the GPU with
        // --backend cuda), as decode does; cb serves the steps it is not.
        auto next = [&, times, timed, w](int32_t best) -> std::optional<int32_t> {
          if (!timed) return std::nullopt;
          times->push_back(std::chrono::steady_clock::now());
          if (times->size() == 1 && n_started.fetch_add(1) + 1 == width) moved0 = moved_bytes(e);
          if (n_started.load() == width && ++after_all[w] >= a.steps) {
            if (!window_closed.exchange(true)) moved_end = moved_bytes(e);
            return std::nullopt;
          }
          if (a.io_only) return bos;
          return best;
        };
        r.cb = [next, V](int64_t, const float* l, int32_t rows_n) -> std::optional<int32_t> {
          return next(greedy_argmax(l + static_cast<size_t>(rows_n - 1) * V, static_cast<size_t>(V)));
        };
        r.on_argmax = [next](int64_t, int32_t best) { return next(best); };
        std::promise<SeqEnd> done;
        futs.push_back(done.get_future());
        auto id = e.pipeline().submit(std::move(r), std::move(done));
        if (!id) return id.error();
      }
      for (auto& f : futs) {
        auto end = e.pipeline().wait(f);
        if (!end) return end.error();
        // A sequence the key/value pool could not hold: the window would be short of it.
        if (!end->error.empty()) return make_error("bench --batch: %s", end->error.c_str());
      }
      return ok();
    };
    rs = run_seqs(false);
    const auto t_start = std::chrono::steady_clock::now();
    if (rs.ok()) rs = run_seqs(true);
    // The window where every sequence decodes: from the last first token to
    // the first last one; the rate counts every sequence's tokens in it.
    if (rs.ok()) {
      auto t0 = tok_t[0].empty() ? t_start : tok_t[0].front();
      auto t1 = tok_t[0].empty() ? t_start : tok_t[0].back();
      for (const auto& v : tok_t)
        if (!v.empty()) t0 = std::max(t0, v.front()), t1 = std::min(t1, v.back());
      size_t in_window = 0;
      for (const auto& v : tok_t)
        for (const auto& x : v) in_window += x > t0 && x <= t1;
      // The window's start, then sequence 0's steps inside it: the steady
      // state the bytes (moved0 is read at the start, moved_end at the end)
      // and the rates are counted over. Sequence 0's token of the step that
      // opens the window comes just before t0, so t0 itself is the first
      // mark: one step per later token.
      if (width > 1) t.push_back(t0);
      for (const auto& x : tok_t[0])
        if (width > 1 ? x > t0 && x <= t1 : true) t.push_back(x);
      if (t1 > t0) {
        row.width_tok_s =
            static_cast<double>(in_window) / std::chrono::duration<double>(t1 - t0).count();
      }
    }
    if (!t.empty() && a.prompt_tokens > 1) {  // every prompt, to the last first token
      auto last_first = t.front();
      for (const auto& v : tok_t)
        if (!v.empty()) last_first = std::max(last_first, v.front());
      row.prefill_tok_s = static_cast<double>(a.prompt_tokens) * width /
                          std::chrono::duration<double>(last_first - t_start).count();
    }
    const StallTable table = e.tracer().stall_table();
    const MovedBytes moved1 = window_closed ? moved_end : moved_bytes(e);
    Status fin = e.finish();
    if (run_bytes > 0) after = probe_once(e, o.source, probe_steps);
    if (pcie) h2d_after = h2d_once();
    const double host_after = host_once();
    if (!rs.ok() || t.size() < 2) {
      row.error = rs.ok() ? "too few steps" : rs.error().message;
      rows.push_back(row);
      std::fprintf(stderr, "bench: %s\n", row.error.c_str());
      continue;
    }
    // Steady state: from the first step's logits to the last.
    const double secs = std::chrono::duration<double>(t.back() - t.front()).count();
    const double steps = static_cast<double>(t.size() - 1);
    // Tokens/s in all: a step gives one token to each sequence.
    row.tok_s = width > 1 && row.width_tok_s > 0 ? row.width_tok_s : steps / secs;
    row.per_seq_tok_s = row.tok_s / width;
    // Bytes a step streams and the CPU tier reads: the plan's, or, where the
    // plan was re-planned as it ran, what the steps measured moved.
    double streamed_step = static_cast<double>(e.plan().streamed_bytes_per_step);
    double host_step = static_cast<double>(host_bytes);
    if (e.pipeline().balancer() && moved1.copy >= moved0.copy && moved1.cpu >= moved0.cpu) {
      streamed_step = static_cast<double>(moved1.copy - moved0.copy) / steps;
      host_step = static_cast<double>(moved1.cpu - moved0.cpu) / steps;
    }
    row.storage_gbps = e.plan().storage_bytes_per_step * steps / secs / 1e9;
    row.streamed_gbps = streamed_step * steps / secs / 1e9;
    row.probe_gbps = before > 0 && after > 0 ? (before + after) / 2 : 0;
    row.ratio = row.probe_gbps > 0 ? row.storage_gbps / row.probe_gbps : 0;
    // The link's ceiling is the best pass of the two probes: a pass is only
    // ever slowed by something else on the machine (the 70b at width 32 on an
    // H100 machine, session 36: the probes' mean read 45.4 GB/s while the
    // run itself streamed 50.4, a "bound" at 110 %).
    row.h2d_gbps = h2d_before > 0 && h2d_after > 0 ? std::max(h2d_before, h2d_after) : 0;
    row.pcie_ratio = row.h2d_gbps > 0 ? row.streamed_gbps / row.h2d_gbps : 0;
    row.host_gbps = host_step * steps / secs / 1e9;
    row.host_probe_gbps = host_before > 0 && host_after > 0 ? (host_before + host_after) / 2 : 0;
    row.host_ratio = row.host_probe_gbps > 0 ? row.host_gbps / row.host_probe_gbps : 0;
    {
      // Seconds per token each link needs at its measured rate; the slower bounds.
      double need = 0;
      if (row.h2d_gbps > 0) need = std::max(need, streamed_step / (row.h2d_gbps * 1e9));
      if (row.probe_gbps > 0)
        need = std::max(need, e.plan().storage_bytes_per_step / (row.probe_gbps * 1e9));
      if (row.host_probe_gbps > 0) need = std::max(need, host_step / (row.host_probe_gbps * 1e9));
#ifdef LS_HAVE_CUDA
      // Device memory, where every layer is resident on the GPU: the decode
      // steps' mean position is the prompt plus half the steps.
      if (std::string(e.backend_name()) == "cuda" && !a.io_only &&
          e.plan().n_resident == static_cast<int32_t>(m.config().n_layer)) {
        const DeviceStep d = device_bytes_per_step(
            m, o.kv_type, a.prompt_tokens + 0.5 * static_cast<double>(a.steps), width);
        auto r = probe_d2d(1ull << 30, 5);
        if (r) {
          row.d2d_gbps = r->median;
          row.device_step_bytes = d.weights + d.kv;
          row.device_kv_bytes = d.kv;
          need = std::max(need, row.device_step_bytes / (row.d2d_gbps * 1e9));
        } else {
          std::fprintf(stderr, "bench: D2D probe: %s\n", r.error().message.c_str());
        }
      }
#endif
      // A step moves the same bytes whatever the width: `width` tokens each.
      row.bound_tok_s = need > 0 ? width / need : 0;
      row.bound_ratio = row.bound_tok_s > 0 ? row.tok_s / row.bound_tok_s : 0;
    }
    row.bound = table.bound;
    row.source = e.pipeline().source_name();
    row.cpu_layers = std::to_string(e.plan().n_cpu);
    if (const HybridBalancer* hb = e.pipeline().balancer(); hb && hb->n_cpu() != e.plan().n_cpu)
      row.cpu_layers += "->" + std::to_string(hb->n_cpu());
    // Wider steps keep only part of them on the CPU (model/width_routing.h).
    if (const WidthRouting* wr = e.pipeline().routing(); wr && width > 1)
      row.cpu_layers += ", " + std::to_string(wr->cpu_layers(WidthRouting::bucket(width))) +
                        " at width " + std::to_string(width);
    rows.push_back(row);
    (void)fin;
  }
  std::string probe_desc;
  if (!all_probes.empty()) {
    std::vector<double> v = all_probes;
    std::sort(v.begin(), v.end());
    char buf[400];
    std::snprintf(buf, sizeof buf,
                  "%s, the reader alone: the run's own layer ranges, whole, as many in flight as "
                  "staging buffers, right before and after each run; all passes: "
                  "median %.2f, min %.2f, max %.2f GB/s",
                  probe_how.c_str(), v[v.size() / 2], v.front(), v.back());
    probe_desc = buf;
  } else if (!probe_error.empty()) {
    probe_desc = "probe failed: " + probe_error;
  }

  // The table.
  std::printf("\n");
  if (!probe_desc.empty())
    std::printf("storage bound (probe, same run): %s\n\n", probe_desc.c_str());
  for (const Row& r : rows)
    if (r.d2d_gbps > 0) {
      std::printf(
          "device memory bound (probe, same run): D2D copy %.0f GB/s (read + written) over %.3f GB "
          "a step (the resident layers and head, and %.3f GB of K and V at the steps' mean "
          "position): the link bound column\n\n",
          r.d2d_gbps, r.device_step_bytes / 1e9, r.device_kv_bytes / 1e9);
      break;
    }
  std::string head = "|", rule = "|";
  for (const auto& [name, values] : grid) {
    head += " " + name + " |";
    rule += "---|";
  }
  const bool show_prefill = a.prompt_tokens > 1;
  if (show_prefill) {
    head += " prefill tok/s (" + std::to_string(a.prompt_tokens) + " tokens) |";
    rule += "---|";
  }
  bool show_per_seq = false;
  for (const auto& g : grid) show_per_seq |= g.first == "batch";
  if (show_per_seq) {
    head += " tok/s per sequence |";
    rule += "---|";
  }
  head +=
      " tok/s | storage GB/s | probe GB/s | ratio to probe | streamed GB/s | H2D probe GB/s |"
      " ratio to H2D | host GB/s | host probe GB/s | ratio to host | link bound tok/s |"
      " ratio to link bound | stall-table bound | CPU layers |";
  rule += "---|---|---|---|---|---|---|---|---|---|---|---|---|---|";
  std::printf("%s\n%s\n", head.c_str(), rule.c_str());
  size_t best = 0;
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].tok_s > rows[best].tok_s) best = i;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    std::string line = "|";
    for (const auto& [name, values] : grid) line += " " + r.settings.at(name) + " |";
    if (show_prefill) {
      char p[64];
      std::snprintf(p, sizeof p, " %.1f |", r.prefill_tok_s);
      line += p;
    }
    if (show_per_seq) {
      char p[64];
      std::snprintf(p, sizeof p, " %.3f |", r.per_seq_tok_s);
      line += p;
    }
    char buf[768], ratio[32] = "-", pratio[32] = "-", bratio[32] = "-", hratio[32] = "-";
    if (r.host_ratio > 0) std::snprintf(hratio, sizeof hratio, "%.1f%%", 100.0 * r.host_ratio);
    if (r.ratio > 0) std::snprintf(ratio, sizeof ratio, "%.1f%%", 100.0 * r.ratio);
    if (r.pcie_ratio > 0) std::snprintf(pratio, sizeof pratio, "%.1f%%", 100.0 * r.pcie_ratio);
    if (r.bound_ratio > 0) std::snprintf(bratio, sizeof bratio, "%.1f%%", 100.0 * r.bound_ratio);
    if (!r.error.empty())
      std::snprintf(buf, sizeof buf, " error: %s | | | | | | | | | | | | | |", r.error.c_str());
    else
      std::snprintf(buf, sizeof buf,
                    " %.3f%s | %.3f | %.3f | %s | %.3f | %.2f | %s | %.2f | %.2f | %s | %.3f | %s "
                    "| %s | %s |",
                    r.tok_s, i == best && rows.size() > 1 ? " (best)" : "", r.storage_gbps,
                    r.probe_gbps, ratio, r.streamed_gbps, r.h2d_gbps, pratio, r.host_gbps,
                    r.host_probe_gbps, hratio, r.bound_tok_s, bratio, r.bound.c_str(),
                    r.cpu_layers.c_str());
    std::printf("%s%s\n", line.c_str(), buf);
  }
  if (!a.json.empty()) {
    nlohmann::json j;
    j["model"] = a.engine.model;
    j["io_only"] = a.io_only;
    j["steps"] = a.steps;
    j["storage_probe"] = probe_desc;
    j["rows"] = nlohmann::json::array();
    for (const Row& r : rows)
      j["rows"].push_back({{"settings", r.settings},
                           {"tok_s", r.tok_s},
                           {"storage_gbps", r.storage_gbps},
                           {"probe_gbps", r.probe_gbps},
                           {"streamed_gbps", r.streamed_gbps},
                           {"ratio_to_storage_bound", r.ratio},
                           {"h2d_probe_gbps", r.h2d_gbps},
                           {"ratio_to_h2d", r.pcie_ratio},
                           {"host_gbps", r.host_gbps},
                           {"host_probe_gbps", r.host_probe_gbps},
                           {"ratio_to_host", r.host_ratio},
                           {"d2d_probe_gbps", r.d2d_gbps},
                           {"device_bytes_per_step", r.device_step_bytes},
                           {"link_bound_tok_s", r.bound_tok_s},
                           {"ratio_to_link_bound", r.bound_ratio},
                           {"prompt_tokens", a.prompt_tokens},
                           {"prefill_tok_s", r.prefill_tok_s},
                           {"per_seq_tok_s", r.per_seq_tok_s},
                           {"bound", r.bound},
                           {"cpu_layers", r.cpu_layers},
                           {"source", r.source},
                           {"error", r.error}});
    std::ofstream out(a.json);
    out << j.dump(1) << "\n";
    if (!out) {
      std::fprintf(stderr, "error: %s: cannot write\n", a.json.c_str());
      return 1;
    }
  }
  for (const Row& r : rows)
    if (!r.error.empty()) return 1;
  return 0;
}

}  // namespace

Command add_bench(CLI::App& app) {
  auto* sub = app.add_subcommand("bench", "Run the pipeline over a grid of settings");
  auto a = std::make_shared<BenchArgs>();
  add_engine_flags(sub, a->engine, a->text);
  sub->add_option(
      "--sweep", a->sweeps,
      "NAME=v1,v2,... over depth, staging, slots, qd, chunk, threads, tiers, cpu (--cpu-layers), "
      "batch (sequences at once) (repeatable)");
  sub->add_option_function<std::string>(
      "--batch", [a](const std::string& v) { a->sweeps.push_back("batch=" + v); },
      "Sequences decoded at once, e.g. 1,8,32 (--sweep batch=...): tok/s in all, per sequence, "
      "and the bound at each width");
  sub->add_option("-n,--steps", a->steps, "Decode steps per setting (the first fills the pipeline)")
      ->capture_default_str();
  sub->add_option("--prompt-tokens", a->prompt_tokens,
                  "Prompt length (a warm-up request of the same shape runs first); > 1 also times "
                  "its prefill")
      ->capture_default_str();
  sub->add_flag("--io-only", a->io_only, "Skip the kernels: measure the pipeline's own ceiling");
  sub->add_option("--json", a->json, "Also write the results as JSON to this file");
  sub->add_option("--probe-passes", a->probe_passes, "Probe passes before and after each run")
      ->capture_default_str();
  return [a] { return run_bench(*a); };
}

}  // namespace ls
