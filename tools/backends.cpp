// make_tool_backend, tool_device_memory: see backends.h. LS_HAVE_CUDA is
// defined (PUBLIC) by the layerstream_cuda target, which the CLI links in CUDA builds.
#include "tools/backends.h"

#include <cstdio>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "actors/layer_memory.h"
#include "model/cpu_backend.h"

#ifdef LS_HAVE_CUDA
#include <cuda_runtime.h>

#include "model/cuda_backend.h"
#include "runtime/probe_gpu.h"
#endif

namespace ls {

namespace {
#ifdef LS_HAVE_CUDA
// Whether this run goes to the GPU: cuda, or auto with a device.
Expected<bool> wants_cuda(const EngineOptions& opt) {
  if (opt.backend == "cuda") {
    if (cuda_device_count() == 0)
      return make_error("--backend cuda: no CUDA device found on this machine");
    return true;
  }
  return opt.backend == "auto" && cuda_device_count() > 0;
}

CudaBackendOptions cuda_options(const EngineOptions& opt) {
  CudaBackendOptions co;
  co.n_ctx = opt.n_ctx;
  co.n_seq = std::max<uint32_t>(1, opt.n_seq);
  co.max_batch = opt.ubatch;
  co.act_q8 = opt.cpu_act == CpuAct::Q8;
  co.kv_type = opt.kv_type;
  co.kv_blocks = opt.kv_blocks;  // 0: n_seq x n_ctx positions' worth
  // LS_HIDDEN_READ=copy: CudaBackendOptions::hidden_by_kernel off (A/B).
  const char* hr = std::getenv("LS_HIDDEN_READ");
  co.hidden_by_kernel = !(hr && std::strcmp(hr, "copy") == 0);
  if (hr && *hr && co.hidden_by_kernel && std::strcmp(hr, "kernel") != 0)
    std::fprintf(stderr, "LS_HIDDEN_READ=%s: want kernel or copy; using kernel\n", hr);
  // LS_STEP_INPUTS=copy: CudaBackendOptions::inputs_by_kernel off (A/B).
  const char* si = std::getenv("LS_STEP_INPUTS");
  co.inputs_by_kernel = !(si && std::strcmp(si, "copy") == 0);
  if (si && *si && co.inputs_by_kernel && std::strcmp(si, "kernel") != 0)
    std::fprintf(stderr, "LS_STEP_INPUTS=%s: want kernel or copy; using kernel\n", si);
  return co;
}
#endif
}  // namespace

Expected<std::optional<DeviceMemory>> tool_device_memory(const Model& m, const EngineOptions& opt) {
#ifdef LS_HAVE_CUDA
  auto want = wants_cuda(opt);
  if (!want) return want.error();
  if (!*want) return std::optional<DeviceMemory>();
  auto info = cuda_memory_info();
  if (!info) return info.error();
  DeviceMemory d;
  cudaDeviceProp prop{};
  d.device = "cuda:0";
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) d.device += std::string(" ") + prop.name;
  d.free_bytes = info->first;
  d.total_bytes = info->second;
  CudaBackendOptions co = cuda_options(opt);
  co.n_ctx = opt.n_ctx ? opt.n_ctx : std::min<uint32_t>(m.config().n_ctx_train, 4096);
  co.token_embd_on_device = false;  // the planner places it (token_embd_bytes)
  for (const CudaReserve& r : cuda_reserves(m, co)) d.reserves.push_back({r.what, r.bytes});
  const LlamaWeights& w = m.info.weights;
  if (w.token_embd != w.output) d.token_embd_bytes = w.token_embd->bytes;
  return std::optional<DeviceMemory>(std::move(d));
#else
  (void)m;
  if (opt.backend == "cuda")
    return make_error("--backend cuda: this build has no CUDA (configured without nvcc); use cpu");
  return std::optional<DeviceMemory>();
#endif
}

Expected<HybridRates> tool_calibrate_hybrid(const Model& m, const EngineOptions& opt,
                                            const TierPlan& draft) {
#ifdef LS_HAVE_CUDA
  // The largest and the smallest RAM-tier layer (Q4_K_M mixes give some
  // layers Q6_K tensors, which the CPU computes at another rate per byte).
  int32_t layer = -1, small = -1;
  for (size_t l = 0; l < draft.layer_tier.size(); ++l) {
    if (draft.layer_tier[l] != Tier::Ram) continue;
    const uint64_t b = m.map.layers[l].range_bytes;
    if (layer < 0 || b > m.map.layers[layer].range_bytes) layer = static_cast<int32_t>(l);
    if (small < 0 || b < m.map.layers[small].range_bytes) small = static_cast<int32_t>(l);
  }
  if (layer < 0) return make_error("--cpu-layers auto: the plan streams no RAM-tier layer");
  const int threads = hybrid_cpu_threads(opt);  // as the run's CPU tier
  // The activations the run will use: the CPU tier's rate depends on them.
  CpuBackend cpu(m.config(), m.globals(), 8, 1, KvType::F16, threads, opt.cpu_act, opt.cpu_tuning);
  Batch b;
  b.add(0, 0, 0, false);
  // Each layer timed where the run keeps it: packed in page-aligned host
  // memory (LayerMemory), not in the mapped file, whose page-cache pages
  // the CPU reads more slowly (a calibration from the file picked too few
  // CPU layers).
  struct Held {
    int32_t layer;
    uint8_t* p;
    LayerView v;
  };
  std::vector<Held> held;
  for (int32_t l : {layer, small}) {
    if (!held.empty() && held[0].layer == l) continue;
    const LayerExtent& e = m.map.layers[static_cast<size_t>(l)];
    const LayerLayout lay = layer_layout(e, 4096);
    uint8_t* p =
        static_cast<uint8_t*>(std::aligned_alloc(4096, (lay.packed_bytes + 4095) / 4096 * 4096));
    if (!p) return make_error("--cpu-layers auto: cannot allocate a layer's copy");
    for (size_t k = 0; k < e.ranges.size(); ++k)
      std::memcpy(p + lay.packed[k], m.file->base() + e.ranges[k].offset, e.ranges[k].bytes);
    held.push_back(
        {l, p, packed_layer_view(m.info.weights.layers[static_cast<size_t>(l)], e, lay, p)});
  }
  struct FreeHeld {
    std::vector<Held>& h;
    ~FreeHeld() {
      for (Held& x : h) std::free(x.p);
    }
  } free_held{held};
  std::atomic<bool> started{false}, stop{false};
  Expected<double> h2d = 0.0;
  std::thread copies([&] { h2d = probe_h2d_until(512ull << 20, started, stop); });
  while (!started.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // The layers in turn, 13 timed reps each after an untimed one (which
  // warms the caches and the pool), the median of each. Before 2026-12-04
  // it was 6 reps of one layer and then of the other: on the H200 machine
  // that read the CPU at 53 GB/s in one run and 88 in the next (so 21 and
  // 26 CPU layers), where the runs' steps computed a layer at about 71
  // (bench/results/raw-2026-12-04-s27/call3, call4): more reps, spread
  // over twice the time, for a rate that comes and goes with the host's
  // other work. The reps' spread goes into the plan's line.
  constexpr int kReps = 14;
  std::vector<std::vector<double>> t(held.size());
  Status st = ok();
  for (int rep = 0; rep < kReps && st.ok(); ++rep)
    for (size_t i = 0; i < held.size() && st.ok(); ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      st = cpu.begin(b);
      if (st.ok()) st = cpu.layer(static_cast<uint32_t>(held[i].layer), held[i].v);
      if (rep > 0)
        t[i].push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  double cpu_bytes = 0, cpu_secs = 0;
  for (size_t i = 0; i < held.size() && st.ok(); ++i) {
    std::sort(t[i].begin(), t[i].end());
    cpu_bytes += static_cast<double>(m.map.layers[static_cast<size_t>(held[i].layer)].range_bytes);
    cpu_secs += t[i][t[i].size() / 2];
  }
  // The largest layer at 8 tokens too (5 timed reps after an untimed one,
  // still beside the copies): how the CPU's cost grows with a step's width,
  // where its kernels stop being bound by memory. The width routing starts
  // the widths it has not stepped from it (WidthRouting::Options::
  // cpu_ratio_8), not from 8x the width-1 time.
  double ratio_8 = 0;
  if (st.ok()) {
    Batch b8;
    for (int32_t p = 0; p < 8; ++p) b8.add(0, p, 0, false);
    std::vector<double> t8;
    for (int rep = 0; rep < 6 && st.ok(); ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      st = cpu.begin(b8);
      if (st.ok()) st = cpu.layer(static_cast<uint32_t>(held[0].layer), held[0].v);
      if (rep > 0)
        t8.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    if (st.ok()) {
      std::sort(t8.begin(), t8.end());
      ratio_8 = t8[t8.size() / 2] / t[0][t[0].size() / 2];
    }
  }
  stop.store(true);
  copies.join();
  if (!st.ok()) return st.error();
  if (!h2d) return h2d.error();
  HybridRates r;
  const double bytes = static_cast<double>(m.map.layers[layer].range_bytes);
  r.cpu_bytes_per_s = cpu_bytes / cpu_secs;
  r.cpu_rep_min_s = t[0].front();
  r.cpu_rep_max_s = t[0].back();
  r.cpu_ratio_8 = ratio_8;
  r.copy_bytes_per_s = *h2d * 1e9;
  // The GPU's part of the chain: the same layer resident on the device, a
  // step of one layer and a step of five, each timed to its logits (finish
  // synchronises). The difference is four layers; the rest of the one-layer
  // step is the head, the embedding and the step's own overhead.
  CudaBackendOptions co = cuda_options(opt);
  co.n_ctx = 8;
  co.kv_blocks = 0;  // one block a slot: --kv-blocks sizes the run's pool, not this one's
  co.max_batch = 1;
  co.resident.assign(m.config().n_layer, 0);
  co.resident[layer] = 1;
  co.token_embd_on_device = false;
  auto gpu = CudaBackend::create(m, co);
  if (!gpu)
    return make_error("--cpu-layers auto: timing a GPU layer: %s", gpu.error().message.c_str());
  const std::optional<LayerView> lv = (*gpu)->resident_layer(static_cast<uint32_t>(layer));
  if (!lv) return make_error("--cpu-layers auto: layer %d is not on the device", layer);
  std::vector<float> logits(m.config().n_vocab);
  Batch bl;
  bl.add(0, 0, 0, true);
  auto gpu_step = [&](int layers) -> Expected<double> {
    const auto t0 = std::chrono::steady_clock::now();
    LS_TRY((*gpu)->begin(bl));
    for (int i = 0; i < layers; ++i) LS_TRY((*gpu)->layer(static_cast<uint32_t>(layer), *lv));
    LS_TRY((*gpu)->finish(logits.data()));
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  std::vector<double> one, five;
  for (int rep = 0; rep < 4; ++rep) {  // the first loads the kernels: untimed
    auto a = gpu_step(1);
    auto b5 = gpu_step(5);
    if (!a) return a.error();
    if (!b5) return b5.error();
    if (rep > 0) one.push_back(*a), five.push_back(*b5);
  }
  std::sort(one.begin(), one.end());
  std::sort(five.begin(), five.end());
  const double per_layer = std::max(1e-6, (five[1] - one[1]) / 4);
  r.gpu_bytes_per_s = bytes / per_layer;
  r.gpu_step_s = std::max(0.0, one[1] - per_layer);
  return r;
#else
  (void)m, (void)opt, (void)draft;
  return make_error("--cpu-layers auto needs the CUDA backend (this build has none)");
#endif
}

Expected<std::unique_ptr<Backend>> make_tool_backend(const Model& m, const EngineOptions& opt,
                                                     const TierPlan& plan) {
#ifdef LS_HAVE_CUDA
  auto want = wants_cuda(opt);
  if (!want) return want.error();
  if (*want) {
    CudaBackendOptions co = cuda_options(opt);
    co.resident.resize(plan.layer_tier.size());
    for (size_t l = 0; l < plan.layer_tier.size(); ++l)
      co.resident[l] = plan.layer_tier[l] == Tier::Resident;
    co.token_embd_on_device = plan.token_embd_on_device;
    auto be = CudaBackend::create(m, co);
    if (!be) return be.error();
    return std::unique_ptr<Backend>(std::move(*be));
  }
#else
  (void)plan;
  if (opt.backend == "cuda")
    return make_error("--backend cuda: this build has no CUDA (configured without nvcc); use cpu");
#endif
  return make_cpu_backend(m, opt);
}

}  // namespace ls
