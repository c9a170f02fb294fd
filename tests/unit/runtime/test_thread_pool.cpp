// runtime/thread_pool.h: every task runs once, on a thread index no other
// running task has, job after job, with more threads than cores (late
// workers: a run must neither wait for them nor let them touch the next job).
#include <doctest/doctest.h>

#include <atomic>
#include <memory>
#include <vector>

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
