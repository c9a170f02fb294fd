// defines: group_cores, probe_core_sharing (runtime/probe_cores.h)
#include "runtime/probe_cores.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "runtime/thread_pool.h"

namespace ls {

std::vector<std::vector<int>> group_cores(int n, const std::function<double(int, int)>& ratio,
                                          double threshold,
                                          std::vector<CoreSharing::Pair>* pairs) {
  std::vector<std::vector<int>> groups;
  std::vector<bool> grouped(static_cast<size_t>(n), false);
  for (int i = 0; i < n; ++i) {
    if (grouped[static_cast<size_t>(i)]) continue;
    std::vector<int> g = {i};
    grouped[static_cast<size_t>(i)] = true;
    for (int j = i + 1; j < n; ++j) {
      if (grouped[static_cast<size_t>(j)]) continue;
      const double r = ratio(i, j);
      if (pairs) pairs->push_back({i, j, r});
      if (r < threshold) {
        g.push_back(j);
        grouped[static_cast<size_t>(j)] = true;
      }
    }
    groups.push_back(std::move(g));
  }
  return groups;
}

namespace {

// Multiplies 48 independent floats until `stop`: 12 vector multiplies a
// step at SSE's width (48 scalar ones without it), far more independent
// work than the multiply units' latency needs, so the loop runs at their
// throughput: the resource two threads of one core split. m = 1 - 2^-24:
// 30 ms of steps leave every value normal. Returns the steps run.
[[gnu::noinline]] uint64_t multiply_until(const std::atomic<bool>& stop, float* sink) {
  constexpr int kLanes = 48, kInner = 256;
  float x[kLanes];
  for (int k = 0; k < kLanes; ++k) x[k] = 1.0f + static_cast<float>(k) * 0x1p-10f;
  const float m = 1.0f - 0x1p-24f;
  uint64_t steps = 0;
  while (!stop.load(std::memory_order_relaxed)) {
    for (int r = 0; r < kInner; ++r)
      for (int k = 0; k < kLanes; ++k) x[k] *= m;
    steps += kInner;
  }
  float s = 0;
  for (int k = 0; k < kLanes; ++k) s += x[k];
  *sink = s;
  return steps;
}

// The loop on each of `cpus` at once for `ms`: each one's rate (millions
// of steps a second), or an error naming the CPU that could not be pinned.
Expected<std::vector<double>> run_on(const std::vector<int>& cpus, int ms) {
  const size_t n = cpus.size();
  std::atomic<int> ready{0}, pinned{0};
  std::atomic<bool> go{false}, stop{false};
  std::vector<double> rate(n, 0.0);
  std::vector<float> sink(n, 0.0f);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      if (pin_current_thread(cpus[i])) pinned.fetch_add(1);
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      const auto t0 = std::chrono::steady_clock::now();
      const uint64_t steps = multiply_until(stop, &sink[i]);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      rate[i] = s > 0 ? static_cast<double>(steps) / s / 1e6 : 0.0;
    });
  while (ready.load() < static_cast<int>(n)) std::this_thread::yield();
  go.store(true);
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  stop.store(true);
  for (std::thread& t : threads) t.join();
  if (pinned.load() != static_cast<int>(n))
    return make_error("cannot pin a thread to each of CPUs %d..%d (sched_setaffinity)", cpus.front(),
                      cpus.back());
  return rate;
}

}  // namespace

Expected<CoreSharing> probe_core_sharing(int ms, double threshold) {
  CoreSharing r;
  r.cpus = process_cpus();
  r.threshold = threshold;
  if (r.cpus.empty()) return make_error("this system does not say which CPUs the process may use");
  for (int c : r.cpus) {
    auto one = run_on({c}, ms);
    if (!one) return one.error();
    r.solo.push_back((*one)[0]);
  }
  Error failed;
  bool ok = true;
  // A pair's ratio: the slower CPU's share of its rate alone. A pair that
  // looks shared is run twice more, each time after measuring both CPUs
  // alone again, and keeps the best: other work on the machine (a build
  // beside it, another VM on the host's cores) comes and goes, and only a
  // pair that stays slow together shares a core.
  auto ratio = [&](int i, int j) -> double {
    const int ci = r.cpus[static_cast<size_t>(i)], cj = r.cpus[static_cast<size_t>(j)];
    double solo_i = r.solo[static_cast<size_t>(i)], solo_j = r.solo[static_cast<size_t>(j)];
    double best = 0;
    for (int attempt = 0; attempt < 3 && ok; ++attempt) {
      if (attempt > 0) {
        auto a = run_on({ci}, ms);
        auto b = a ? run_on({cj}, ms) : a;
        if (!a || !b) {
          failed = a ? b.error() : a.error();
          ok = false;
          return 1.0;
        }
        solo_i = (*a)[0], solo_j = (*b)[0];
      }
      auto both = run_on({ci, cj}, ms);
      if (!both) {
        failed = both.error();
        ok = false;
        return 1.0;
      }
      best = std::max(best, std::min((*both)[0] / solo_i, (*both)[1] / solo_j));
      if (best >= threshold) break;
    }
    return best;
  };
  std::vector<CoreSharing::Pair> pairs;
  const auto groups = group_cores(static_cast<int>(r.cpus.size()), ratio, threshold, &pairs);
  if (!ok) return failed;
  for (CoreSharing::Pair p : pairs)
    r.pairs.push_back({r.cpus[static_cast<size_t>(p.a)], r.cpus[static_cast<size_t>(p.b)], p.ratio});
  for (const auto& g : groups) {
    std::vector<int> cpus;
    for (int i : g) cpus.push_back(r.cpus[static_cast<size_t>(i)]);
    r.cores.push_back(std::move(cpus));
  }
  return r;
}

}  // namespace ls
