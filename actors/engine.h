// An engine: a model opened, a backend made, its tiers planned, the actor
// pipeline started, tracing and the control plane (Ctrl-C, watchdog) on.
// `decode`, `bench` and the tests drive one through Engine::pipeline().
// defines: EngineOptions, Engine
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/pipeline.h"
#include "kernels/cpu/cpu_act.h"
#include "kernels/cpu/matmul_cpu.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "model/tier_plan.h"
#include "runtime/control_plane.h"
#include "runtime/trace.h"

namespace ls {

struct EngineOptions;

// The device's side of the plan, from the backend that will run it: free
// device memory (cudaMemGetInfo) and the backend's own reserves, each named.
struct DeviceMemory {
  std::string device;  // e.g. "cuda:0 NVIDIA H200"
  uint64_t free_bytes = 0, total_bytes = 0;
  std::vector<PlanLine> reserves;  // KV cache, activations, head, scratch, margin
  uint64_t token_embd_bytes = 0;   // placed by the planner (device or host)
};
// nullopt: the run is on the CPU (no device memory to plan).
using DeviceMemoryProbe =
    std::function<Expected<std::optional<DeviceMemory>>(const Model&, const EngineOptions&)>;
// Makes the compute backend for a run (model, options, the tier plan). Core
// cannot depend on the CUDA library, so tools/ injects the factory that knows
// about CUDA (tools/backends.cpp); without one the engine makes a CpuBackend
// and refuses --backend cuda.
using BackendFactory = std::function<Expected<std::unique_ptr<Backend>>(
    const Model&, const EngineOptions&, const TierPlan&)>;

// Planned-ahead depths that --depth 0 (the default) picks. A hybrid plan
// needs more: its resident and CPU-tier layers hold planning credits too
// (a CPU layer for milliseconds), and with 4 the copier saw only the next
// one or two streamed layers and sat idle across each step's end; on the
// H200 machine, 70b at 24 GiB: 5.22 tok/s at depth 4, 5.78 at 8, 5.75 at 16
// (bench/results/2026-12-01-h200-cpu-tier.md). hybrid_depth() takes more
// where the plan needs it.
constexpr int32_t kDepthStreaming = 4;
constexpr int32_t kDepthHybrid = 16;
// The depth of a hybrid plan: kDepthHybrid past the longest run of
// resident layers (counted round the step's end into the next step's
// start). Every layer of a hybrid plan is a job of its own, the resident
// ones too, so a run of them holds that many credits, and the planner must
// see past it to the next copied layers while this step's last ones are
// computed. The 70b at 24 GiB has 41 resident layers at the start of each
// step: at 16 the copy engine waited through them every step (WidthRouting's
// simulation of session 30's per-layer times: 6.72 -> 6.85 tok/s at width
// 1, 33.4 -> 35.1 at 8, 101.1 -> 106.7 at 32; tests/unit/model/
// test_width_routing.cpp).
int32_t hybrid_depth(const TierPlan& plan);

// Device slots for streamed layers when --device-slots is not given: 3, or
// 4 for 32 sequences at once or more. Wide steps keep a CPU-tier layer
// longer, and a fourth slot lets the copy engine go on a layer further
// meanwhile: the 70b at 24 GiB at width 32, alternated in one call, 93.8
// and 92.6 tok/s with 4 against 88.2 and 90.7 with 3, as the width
// routing's simulation had predicted (103 against 99.5); at width 8 the
// speculative check ran 14.96 against 16.01 with 4
// (bench/results/2026-12-05-s39.md, call 1). The slot costs a resident layer.
int32_t default_device_slots(uint32_t n_seq);

struct EngineOptions {
  std::string model;             // GGUF path (empty: the embedded default model)
  std::string backend = "auto";  // cpu, cuda, auto
  int threads = 0;               // CPU threads (0: all cores)
  CpuAct cpu_act =
      CpuAct::Q8;  // --act: decode matmul activations, both backends (q8 fast, f32 the oracle)
  CpuMatmulTuning cpu_tuning;  // --cpu-tuning: the CPU matmuls' work split and prefetch
  // A CPU pool to compute on, shared with another engine whose steps take
  // turns with this one's (a draft model's: Engine::cpu_pool()); taken where
  // its size is the CPU backend's thread count. Null: a pool of its own.
  // Two pools in one process would each spin idle beside the other's work.
  std::shared_ptr<ThreadPool> cpu_pool;
  uint32_t n_ctx = 0;  // positions per sequence; 0: the model's, at most 4096
  uint32_t n_seq = 1;  // sequences at once (--parallel): key/value slots of n_ctx each
  // Blocks of the paged key/value cache (--kv-blocks, model/kv_blocks.h);
  // 0: n_seq × n_ctx positions' worth (kv_pool_blocks()).
  uint32_t kv_blocks = 0;
  KvType kv_type = KvType::F16;
  std::string vram_budget, ram_budget;  // sizes ("24GiB"); empty: the hardware's (CPU: unlimited)
  // --skip-layers: layers left out of the model (model/layer_skip.h), a list
  // or auto:N from the model's calibration; empty: none.
  std::string skip_layers;
  std::string tiers;  // force per-layer tiers: A resident, H CPU, B RAM, C storage ("AABC..."
                      // or one letter for all)
  // depth: layers planned ahead of compute; 0 picks kDepthStreaming, or
  // hybrid_depth() when the plan has CPU-tier layers. device_slots: 0 picks
  // default_device_slots(n_seq).
  int32_t depth = 0, staging_buffers = 3, device_slots = 0;
  uint32_t ubatch = 512;   // the most tokens a step holds, and what the device's activations
                           // are sized for (--ubatch-size; step_tokens_max)
  bool ubatch_set = false;  // given (--ubatch-size): else a streamed plan's leftover device
                            // memory widens it (widen_step_tokens)
  int32_t cpu_layers = 0;  // layers computed on the CPU from RAM (--cpu-layers; -1: auto)
  SourceOptions source;    // reader: kind, queue depth, chunk size
  bool io_only = false;
  std::string trace_path;  // --trace FILE
  bool stats = false;      // --stats
  int watchdog_s = 10;     // stall watchdog (0: off)
  // SIGINT/SIGTERM stop the run (the control plane); false leaves them to the
  // caller: the server drains its requests first, then stops the run.
  bool handle_signals = true;
  bool print_plan = true;
  BackendFactory make_backend;      // empty: CPU (see BackendFactory)
  DeviceMemoryProbe device_memory;  // empty: CPU planning (see DeviceMemory)
  // --cpu-layers auto: the CPU tier's and the copy engine's rates, measured
  // with both busy at once, for a draft plan (empty: auto means 0).
  std::function<Expected<HybridRates>(const Model&, const EngineOptions&, const TierPlan&)>
      calibrate_hybrid;
};

// Host memory the kernel says is available without swapping (/proc/meminfo
// MemAvailable); 0 when unknown.
uint64_t mem_available_bytes();

// The key/value pool's blocks for these options (n_ctx 0: the model's, at most 4096).
uint32_t kv_pool_blocks(const Model& m, const EngineOptions& opt);

// The CPU backend for these options (the default factory); threads 0: -t or all cores.
std::unique_ptr<Backend> make_cpu_backend(const Model& m, const EngineOptions& opt,
                                          int threads = 0);

// Threads of the CPU tier in a hybrid plan: -t, else all cores but one, which
// stays for the threads that feed the GPU (compute, copier, watchers): a
// kernel launch that waits for a core stalls the GPU for all layers.
int hybrid_cpu_threads(const EngineOptions& opt);

class Engine {
 public:
  static Expected<std::unique_ptr<Engine>> open(EngineOptions opt);
  ~Engine();

  const Model& model() const { return *model_; }
  Pipeline& pipeline() { return *pipeline_; }
  const TierPlan& plan() const { return plan_; }
  RunControl& control() { return rc_; }
  Tracer& tracer() { return *tracer_; }
  const EngineOptions& options() const { return opt_; }
  const char* backend_name() const { return backend_->name(); }
  bool interrupted() const { return control_ && control_->interrupted(); }
  int interrupt_signal() const { return control_ ? control_->signal() : 0; }
  double load_seconds() const { return load_s_; }
  // The pool its CPU layers compute on (the CPU backend's or the hybrid
  // plan's CPU tier's); null: none.
  std::shared_ptr<ThreadPool> cpu_pool() const;
  // Stop the actors, write the trace (--trace) and print the stall table (--stats).
  Status finish();

 private:
  Engine() = default;
  // --stats on a device: the device memory the run took against the plan's count.
  void print_device_taken() const;
  EngineOptions opt_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Backend> cpu_backend_;  // CPU-tier layers (hybrid plans), else null
  TierPlan plan_;
  RunControl rc_;
  std::unique_ptr<Tracer> tracer_;
  std::unique_ptr<ControlPlane> control_;
  std::unique_ptr<Pipeline> pipeline_;
  // Free device memory just before the backend was made (--stats on a
  // device: the device memory the run took is printed against the plan's).
  uint64_t device_free_before_ = 0;
  double load_s_ = 0;
  bool finished_ = false;
};

// The tier plan a run with these options would use (inspect prints it too).
Expected<TierPlan> plan_for(const Model& m, const EngineOptions& opt);

// Parse --tiers: one letter per layer, or one letter for all layers.
Expected<std::vector<Tier>> parse_tiers(const std::string& s, uint32_t n_layer);

}  // namespace ls
