// defines: ThreadPool, default_thread_count (runtime/thread_pool.h)
#include "runtime/thread_pool.h"

#include <algorithm>
#include <chrono>

#include "runtime/cpu_quota.h"
#include "runtime/env.h"

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

namespace ls {

// Read once, before any pool pinned the thread that asks (a pinned caller's
// own mask is one CPU).
const std::vector<int>& process_cpus() {
  static const std::vector<int> cpus = [] {
    std::vector<int> v;
#if defined(__linux__)
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
      for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) v.push_back(c);
#endif
    return v;
  }();
  return cpus;
}

namespace {

// Thread h on CPU `cpu` only, or (cpu < 0) on every allowed CPU again.
bool pin_thread(std::thread::native_handle_type h, int cpu) {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (cpu >= 0)
    CPU_SET(cpu, &set);
  else
    for (int c : process_cpus()) CPU_SET(c, &set);
  return pthread_setaffinity_np(h, sizeof(set), &set) == 0;
#else
  (void)h, (void)cpu;
  return false;
#endif
}

}  // namespace

bool pin_current_thread(int cpu) {
#if defined(__linux__)
  return pin_thread(pthread_self(), cpu);
#else
  (void)cpu;
  return false;
#endif
}

namespace {

// LS_POOL_SPIN_US=n: an idle worker stops spinning n microseconds after
// its last job, whatever the count (unset or 0: the count alone). For A/B
// runs: an idle pool's spinning workers took CPUs from another pool on the
// H200 machine (bench/results/2026-12-04-h200-s30.md, call 12), and 20,000
// yields last as long as the scheduler makes them when others want the CPU.
int64_t spin_limit_ns() {
  static const int64_t v = env_int("LS_POOL_SPIN_US", 0, 0) * 1000;
  return v;
}

// LS_POOL_PAUSE_US=n: for the first n microseconds of a wait (an idle
// worker's for the next job, the caller's for the last tasks) poll with the
// CPU's pause hint rather than sched_yield; 0 (the default): yield from the
// start. A yield is a system call: a thread inside one sees a new job, or
// the last task done, only once it returns (about a microsecond under a
// hypervisor), which a job of tens of microseconds (attention at a 1k
// context on 16 threads) pays at both of its ends.
int64_t pause_limit_ns() {
  static const int64_t v = env_int("LS_POOL_PAUSE_US", 0, 0) * 1000;
  return v;
}

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Polls done() (true: stop) with the pause hint for up to pause_ns from
// now; returns whether it stopped because done() said so.
template <class Done>
bool pause_until(Done done, int64_t pause_ns) {
  if (pause_ns <= 0) return false;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0;; ++i) {
    if (done()) return true;
    cpu_relax();
    if (i % 64 == 63 && std::chrono::steady_clock::now() - t0 > std::chrono::nanoseconds(pause_ns))
      return false;
  }
}

}  // namespace

int default_thread_count() {
  int n = static_cast<int>(process_cpus().size());
  if (n == 0) n = static_cast<int>(std::thread::hardware_concurrency());
  const int quota = cgroup_cpu_limit();
  if (quota > 0) n = std::min(n, quota);
  return std::max(1, n);
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
  if (!cpus_.empty() && pinned_caller_ == std::this_thread::get_id()) pin_current_thread(-1);
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

bool ThreadPool::pin() {
  const std::vector<int>& all = process_cpus();
  if (static_cast<int>(all.size()) < n_threads_) return false;
  std::vector<int> cpus(all.begin(), all.begin() + n_threads_);
  for (int i = 1; i < n_threads_; ++i)
    if (!pin_thread(threads_[static_cast<size_t>(i - 1)].native_handle(),
                    cpus[static_cast<size_t>(i)])) {
      for (int k = 1; k < i; ++k)
        pin_thread(threads_[static_cast<size_t>(k - 1)].native_handle(), -1);
      return false;
    }
  cpus_ = std::move(cpus);
  pinned_caller_ = std::thread::id();
  return true;
}

void ThreadPool::run(int64_t n_tasks, const std::function<void(int64_t, int)>& fn) {
  if (n_tasks <= 0) return;
  // Pinned: the calling thread takes thread 0's CPU (a thread that called
  // before keeps it too; the engine calls from one thread).
  if (!cpus_.empty() && pinned_caller_ != std::this_thread::get_id()) {
    pin_current_thread(cpus_[0]);
    pinned_caller_ = std::this_thread::get_id();
  }
  // One thread's job, or a second caller while a job runs: the caller's
  // thread alone (a shared pool's callers normally take turns).
  if (n_threads_ == 1 || n_tasks == 1 || running_.exchange(true, std::memory_order_acquire)) {
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
  pause_until([&] { return j.done.load(std::memory_order_acquire) >= n_tasks; }, pause_limit_ns());
  int64_t d = j.done.load(std::memory_order_acquire);
  for (int spin = 0; d < n_tasks; ++spin) {
    if (spin < 2000)
      std::this_thread::yield();
    else
      j.done.wait(d, std::memory_order_acquire);
    d = j.done.load(std::memory_order_acquire);
  }
  running_.store(false, std::memory_order_release);
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  const int64_t limit = spin_limit_ns(), pause = pause_limit_ns();
  for (;;) {
    // Spin a little for the next job before sleeping.
    pause_until([&] { return generation_.load(std::memory_order_acquire) != seen; }, pause);
    uint64_t gen = generation_.load(std::memory_order_acquire);
    const auto idle =
        limit > 0 ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    for (int spin = 0; gen == seen && spin < 20000; ++spin) {
      if (limit > 0 && spin % 64 == 63 &&
          std::chrono::steady_clock::now() - idle > std::chrono::nanoseconds(limit))
        break;
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
