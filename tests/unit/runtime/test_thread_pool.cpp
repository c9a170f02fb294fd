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
    for (int job = 0; job < 3000; ++job) {
      const int64_t n = 1 + job % 37;  // fewer tasks than threads too
      // A job-local function and buffer: run() must be done with both on return.
      auto hits = std::make_unique<std::vector<std::atomic<int>>>(n);
      std::atomic<int64_t> wrong{0};
      pool.run(n, [&, h = hits.get()](int64_t t, int index) {
        if (index < 0 || index >= threads || busy[index].fetch_add(1) != 0) ++wrong;
        (*h)[t].fetch_add(1);
        busy[index].fetch_sub(1);
      });
      for (int64_t t = 0; t < n; ++t) bad += (*hits)[t].load() != 1;
      bad += wrong.load();
      total += n;
    }
    CAPTURE(threads);
    CHECK(bad == 0);
    MESSAGE(threads << " threads: " << total << " tasks in 3000 jobs, each once");
  }
}
