// bench_cpu_attention: the CPU compute tier's attention (kernels/cpu/
// attention_cpu.h) on one Llama 70B layer's decode step (one token, 64 query
// heads, 8 KV heads, head_dim 128, f16 cache), against this machine's host
// memory read bandwidth measured in the same run at the same thread count
// (runtime/probe_host: a multi-threaded read of a 2 GiB buffer, median of 5).
//
// Per context (--ctx, default 1k..16k) and thread count: the KV bytes one
// call reads, 2 · ctx · 8 · 128 · 2 (keys and values, f16), the time of a
// call (median, min, max of --reps calls after one warm-up), the GB/s at
// the median, and its ratio to the host bandwidth. The caches come from
// DRAM, as a real model's do, not from the last-level cache: a buffer of
// --kv-gib (1 GiB by default, past any LLC) holds as many distinct layers'
// caches of that context as fit, and successive calls rotate through them.
// Acceptance (issue 14): a ratio >= 0.70 on a 16-core AVX-512 Xeon.
//
// --layout: heads (head-major: each head's positions contiguous, the
// layout of model/kv_cache.h, the default) or rows (a position's row holds
// its 8 heads, as the GPU's cache does), or both.
//
// --block and --ahead sweep attention_cpu's knobs (AttnCpuTuning): positions
// per block (16..256, multiples of 16; 0: the kernel's choice by context
// length) and key rows
// prefetched ahead (0: the default).
//
// Usage: ls_bench_cpu_attention [--threads 1,16] [--ctx 1024,2048,...] [--reps 15]
//          [--isa best|all|avx512,...] [--layout rows,heads] [--block 0,128,...]
//          [--ahead 0,16,...] [--kv-gib 1] [--host-bytes-gib 2] [--json out.json]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <sys/mman.h>

#include <nlohmann/json.hpp>

#include "kernels/cpu/attention_cpu.h"
#include "kernels/cpu/isa.h"
#include "kernels/half.h"
#include "runtime/probe_host.h"
#include "runtime/thread_pool.h"
#include "tests/bench/bench_cpu_util.h"

using namespace ls;

namespace {

constexpr int kHead = 64, kHeadKv = 8, kHeadDim = 128;
constexpr int64_t kRow = int64_t{kHeadKv} * kHeadDim;  // elements per position

struct Stats {
  double med, min, max;
};
Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return {n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2, v.front(), v.back()};
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');)
    if (!x.empty()) out.push_back(x);
  return out;
}

// Anonymous memory, huge pages asked for (as HostReadBuffer does), filled by
// the pool's threads (first touch) with finite f16 values in [-1, 1).
uint16_t* make_kv(ThreadPool& pool, uint64_t elems) {
  const uint64_t bytes = elems * 2;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  madvise(p, bytes, MADV_HUGEPAGE);
  uint16_t* h = static_cast<uint16_t*>(p);
  const int64_t n_tasks = 256;
  pool.run(n_tasks, [&](int64_t task, int) {
    uint64_t x = 0x9E3779B97F4A7C15ull * (task + 1);
    const uint64_t i0 = elems * task / n_tasks, i1 = elems * (task + 1) / n_tasks;
    for (uint64_t i = i0; i < i1; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      h[i] = fp32_to_fp16(static_cast<float>(x >> 40) / 8388608.0f - 1.0f);
    }
  });
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> threads;
  std::vector<int64_t> ctxs = {1024, 2048, 4096, 8192, 16384};
  std::vector<std::string> isa_names = {"best"};
  std::vector<std::string> layouts = {"heads"};
  std::vector<int> blocks = {0}, aheads = {0};
  int reps = 15;
  double host_gib = 2, kv_gib = 1;
  std::string json_out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--threads") {
      for (auto& s : split(next())) threads.push_back(std::max(1, std::atoi(s.c_str())));
    } else if (a == "--ctx") {
      ctxs.clear();
      for (auto& s : split(next())) ctxs.push_back(std::max<int64_t>(1, std::atoll(s.c_str())));
    } else if (a == "--layout") {
      layouts = split(next());
      for (const auto& l : layouts)
        if (l != "rows" && l != "heads") {
          std::fprintf(stderr, "--layout: '%s' is neither rows nor heads\n", l.c_str());
          return 2;
        }
    } else if (a == "--block" || a == "--ahead") {
      std::vector<int>& v = a == "--block" ? blocks : aheads;
      v.clear();
      for (auto& x : split(next())) {
        const int n = std::atoi(x.c_str());
        if (n < 0 || (a == "--block" && (n % 16 != 0 || n > kAttnBlock))) {
          std::fprintf(stderr, "%s: '%s' is not a valid value\n", a.c_str(), x.c_str());
          return 2;
        }
        v.push_back(n);
      }
    } else if (a == "--isa") {
      isa_names = split(next());
    } else if (a == "--reps") {
      reps = std::max(1, std::atoi(next().c_str()));
    } else if (a == "--kv-gib") {
      kv_gib = std::atof(next().c_str());
    } else if (a == "--host-bytes-gib") {
      host_gib = std::atof(next().c_str());
    } else if (a == "--json") {
      json_out = next();
    } else {
      std::fprintf(stderr, "unknown argument %s (see the header of bench_cpu_attention.cpp)\n",
                   a.c_str());
      return 2;
    }
  }
  if (threads.empty()) threads.push_back(default_thread_count());
  const int most = *std::max_element(threads.begin(), threads.end());

  const auto isas_or = bench_parse_isas(isa_names);
  if (!isas_or) return 2;
  const std::vector<CpuIsa> isas = *isas_or;

  // ---- The bound: host memory read bandwidth per thread count ----------------
  ThreadPool fill_pool(most);
  const auto host_or = bench_host_bounds(fill_pool, threads, most, host_gib);
  if (!host_or) return 1;
  const std::vector<double> host = *host_or;

  // ---- The caches: distinct layers, rotated ------------------------------------
  const int64_t max_ctx = *std::max_element(ctxs.begin(), ctxs.end());
  const uint64_t layer_max = 2 * static_cast<uint64_t>(max_ctx) * kRow;  // K then V
  const uint64_t elems =
      std::max<uint64_t>(layer_max, static_cast<uint64_t>(kv_gib * (1ull << 30)) / 2);
  uint16_t* kv = make_kv(fill_pool, elems);
  std::printf(
      "\ncaches: %.2f GB of f16 keys and values, one token of a 70B layer (%d query heads, "
      "%d KV heads, head_dim %d) per call, each call on another layer's cache of the "
      "buffer in turn (reads come from DRAM)\n\n",
      elems * 2 / 1e9, kHead, kHeadKv, kHeadDim);

  std::vector<float> q(kHead * kHeadDim), out(kHead * kHeadDim);
  for (size_t i = 0; i < q.size(); ++i) q[i] = std::sin(0.37f * static_cast<float>(i));
  std::printf("%6s %3s %-8s %-6s %4s %4s %7s %9s %9s %9s %9s %10s %6s %6s\n", "ctx", "thr", "isa",
              "layout", "blk", "ahd", "layers", "KV MB", "us med", "min", "max", "GB/s med", "host", "ratio");
  nlohmann::json rows = nlohmann::json::array();
  for (int th : threads) {
    ThreadPool pool(th);
    for (CpuIsa isa : isas) {
      for (const std::string& layout : layouts)
        for (int64_t ctx : ctxs)
          for (int blk : blocks)
            for (int ahead : aheads) {
          const AttnCpuTuning tune{blk, ahead};
          const uint64_t layer = 2 * static_cast<uint64_t>(ctx) * kRow;
          const uint64_t n_layers = elems / layer;
          const uint64_t bytes = layer * 2;
          AttentionCpuScratch scratch;
          const int32_t pos = static_cast<int32_t>(ctx - 1), seq = 0;
          AttnArgs a;
          a.n_head = kHead;
          a.n_head_kv = kHeadKv;
          a.head_dim = kHeadDim;
          a.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
          a.n_tok = 1;
          a.pos = &pos;
          a.seq = &seq;
          a.q = q.data();
          a.ldq = kHead * kHeadDim;
          a.out = out.data();
          a.ldo = a.ldq;
          a.kv.type = AttnKvType::F16;
          if (layout == "rows") {
            a.kv.ld_pos = kRow;
          } else {  // head-major: each head's positions contiguous
            a.kv.ld_pos = kHeadDim;
            a.kv.ld_head = ctx * kHeadDim;
          }
          a.kv.ld_seq = ctx * kRow;
          std::vector<double> us;
          for (int r = -1; r < reps; ++r) {  // r = -1: warm-up
            const uint16_t* k = kv + (static_cast<uint64_t>(r + 1) % n_layers) * layer;
            a.kv.k = k;
            a.kv.v = k + layer / 2;
            const auto t0 = std::chrono::steady_clock::now();
            attention_cpu(pool, a, scratch, isa, tune);
            const double sec =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (r >= 0) us.push_back(sec * 1e6);
          }
          const Stats st = stats(us);
          const double gbps = bytes / (st.med * 1e-6) / 1e9;
          std::printf("%6ld %3d %-8s %-6s %4d %4d %7lu %9.2f %9.1f %9.1f %9.1f %10.2f %6.2f %6.2f\n",
                      static_cast<long>(ctx), th, cpu_isa_name(attention_cpu_isa(isa, kHeadDim)),
                      layout.c_str(), blk, ahead, static_cast<unsigned long>(n_layers), bytes / 1e6, st.med,
                      st.min, st.max, gbps, host[th], gbps / host[th]);
          std::fflush(stdout);
          rows.push_back({{"ctx", ctx},
                          {"threads", th},
                          {"isa", cpu_isa_name(attention_cpu_isa(isa, kHeadDim))},
                          {"layout", layout},
                          {"block", blk},
                          {"ahead", ahead},
                          {"kv_bytes", bytes},
                          {"layers_rotated", n_layers},
                          {"us_median", st.med},
                          {"us_min", st.min},
                          {"us_max", st.max},
                          {"gbps_median", gbps},
                          {"host_gbps", host[th]},
                          {"ratio", gbps / host[th]}});
        }
    }
  }
  munmap(kv, elems * 2);
  if (!json_out.empty()) {
    nlohmann::json j;
    j["shape"] = {{"n_head", kHead}, {"n_head_kv", kHeadKv}, {"head_dim", kHeadDim}, {"kv", "f16"}};
    j["host_gbps_by_threads"] = nlohmann::json::object();
    for (int t : threads) j["host_gbps_by_threads"][std::to_string(t)] = host[t];
    j["rows"] = rows;
    std::ofstream f(json_out);
    f << j.dump(2) << "\n";
    if (!f) {
      std::fprintf(stderr, "cannot write %s\n", json_out.c_str());
      return 1;
    }
  }
  return 0;
}
