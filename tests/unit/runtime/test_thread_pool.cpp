// runtime/thread_pool.h (and runtime/env.h's env_int): every task runs once, on a thread index no
// other running task has, job after job, with more threads than cores (late workers: a run must
// neither wait for them nor let them touch the next job).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "runtime/env.h"
#include "runtime/thread_pool.h"

using namespace ls;

TEST_CASE("thread pool: every task once, thread indices exclusive, job after job") {
  for (int threads : {2, 3, 8, 17}) {
    ThreadPool pool(threads);
    std::vector<std::atomic<int>> busy(threads);
    int64_t total = 0, bad = 0;
    std::atomic<int64_t> by_workers{0};
    for (int job = 0; job < 3000; ++job) {
      const int64_t n = 1 + job % 37;  // fewer tasks than threads too
      // A job-local function and buffer: run() must be done with both on return.
      auto hits = std::make_unique<std::vector<std::atomic<int>>>(n);
      std::atomic<int64_t> wrong{0};
      pool.run(n, [&, h = hits.get()](int64_t t, int index) {
        if (index < 0 || index >= threads || busy[index].fetch_add(1) != 0) ++wrong;
        volatile int64_t x = 0;  // a little work, so that workers take tasks too
        for (int i = 0; i < 500; ++i) x = x + i;
        (*h)[t].fetch_add(1);
        if (index > 0) ++by_workers;
        busy[index].fetch_sub(1);
      });
      for (int64_t t = 0; t < n; ++t) bad += (*hits)[t].load() != 1;
      bad += wrong.load();
      total += n;
    }
    CAPTURE(threads);
    CHECK(bad == 0);
    CHECK(by_workers.load() > 0);  // the workers' side was exercised
    MESSAGE(threads << " threads: " << total << " tasks in 3000 jobs, each once; "
                    << by_workers.load() << " by workers");
  }
}

TEST_CASE("thread pool: two callers at once, each job's tasks once, on the caller's indices") {
  // A pool shared by two callers (a model and its draft take turns, but a
  // second caller while a job runs must stay correct): the second runs its
  // own tasks on its own thread as index 0, so two callers' tasks never
  // meet on an index of the same caller's per-thread scratch.
  ThreadPool pool(4);
  std::atomic<int64_t> bad{0}, inline_jobs{0};
  auto caller = [&](int id) {
    std::vector<std::atomic<int>> busy(4);
    for (int job = 0; job < 2000; ++job) {
      const int64_t n = 1 + (job + id) % 23;
      std::vector<std::atomic<int>> hits(n);
      std::atomic<bool> workers{false};
      pool.run(n, [&](int64_t t, int index) {
        if (index < 0 || index >= 4 || busy[index].fetch_add(1) != 0) ++bad;
        volatile int64_t x = 0;
        for (int i = 0; i < 300; ++i) x = x + i;
        hits[t].fetch_add(1);
        if (index > 0) workers = true;
        busy[index].fetch_sub(1);
      });
      for (int64_t t = 0; t < n; ++t) bad += hits[t].load() != 1;
      inline_jobs += n > 1 && !workers.load();
    }
  };
  std::thread other(caller, 1);
  caller(0);
  other.join();
  CHECK(bad.load() == 0);
  MESSAGE(inline_jobs.load() << " of 4000 jobs ran on their caller alone");
}

#if defined(__linux__)
#include <sched.h>

namespace {
// The CPU the calling thread may run on, or -1 when it may run on several.
int only_cpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0 || CPU_COUNT(&set) != 1) return -1;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) return c;
  return -1;
}
}  // namespace

TEST_CASE("thread pool: pin puts each thread on a CPU of its own, and lets the caller go after") {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(sched_getaffinity(0, sizeof(set), &set) == 0);
  const int cpus = CPU_COUNT(&set);
  if (cpus < 2) {
    MESSAGE("one CPU here: pinning a pool of several threads is not checked");
    return;
  }
  {
    ThreadPool too_many(cpus + 1);
    CHECK_FALSE(too_many.pin());  // more threads than CPUs: nothing pinned
  }
  CHECK(only_cpu() == -1);
  const int threads = std::min(cpus, 4);
  {
    ThreadPool pool(threads);
    REQUIRE(pool.pin());
    std::vector<std::atomic<int>> cpu_of(threads);
    for (auto& c : cpu_of) c = -2;
    // Every thread index reports where it ran, job after job.
    for (int job = 0; job < 200; ++job)
      pool.run(threads * 8, [&](int64_t, int index) {
        volatile int64_t x = 0;
        for (int i = 0; i < 2000; ++i) x = x + i;
        cpu_of[index] = only_cpu();
      });
    std::vector<int> seen;
    for (int i = 0; i < threads; ++i)
      if (cpu_of[i] != -2) {
        CHECK(cpu_of[i] >= 0);  // pinned: one CPU
        seen.push_back(cpu_of[i]);
      }
    std::sort(seen.begin(), seen.end());
    CHECK(std::adjacent_find(seen.begin(), seen.end()) == seen.end());  // each its own
    // The caller, as it ran.
    CHECK(cpu_of[0] >= 0);
  }
  CHECK(only_cpu() == -1);  // the caller runs anywhere again
}
#endif

TEST_CASE("env_int: a whole number at least min, else the default (said so)") {
  // runtime/env.h: the A/B switches (LS_POOL_SPIN_US, LS_CPU_PACK_AHEAD, ...)
  // must not read a typo as 0.
  const char* k = "LS_TEST_ENV_INT";
  unsetenv(k);
  CHECK(env_int(k, 16, 0) == 16);
  setenv(k, "", 1);
  CHECK(env_int(k, 16, 0) == 16);
  setenv(k, "32", 1);
  CHECK(env_int(k, 16, 0) == 32);
  setenv(k, "0", 1);
  CHECK(env_int(k, 16, 0) == 0);
  CHECK(env_int(k, 8, 1) == 8);  // below min
  setenv(k, "fast", 1);
  CHECK(env_int(k, 16, 0) == 16);
  setenv(k, "12us", 1);
  CHECK(env_int(k, 16, 0) == 16);
  setenv(k, "-3", 1);
  CHECK(env_int(k, 16, 0) == 16);
  unsetenv(k);
}

TEST_CASE("env_mib: MiB as bytes, within 0..max, else the default (said so)") {
  // runtime/env.h: the L2 prefetch sizes (LS_L2_PREFETCH, LS_GEMV_AHEAD, ...):
  // a huge value must not overflow the shift into bytes.
  const char* k = "LS_TEST_ENV_MIB";
  unsetenv(k);
  CHECK(env_mib(k, 4, 1024) == int64_t{4} << 20);
  setenv(k, "16", 1);
  CHECK(env_mib(k, 4, 1024) == int64_t{16} << 20);
  setenv(k, "0", 1);
  CHECK(env_mib(k, 4, 1024) == 0);
  setenv(k, "1025", 1);
  CHECK(env_mib(k, 4, 1024) == int64_t{4} << 20);
  setenv(k, "99999999999999999", 1);
  CHECK(env_mib(k, 0, 1024) == 0);
  setenv(k, "8MiB", 1);
  CHECK(env_mib(k, 2, 1024) == int64_t{2} << 20);
  unsetenv(k);
}
