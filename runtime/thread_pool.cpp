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

void ThreadPool::drain(int index) {
  for (;;) {
    const int64_t t = next_.fetch_add(1, std::memory_order_relaxed);
    if (t >= n_tasks_) break;
    (*fn_)(t, index);
  }
}

void ThreadPool::run(int64_t n_tasks, const std::function<void(int64_t, int)>& fn) {
  if (n_tasks <= 0) return;
  if (n_threads_ == 1 || n_tasks == 1) {
    for (int64_t t = 0; t < n_tasks; ++t) fn(t, 0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    n_tasks_ = n_tasks;
    next_.store(0, std::memory_order_relaxed);
    active_.store(n_threads_ - 1, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  cv_.notify_all();
  drain(0);
  // Wait for the workers to finish their last task (they finish quickly: the
  // counter is exhausted), spinning since the wait is short.
  while (active_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  fn_ = nullptr;
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
    drain(index);
    active_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace ls
