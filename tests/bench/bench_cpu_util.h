// What the CPU kernel benchmarks share: the --isa list, and the bound every
// row is a ratio to (the host memory read of the same thread count,
// measured in the same run); a comma list's items; the median and range of
// timings.
// defines: bench_parse_isas(), bench_host_bounds(), bench_write_json(), split(), Stats,
//          stats()
#pragma once

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/cpu/isa.h"
#include "runtime/probe_host.h"
#include "runtime/thread_pool.h"

namespace ls {

// A comma list's items, empty ones left out.
inline std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');)
    if (!x.empty()) out.push_back(x);
  return out;
}

struct Stats {
  double med, min, max;
};
inline Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return {n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2, v.front(), v.back()};
}

// "best", "all" (every variant this CPU runs) or variant names; nullopt
// (after saying which) for one this CPU does not run.
inline std::optional<std::vector<CpuIsa>> bench_parse_isas(const std::vector<std::string>& names) {
  std::vector<CpuIsa> isas;
  for (const auto& n : names) {
    if (n == "best") {
      isas.push_back(cpu_isa_best());
    } else if (n == "all") {
      for (CpuIsa i : {CpuIsa::Avx512, CpuIsa::Avx2, CpuIsa::Portable})
        if (cpu_isa_supported(i)) isas.push_back(i);
    } else {
      auto i = cpu_isa_from_name(n);
      if (!i || !cpu_isa_supported(*i)) {
        std::fprintf(stderr, "--isa %s: not a variant this CPU runs\n", n.c_str());
        return std::nullopt;
      }
      isas.push_back(*i);
    }
  }
  return isas;
}

// Host read GB/s by thread count (index = threads, 0 where not measured),
// printed as a table; nullopt (after saying why) when the buffer cannot be made.
// also_pinned: each thread count measured again with the pool's threads
// pinned (ThreadPool::pin), and the higher of the two is the bound.
// The pool that fills the buffer is gone before anything is timed: an idle
// pool's workers spin (yielding) for a while after their last job and take
// CPUs from the pool being measured.
inline std::optional<std::vector<double>> bench_host_bounds(const std::vector<int>& threads,
                                                            int most, double host_gib,
                                                            bool also_pinned = false) {
  std::vector<double> host(most + 1, 0.0);
  auto buf = [&] {
    ThreadPool fill_pool(most);
    return HostReadBuffer::make(fill_pool, static_cast<uint64_t>(host_gib * (1ull << 30)));
  }();
  if (!buf) {
    std::fprintf(stderr, "%s\n", buf.error().message.c_str());
    return std::nullopt;
  }
  std::printf("bound: host memory read, %.2f GB buffer, median of 5 passes\n", buf->bytes() / 1e9);
  std::printf("%8s  %12s  %8s  %8s\n", "threads", "GB/s median", "min", "max");
  for (int t : threads)
    for (int pinned = 0; pinned <= (also_pinned ? 1 : 0); ++pinned) {
      ThreadPool pool(t);
      if (pinned && !pool.pin()) {
        std::fprintf(stderr, "cannot pin %d threads to CPUs here\n", t);
        return std::nullopt;
      }
      const HostBandwidth r = probe_host_read(pool, *buf, 5);
      host[t] = std::max(host[t], r.median);
      std::printf("%8d  %12.2f  %8.2f  %8.2f%s\n", t, r.median, r.min, r.max,
                  pinned ? "  (pinned)" : "");
    }
  return host;
}

// The run as JSON into path: j (the bench's own keys) with the bound of
// each thread count and the rows; false (after saying so) if it cannot be
// written.
inline bool bench_write_json(const std::string& path, nlohmann::json j,
                             const std::vector<int>& threads, const std::vector<double>& host,
                             const nlohmann::json& rows) {
  j["host_gbps_by_threads"] = nlohmann::json::object();
  for (int t : threads) j["host_gbps_by_threads"][std::to_string(t)] = host[t];
  j["rows"] = rows;
  std::ofstream f(path);
  f << j.dump(2) << "\n";
  if (!f) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

}  // namespace ls
