// layerstream probe: measure this machine's ceilings, so that every benchmark
// can print its result as a ratio to them. Storage: O_DIRECT reads of a given
// file at several queue depths (io/probe_storage). GPU: pinned and pageable
// H2D, device memory bandwidth (runtime/probe_gpu.cu, CUDA builds). Host:
// multi-threaded read bandwidth of RAM (runtime/probe_host), the ceiling of
// the CPU compute tier, with all cores and any given thread counts. Cores
// (--cores): which CPUs share a physical core, measured (runtime/probe_cores).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <thread>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/block_source.h"
#include "io/probe_storage.h"
#include "runtime/probe_cores.h"
#include "runtime/probe_host.h"
#include "runtime/thread_pool.h"
#ifdef LS_HAVE_CUDA
#include "model/cuda_backend.h"
#include "runtime/probe_gpu.h"
#endif
#include "tools/commands.h"

namespace ls {
namespace {

// "1MiB", "4M", "512k", "65536", "2GB" -> bytes (K/M/G/T are binary, as in dd).
Expected<uint64_t> parse_bytes(const std::string& s) {
  size_t pos = 0;
  unsigned long long n = 0;
  try {
    n = std::stoull(s, &pos);
  } catch (...) {
    return make_error("'%s' is not a size (e.g. 1MiB, 512KiB, 4096)", s.c_str());
  }
  std::string unit = s.substr(pos);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  uint64_t mul = 1;
  if (unit.empty() || unit == "b")
    mul = 1;
  else if (unit == "k" || unit == "kib" || unit == "kb")
    mul = 1ull << 10;
  else if (unit == "m" || unit == "mib" || unit == "mb")
    mul = 1ull << 20;
  else if (unit == "g" || unit == "gib" || unit == "gb")
    mul = 1ull << 30;
  else if (unit == "t" || unit == "tib" || unit == "tb")
    mul = 1ull << 40;
  else
    return make_error("'%s': unknown size unit '%s' (KiB, MiB, GiB)", s.c_str(), unit.c_str());
  return static_cast<uint64_t>(n) * mul;
}

// ---- GPU measurements (runtime/probe_gpu.cu) ---------------------------------
struct GpuRow {
  std::string what;  // "pinned H2D", "pageable H2D", "device memory (D2D copy, read + write)"
  double gbps_median = 0, gbps_min = 0, gbps_max = 0;
};
bool probe_gpu(std::vector<GpuRow>& rows, std::string& why_not) {
#ifdef LS_HAVE_CUDA
  if (cuda_device_count() == 0) {
    why_not = "no CUDA device";
    return false;
  }
  // 1 GiB per copy: the size of a streamed 70B layer and well past any cache.
  constexpr uint64_t kBytes = 1ull << 30;
  for (int k = 0; k < 3; ++k) {
    auto r = k == 0   ? probe_h2d(kBytes, 5, true)
             : k == 1 ? probe_h2d(kBytes, 3, false)
                      : probe_d2d(kBytes, 10);
    if (!r) {
      why_not = r.error().message;
      return false;
    }
    rows.push_back({r->what, r->median, r->min, r->max});
  }
  return true;
#else
  (void)rows;
  why_not = "this build has no CUDA";
  return false;
#endif
}

// ---- Host memory read bandwidth (runtime/probe_host) ------------------------
// One row per thread count (0 = all cores), on one buffer. Returns false with
// why_not set when the buffer cannot be had.
bool probe_host(const std::string& bytes_arg, std::vector<int> threads, int passes,
                nlohmann::json& j, std::string& why_not) {
  auto bytes = parse_bytes(bytes_arg);
  if (!bytes) {
    why_not = "--host-bytes " + bytes.error().message;
    return false;
  }
  const int all = default_thread_count();
  if (threads.empty()) threads = {0};
  int most = 1;
  for (int& t : threads) {
    if (t <= 0) t = all;
    most = std::max(most, t);
  }
  // The buffer's first touch on a pool gone before anything is timed (an
  // idle pool's workers spin, yielding, for a while after their last job,
  // and take CPUs from the pool being measured).
  auto buf = [&] {
    ThreadPool fill_pool(most);
    return HostReadBuffer::make(fill_pool, *bytes);
  }();
  if (!buf) {
    why_not = buf.error().message;
    return false;
  }
  std::printf("%-34s  %7s  %12s  %8s  %8s\n", "host", "threads", "GB/s median", "min", "max");
  j["bytes"] = buf->bytes();
  j["passes"] = passes;
  j["rows"] = nlohmann::json::array();
  double best = 0;
  for (int t : threads) {
    ThreadPool pool(t);
    const HostBandwidth r = probe_host_read(pool, *buf, passes);
    char what[64];
    std::snprintf(what, sizeof what, "memory read (%.2f GB)", buf->bytes() / 1e9);
    std::printf("%-34s  %7d  %12.2f  %8.2f  %8.2f\n", what, t, r.median, r.min, r.max);
    j["rows"].push_back({{"threads", t},
                         {"gbps_median", r.median},
                         {"gbps_min", r.min},
                         {"gbps_max", r.max},
                         {"gbps_passes", r.gbps}});
    best = std::max(best, r.median);
  }
  j["ceiling_gbps"] = best;
  std::printf("host read ceiling: %.2f GB/s\n", best);
#ifdef LS_HAVE_CUDA
  // The contended pair: the CPU reading RAM while the copy engine reads it
  // too (the hybrid plan runs both at once; they share the DRAM).
  if (cuda_device_count() > 0) {
    const int t = std::max(1, all - 1);  // one core drives the copies
    ThreadPool pool(t);
    std::atomic<bool> started{false}, stop{false};
    Expected<double> h2d = 0.0;
    std::thread copier([&] { h2d = probe_h2d_until(1ull << 30, started, stop); });
    while (!started.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const HostBandwidth r = probe_host_read(pool, *buf, passes);
    stop.store(true);
    copier.join();
    if (h2d) {
      std::printf(
          "contended: host read %.2f GB/s (%d threads, min %.2f max %.2f) while pinned "
          "H2D runs at %.2f GB/s\n",
          r.median, t, r.min, r.max, *h2d);
      j["contended"] = {{"threads", t},
                        {"host_read_gbps_median", r.median},
                        {"host_read_gbps_min", r.min},
                        {"host_read_gbps_max", r.max},
                        {"h2d_gbps", *h2d}};
    } else {
      std::printf("contended: not measured: %s\n", h2d.error().message.c_str());
    }
  }
#endif
  return true;
}

// ---- CPUs sharing a core (runtime/probe_cores) -------------------------------
// Prints the groups and their pairs' ratios; false with why_not set where the
// CPUs cannot be pinned.
bool probe_cores(nlohmann::json& j, std::string& why_not) {
  const size_t n = process_cpus().size();
  std::fprintf(stderr, "probe: --cores: %zu CPUs, about %.1f s (more where cores are shared)\n",
               n, (n + n * (n - 1) / 2.0) * 0.03);
  auto r = probe_core_sharing(30);
  if (!r) {
    why_not = r.error().message;
    return false;
  }
  // The ratios of pairs in one group and of pairs across groups.
  auto group_of = [&](int cpu) {
    for (size_t g = 0; g < r->cores.size(); ++g)
      if (std::find(r->cores[g].begin(), r->cores[g].end(), cpu) != r->cores[g].end())
        return static_cast<int>(g);
    return -1;
  };
  double in_lo = 2, in_hi = 0, out_lo = 2, out_hi = 0;
  for (const CoreSharing::Pair& p : r->pairs) {
    const bool same = group_of(p.a) == group_of(p.b);
    double& lo = same ? in_lo : out_lo;
    double& hi = same ? in_hi : out_hi;
    lo = std::min(lo, p.ratio), hi = std::max(hi, p.ratio);
  }
  std::string groups;
  for (const auto& g : r->cores) {
    groups += " [";
    for (size_t i = 0; i < g.size(); ++i) {
      if (i) groups += ' ';
      groups += std::to_string(g[i]);
    }
    groups += "]";
  }
  if (r->cores.size() == n) {
    std::printf("cores: %zu CPUs, no two sharing a core", n);
    if (out_hi > 0) std::printf(" (a pair kept %.2f-%.2f of its rate alone)", out_lo, out_hi);
    std::printf("\n");
  } else {
    std::printf("cores: %zu CPUs on %zu cores:%s\n", n, r->cores.size(), groups.c_str());
    std::printf("       CPUs of one core kept %.2f-%.2f of their rate alone beside each other",
                in_lo, in_hi);
    if (out_hi > 0) std::printf(", CPUs of two cores %.2f-%.2f", out_lo, out_hi);
    std::printf("\n");
  }
  // The rates alone: a CPU much slower than the others shares its core with
  // work outside this machine's view (a host's other guests, its own threads).
  const auto [lo, hi] = std::minmax_element(r->solo.begin(), r->solo.end());
  std::printf("       each CPU alone: %.0f-%.0f M steps/s (slowest CPU %d at %.2f of the fastest)\n",
              *lo, *hi, r->cpus[static_cast<size_t>(lo - r->solo.begin())], *lo / *hi);
  j["cpus"] = r->cpus;
  j["solo_msteps"] = r->solo;
  j["cores"] = r->cores;
  j["threshold"] = r->threshold;
  j["pairs"] = nlohmann::json::array();
  for (const CoreSharing::Pair& p : r->pairs)
    j["pairs"].push_back({{"a", p.a}, {"b", p.b}, {"ratio", p.ratio}});
  return true;
}

int run_probe(const std::string& file, const std::vector<uint32_t>& qds, const std::string& chunk,
              const std::string& bytes, int passes, const std::string& source,
              const std::string& json_out, const std::string& host_bytes,
              const std::vector<int>& host_threads, int host_passes, bool cores) {
  nlohmann::json j;
  if (!file.empty()) {
    ProbeOptions o;
    o.kind = source;
    o.queue_depths = qds;
    o.passes = passes;
    auto c = parse_bytes(chunk);
    if (!c) {
      std::fprintf(stderr, "probe: --chunk %s\n", c.error().message.c_str());
      return 1;
    }
    o.chunk_bytes = *c;
    if (!bytes.empty()) {
      auto b = parse_bytes(bytes);
      if (!b) {
        std::fprintf(stderr, "probe: --bytes %s\n", b.error().message.c_str());
        return 1;
      }
      o.max_bytes = *b;
    }
    auto r = probe_storage(file, o);
    if (!r) {
      std::fprintf(stderr, "probe: %s\n", r.error().message.c_str());
      return 1;
    }
    std::printf("%s\n", r->source_line.c_str());
    std::printf("storage: %s, %.2f GB file, %d pass(es) of %.2f GB each, chunk %s, %s%s\n",
                file.c_str(), r->file_bytes / 1e9, passes, r->bytes_per_pass / 1e9,
                format_bytes(r->chunk_bytes).c_str(), r->source.c_str(),
                r->direct ? " O_DIRECT" : " buffered");
    if (!r->note.empty()) std::printf("note: %s\n", r->note.c_str());
    std::printf("%6s  %12s  %8s  %8s\n", "qd", "GB/s median", "min", "max");
    for (const ProbeRow& row : r->rows)
      std::printf("%6u  %12.3f  %8.3f  %8.3f\n", row.queue_depth, row.gbps_median, row.gbps_min,
                  row.gbps_max);
    if (const ProbeRow* b = r->best())
      std::printf("storage read ceiling: %.3f GB/s (qd %u)\n", b->gbps_median, b->queue_depth);

    nlohmann::json s;
    s["file"] = file;
    s["file_bytes"] = r->file_bytes;
    s["bytes_per_pass"] = r->bytes_per_pass;
    s["chunk_bytes"] = r->chunk_bytes;
    s["passes"] = passes;
    s["source"] = r->source;
    s["source_line"] = r->source_line;
    s["direct"] = r->direct;
    s["fixed_buffers"] = r->fixed_buffers;
    s["note"] = r->note;
    s["rows"] = nlohmann::json::array();
    for (const ProbeRow& row : r->rows)
      s["rows"].push_back({{"queue_depth", row.queue_depth},
                           {"gbps_median", row.gbps_median},
                           {"gbps_min", row.gbps_min},
                           {"gbps_max", row.gbps_max},
                           {"gbps_passes", row.gbps}});
    if (const ProbeRow* b = r->best()) {
      s["ceiling_gbps"] = b->gbps_median;
      s["ceiling_queue_depth"] = b->queue_depth;
    }
    j["storage"] = s;
  } else {
    std::printf("storage: not measured (give --file F, e.g. the model)\n");
    j["storage"] = nullptr;
  }

  std::string why_not;
  if (host_bytes == "0") {
    std::printf("host: not measured (--host-bytes 0)\n");
    j["host"] = nullptr;
  } else {
    nlohmann::json h;
    if (probe_host(host_bytes, host_threads, host_passes, h, why_not)) {
      j["host"] = h;
    } else {
      std::printf("host: %s\n", why_not.c_str());
      j["host"] = nullptr;
    }
  }

  if (cores) {
    nlohmann::json c;
    if (probe_cores(c, why_not)) {
      j["cores"] = c;
    } else {
      std::fprintf(stderr, "probe: --cores: %s\n", why_not.c_str());
      return 1;
    }
  }

  std::vector<GpuRow> gpu;
  if (probe_gpu(gpu, why_not)) {
    std::printf("%-34s  %12s  %8s  %8s\n", "gpu", "GB/s median", "min", "max");
    j["gpu"] = nlohmann::json::array();
    for (const GpuRow& g : gpu) {
      std::printf("%-34s  %12.2f  %8.2f  %8.2f\n", g.what.c_str(), g.gbps_median, g.gbps_min,
                  g.gbps_max);
      j["gpu"].push_back({{"what", g.what},
                          {"gbps_median", g.gbps_median},
                          {"gbps_min", g.gbps_min},
                          {"gbps_max", g.gbps_max}});
    }
  } else {
    std::printf("gpu: %s\n", why_not.c_str());
    j["gpu"] = nullptr;
  }

  if (!json_out.empty()) {
    std::ofstream f(json_out);
    f << j.dump(2) << "\n";
    if (!f) {
      std::fprintf(stderr, "probe: cannot write %s\n", json_out.c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace

Command add_probe(CLI::App& app) {
  auto* sub = app.add_subcommand("probe",
                                 "Measure this machine's ceilings: storage read, host memory, GPU");
  struct Args {
    std::string file, chunk = "1MiB", bytes, source = "auto", json, host_bytes = "2GiB";
    std::vector<uint32_t> qd = {1, 4, 16, 32};
    std::vector<int> host_threads = {0};
    int passes = 3, host_passes = 5;
    bool cores = false;
  };
  auto a = std::make_shared<Args>();
  sub->add_option("-f,--file", a->file, "File to read (the model): O_DIRECT where allowed");
  sub->add_option("--qd", a->qd, "Queue depths, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  sub->add_option("--chunk", a->chunk, "Bytes per read request (e.g. 1MiB, 256KiB)")
      ->capture_default_str();
  sub->add_option("--bytes", a->bytes, "Read at most this much per pass (default: whole file)");
  sub->add_option("--passes", a->passes, "Passes per queue depth (median, min, max over them)")
      ->capture_default_str();
  sub->add_option("--source", a->source, "Block source: auto, uring, pread, buffered")
      ->capture_default_str();
  sub->add_option("--json", a->json, "Also write the results as JSON to this file");
  sub->add_option("--host-bytes", a->host_bytes,
                  "Host memory read: buffer size, well past the caches (0: skip)")
      ->capture_default_str();
  sub->add_option("--host-threads", a->host_threads,
                  "Host memory read: thread counts, comma-separated (0: the CPUs this process may use)")
      ->delimiter(',')
      ->capture_default_str();
  sub->add_option("--host-passes", a->host_passes, "Host memory read: timed passes per count")
      ->capture_default_str();
  sub->add_flag("--cores", a->cores,
                "Which CPUs share a physical core, measured (a VM's topology may hide it): "
                "pairs of CPUs running a multiply loop at once, a few seconds; run it on an idle machine");
  return [a] {
    return run_probe(a->file, a->qd, a->chunk, a->bytes, a->passes, a->source, a->json,
                     a->host_bytes, a->host_threads, a->host_passes, a->cores);
  };
}

}  // namespace ls
