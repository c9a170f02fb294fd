// The flags every command that runs the engine shares (decode, bench): the
// model, backend and threads, the budgets and tiers, the pipeline's tuning,
// the reader, tracing.
// defines: add_engine_flags(), finish_engine_flags(), fail()
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include <CLI/CLI.hpp>

#include "actors/engine.h"
#include "tools/backends.h"
#include "runtime/units.h"

namespace ls {

// Flags given as text and checked after parsing.
struct EngineFlagText {
  std::string kv_type = "f16";
  std::string read_chunk = "1MiB";
  std::string cpu_layers = "auto";
  std::string cpu_act = "q8";
  std::string cpu_tuning;
};

inline void add_engine_flags(CLI::App* sub, EngineOptions& o, EngineFlagText& text) {
  sub->add_option("-m,--model", o.model,
                  "GGUF model (default: the trained KJV target beside the binary, "
                  "layerstream-default.gguf)");
  sub->add_option("--backend", o.backend, "cpu, cuda or auto")->capture_default_str();
  sub->add_option("-t,--threads", o.threads, "CPU threads (default: the CPUs this process may use: affinity, cgroup quota)");
  sub->add_option("--act", text.cpu_act,
                  "Decode matmul activations, CPU and GPU: q8 (int8 dot products, fast) or f32 "
                  "(exact, the oracle)")
      ->capture_default_str();
  sub->add_option("--cpu-tuning", text.cpu_tuning,
                  "CPU matmul work split and prefetch, e.g. tasks=2,pf=1,hint=0: ranges start "
                  "at a 1/(threads*tasks) share, pf rows prefetched ahead into cache level hint "
                  "(0 L1, 1 L2, 2 L3, 3 non-temporal)");
  sub->add_option("-c,--ctx-size", o.n_ctx,
                  "Context size per sequence (0: the model's, at most 4096)")
      ->capture_default_str();
  sub->add_option("--parallel", o.n_seq,
                  "Sequences decoded at once, each up to -c positions in the shared key/value "
                  "pool (--kv-blocks; continuous batching: more wait for a free one)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 256u));
  sub->add_option("--kv-type", text.kv_type, "KV cache type: f16 or f32")->capture_default_str();
  sub->add_option("--kv-blocks", o.kv_blocks,
                  "Blocks of 16 positions in the paged KV cache, shared by all sequences (0: "
                  "--parallel x -c positions' worth). A sequence joins when its prompt fits; "
                  "one that finds no free block as it grows ends with 'kv cache full'")
      ->capture_default_str();
  sub->add_option("--vram-budget", o.vram_budget,
                  "Device memory for the run, e.g. 24GiB (default: what the device has; CPU: all)");
  sub->add_option("--ram-budget", o.ram_budget,
                  "Host memory for RAM-tier layers and staging, e.g. 48GiB (default: available)");
  sub->add_option("--skip-layers", o.skip_layers,
                  "Leave layers out: a list (5,8 or 4-6), or auto:N, the N layers that change "
                  "the hidden state least by the model's calibration (layerstream calibrate)");
  sub->add_option("--tiers", o.tiers,
                  "Force tiers per layer: A resident, H computed on the CPU, B RAM, C storage "
                  "(e.g. AAHBHB, or C "
                  "for all)");
  sub->add_option("--cpu-layers", text.cpu_layers,
                  "Non-resident layers the CPU computes from RAM, spread between the streamed "
                  "ones; auto: balanced from the CPU and copy rates measured at load, then "
                  "re-planned between decode steps from what they measure; 0: off")
      ->capture_default_str();
  sub->add_option("--ubatch-size", o.ubatch,
                  "The most tokens a step holds, and what the plan reserves device activations "
                  "for: a longer prompt goes in steps of this many tokens (at least --parallel; "
                  "not given, a streamed plan widens it into the device memory its layers "
                  "left, up to 4096)")
      ->each([&o](const std::string&) { o.ubatch_set = true; })
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 20));
  sub->add_option(
         "--depth", o.depth,
         "Layers planned ahead of compute, a run of resident ones counting as one "
         "(0: 4, or when the CPU computes layers 16 past the longest run of resident ones)")
      ->capture_default_str();
  sub->add_option("--staging-buffers", o.staging_buffers,
                  "Pinned staging buffers for storage reads")
      ->capture_default_str();
  sub->add_option("--device-slots", o.device_slots,
                  "Device slots for streamed layers (0: auto, 3, or 4 with --parallel 32 or more)")
      ->capture_default_str();
  sub->add_option("--reader", o.source.kind,
                  "auto, uring, pread (O_DIRECT), buffered, or vfio (a userspace NVMe driver: "
                  "--nvme, --nvme-lba)")
      ->capture_default_str();
  sub->add_option("--nvme", o.source.nvme,
                  "--reader vfio: the NVMe controller's PCI address (bound to vfio-pci: "
                  "layerstream nvme bind)");
  sub->add_option("--nvme-lba", o.source.nvme_lba,
                  "--reader vfio: the LBA the model was written at, in the namespace's blocks "
                  "(dd bs=BLOCK seek=N)");
  sub->add_option("--read-qd", o.source.queue_depth, "Reads in flight")->capture_default_str();
  sub->add_option("--read-chunk", text.read_chunk, "Bytes per read request (e.g. 1MiB)")
      ->capture_default_str();
  sub->add_option("--trace", o.trace_path, "Write a Chrome trace (Perfetto) to FILE");
  sub->add_flag("--stats", o.stats, "Print the stall table at the end");
  sub->add_option("--watchdog", o.watchdog_s,
                  "Seconds without progress before the stall report (0: off)")
      ->capture_default_str();
}

// "error: MSG" on stderr; returns 1, the exit code of a command that failed.
inline int fail(const std::string& msg) {
  std::fprintf(stderr, "error: %s\n", msg.c_str());
  return 1;
}

// Apply the string flags that need checking.
inline Status finish_engine_flags(EngineOptions& o, const EngineFlagText& text) {
  if (text.kv_type == "f16")
    o.kv_type = KvType::F16;
  else if (text.kv_type == "f32")
    o.kv_type = KvType::F32;
  else
    return make_error("--kv-type must be f16 or f32 (got '%s')", text.kv_type.c_str());
  if (auto a = cpu_act_from_name(text.cpu_act))
    o.cpu_act = *a;
  else
    return make_error("--act must be q8 or f32 (got '%s')", text.cpu_act.c_str());
  auto tune = parse_cpu_tuning(text.cpu_tuning);
  if (!tune) return make_error("--cpu-tuning: %s", tune.error().message.c_str());
  o.cpu_tuning = *tune;
  auto chunk = parse_bytes(text.read_chunk);
  if (!chunk) return make_error("--read-chunk: %s", chunk.error().message.c_str());
  if (*chunk == 0) return make_error("--read-chunk must be more than 0");
  o.source.chunk_bytes = *chunk;
  if (text.cpu_layers == "auto") {
    o.cpu_layers = -1;
  } else {
    char* end = nullptr;
    const long n = std::strtol(text.cpu_layers.c_str(), &end, 10);
    if (text.cpu_layers.empty() || *end != '\0' || n < 0 || n > 100000)
      return make_error("--cpu-layers must be a number of layers or auto (got '%s')",
                        text.cpu_layers.c_str());
    o.cpu_layers = static_cast<int32_t>(n);
  }
  o.calibrate_hybrid = tool_calibrate_hybrid;  // --cpu-layers auto (CUDA builds)
  o.make_backend = make_tool_backend;          // cpu, cuda (CUDA builds) or auto
  o.device_memory = tool_device_memory;        // budgets and reserves from the device
  return ok();
}

}  // namespace ls
