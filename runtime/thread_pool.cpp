// defines: ThreadPool, default_thread_count (runtime/thread_pool.h)
#include "runtime/thread_pool.h"

namespace ls {

int default_thread_count() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
  for (int i = 1; i < n_threads_; ++i) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true, std::memory_order_release);
    generation_.fetch_add(1);
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

// Take tasks until none is left; the one that finishes the last task wakes
// the caller if it sleeps. After its last task a thread touches only the
// counters, never fn (which the caller may have destroyed by then).
void ThreadPool::work(Job& j, int index) {
  for (;;) {
    const int64_t t = j.next.fetch_add(1, std::memory_order_relaxed);
    if (t >= j.n_tasks) break;
    (*j.fn)(t, index);
    if (j.done.fetch_add(1, std::memory_order_acq_rel) + 1 == j.n_tasks) j.done.notify_all();
  }
}

void ThreadPool::run(int64_t n_tasks, const std::function<void(int64_t, int)>& fn) {
  if (n_tasks <= 0) return;
  if (n_threads_ == 1 || n_tasks == 1) {
    for (int64_t t = 0; t < n_tasks; ++t) fn(t, 0);
    return;
  }
  const uint64_t g = generation_.load(std::memory_order_relaxed) + 1;
  Job& j = jobs_[g % 2];
  // A worker late from run g - 2 may still look at this slot: mark it being
  // set up, then wait until no one is inside (seq_cst, with the workers'
  // increment-then-check: one side always sees the other).
  j.gen.store(kSettingUp);
  while (j.inside.load() != 0) std::this_thread::yield();
  j.fn = &fn;
  j.n_tasks = n_tasks;
  j.next.store(0, std::memory_order_relaxed);
  j.done.store(0, std::memory_order_relaxed);
  j.gen.store(g);
  {
    std::lock_guard<std::mutex> lock(mu_);  // a worker about to sleep sees it
    generation_.store(g, std::memory_order_release);
  }
  cv_.notify_all();
  work(j, 0);
  // The others' last tasks: short, so spin first; then sleep until the
  // thread that finishes the last one wakes us.
  int64_t d = j.done.load(std::memory_order_acquire);
  for (int spin = 0; d < n_tasks; ++spin) {
    if (spin < 2000)
      std::this_thread::yield();
    else
      j.done.wait(d, std::memory_order_acquire);
    d = j.done.load(std::memory_order_acquire);
  }
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    // Spin a little for the next job before sleeping.
    uint64_t gen = generation_.load(std::memory_order_acquire);
    for (int spin = 0; gen == seen && spin < 20000; ++spin) {
      std::this_thread::yield();
      gen = generation_.load(std::memory_order_acquire);
    }
    if (gen == seen) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return generation_.load() != seen; });
      gen = generation_.load();
    }
    seen = gen;
    // An atomic, not the mutex: 15 workers taking one lock after every job
    // (hundreds per token) queue behind each other for nothing.
    if (stop_.load(std::memory_order_acquire)) return;
    Job& j = jobs_[gen % 2];
    j.inside.fetch_add(1);
    if (j.gen.load() == gen) work(j, index);
    j.inside.fetch_sub(1, std::memory_order_release);
  }
}

}  // namespace ls
