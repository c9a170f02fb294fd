// A persistent pool of worker threads for data-parallel loops (the CPU
// backend's matmuls, synth's generators). One job at a time: run(n, fn)
// calls fn(task, thread) for task = 0..n-1, spread over the workers and the
// calling thread, and returns when all are done. A pool may be shared by
// callers that take turns (a model and its draft model): one that calls
// while another's job runs gets no workers, and runs its tasks itself, all
// as thread 0 (whose per-thread scratch is its own caller's). Tasks are handed out by an atomic
// counter, so uneven tasks balance themselves. Workers spin briefly before sleeping, so
// back-to-back jobs (one per matmul, many per token) do not pay a futex wake-up each
// (LS_POOL_SPIN_US bounds that spin in time, for A/B runs). Nothing is
// allocated per job.
//
// run returns when every task is done, not when every worker has looked in:
// on a machine whose cores are shared (a build beside a -t 2 decode), a
// worker that is not scheduled in time takes no task, and the job goes on
// without it (before 2026-12-02 each job waited for every worker to be
// scheduled once: decode at -t 2 fell from 335 to 124 tok/s beside a
// two-job build on the 2-core dev machine). A late worker finds the job's
// tasks gone; two job slots, used in turn, each with a count of the workers
// looking at it, keep such a worker from reading a job being set up.
// defines: ThreadPool, default_thread_count(), process_cpus(), pin_current_thread()
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ls {

// One thread per CPU this process may use: its affinity mask (taskset, a
// container's cpuset), capped by its control group's CPU quota (`docker
// run --cpus N`: runtime/cpu_quota.h); hardware_concurrency where the mask
// cannot be read; at least 1.
int default_thread_count();

// The CPUs this process may run on (Linux: its affinity mask, read once,
// before anything pinned a thread; elsewhere empty).
const std::vector<int>& process_cpus();
// The calling thread on CPU `cpu` alone, or (cpu < 0) on every one of
// process_cpus() again; false where not supported.
bool pin_current_thread(int cpu);

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);  // total threads including the caller
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }
  // fn(task, thread_index); thread_index in [0, size()) is stable per thread,
  // for per-thread scratch buffers. One caller at a time.
  void run(int64_t n_tasks, const std::function<void(int64_t, int)>& fn);

  // Pins thread i to the i-th CPU this process may run on (Linux; the
  // caller's thread, 0, as it next calls run). Off by default: where other
  // busy threads share the cores (the engine's actors), the OS can no
  // longer move a worker away from them. Returns false (and pins nothing)
  // where it is not supported or the process may use fewer CPUs than the
  // pool has threads.
  bool pin();

 private:
  // One job. gen: the run it holds (kSettingUp while run() fills it in);
  // inside: workers between checking gen and leaving. Every thread of a job
  // writes inside, next and done at its start and after each task: a cache
  // line each (and a slot's lines apart from the other slot's), so those
  // writes queue only behind their own kind, not behind all three of 16
  // threads' at once; gen, fn and n_tasks, written once a job and read by
  // all, share a line of their own.
  struct alignas(64) Job {
    std::atomic<uint64_t> gen{0};
    const std::function<void(int64_t, int)>* fn = nullptr;
    int64_t n_tasks = 0;
    alignas(64) std::atomic<int> inside{0};
    alignas(64) std::atomic<int64_t> next{0};
    alignas(64) std::atomic<int64_t> done{0};
  };
  static constexpr uint64_t kSettingUp = ~uint64_t{0};
  void worker(int index);
  static void work(Job& j, int index);

  int n_threads_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  Job jobs_[2];  // run g uses jobs_[g % 2]
  // Polled by every idle worker: a line of its own, written once a job.
  alignas(64) std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};     // read without the lock after each wake-up
  std::atomic<bool> running_{false};  // a caller's job is in the slots
  std::vector<int> cpus_;             // pin(): thread i's CPU is cpus_[i]
  std::thread::id pinned_caller_;     // the caller thread pinned to cpus_[0]
};

}  // namespace ls
