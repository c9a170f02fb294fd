// A persistent pool of worker threads for data-parallel loops (the CPU
// backend's matmuls, synth's generators). One job at a time: run(n, fn)
// calls fn(task, thread) for task = 0..n-1, spread over the workers and the
// calling thread, and returns when all are done. Tasks are handed out by an
// atomic counter, so uneven tasks balance themselves. Workers spin briefly
// before sleeping, so back-to-back jobs (one per matmul, many per token) do
// not pay a futex wake-up each. Nothing is allocated per job.
// defines: ThreadPool, default_thread_count()
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ls {

// Physical-core-ish default: hardware_concurrency, at least 1.
int default_thread_count();

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);  // total threads including the caller
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }
  // fn(task, thread_index); thread_index in [0, size()) is stable per thread,
  // for per-thread scratch buffers.
  void run(int64_t n_tasks, const std::function<void(int64_t, int)>& fn);

 private:
  void worker(int index);
  void drain(int index);

  int n_threads_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  const std::function<void(int64_t, int)>* fn_ = nullptr;
  int64_t n_tasks_ = 0;
  std::atomic<int64_t> next_{0};
  std::atomic<int> active_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};  // read without the lock after each wake-up
};

}  // namespace ls
