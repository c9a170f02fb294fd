// The shared fate of one run of the actor graph: a stop flag every actor
// polls between (timed) waits, the first error (naming the actor and the
// layer), and what the stall watchdog watches: a progress counter, and the
// layers computing on the host CPU right now. An actor that fails calls
// fail(); every other actor sees stopped() within one poll interval, drains
// and exits, and the error reaches main. A run stopped from outside (Ctrl-C,
// SIGTERM) carries the reason as its error, so the caller says why.
// defines: RunControl, HostWorkScope, kPollInterval
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "runtime/status.h"

namespace ls {

// How long a blocked actor waits before looking at the stop flag again: the
// bound on how late a stop is seen.
inline constexpr std::chrono::milliseconds kPollInterval{20};

class RunControl {
 public:
  bool stopped() const { return stopped_.load(std::memory_order_acquire); }
  // Record an error (the first one wins) and stop the run.
  void fail(const std::string& actor, int32_t layer, int64_t step, const std::string& what) {
    std::string msg = actor;
    if (layer >= 0) msg += " (layer " + std::to_string(layer) + ", step " + std::to_string(step) + ")";
    msg += ": " + what;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = Error{msg};
    }
    stop();
  }
  // Stop without an error (end of the run, Ctrl-C).
  void stop() { stopped_.store(true, std::memory_order_release); }
  // Stop from outside the graph: `why` is also the run's error (unless an
  // actor failed first), so a request in flight ends with it, not with a bare
  // "stopped".
  void cancel(const std::string& why) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!cancel_reason_) cancel_reason_ = why;
      if (!error_) error_ = Error{why};
    }
    stop();
  }
  std::optional<Error> error() const {
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }
  std::optional<std::string> cancelled() const {
    std::lock_guard<std::mutex> lock(mu_);
    return cancel_reason_;
  }
  // Something moved (a layer was computed, a buffer filled): the watchdog's pulse.
  void pulse() { progress_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t progress() const { return progress_.load(std::memory_order_relaxed); }
  // Layers computing on the host CPU now (HostWorkScope). One layer of a wide
  // prefill on a few cores takes minutes with no pulse: the watchdog counts
  // it as movement while the process burns CPU time. Device work is not
  // counted: a kernel that never ends is the stall the watchdog is for.
  void host_work_begin() { host_work_.fetch_add(1, std::memory_order_relaxed); }
  void host_work_end() { host_work_.fetch_sub(1, std::memory_order_relaxed); }
  bool host_working() const { return host_work_.load(std::memory_order_relaxed) > 0; }
  // A request is running (the watchdog only watches then, not while a chat
  // waits for the user).
  void set_busy(bool b) { busy_.store(b, std::memory_order_relaxed); }
  bool busy() const { return busy_.load(std::memory_order_relaxed); }

  // Stress testing: every actor calls chaos() at the points where a slow
  // disk, copy or kernel would delay it; with chaos on, each call sleeps a
  // random 0..max_us (per-thread generator, seeded). Off, it is one branch.
  void set_chaos(uint32_t max_us, uint64_t seed) {
    chaos_max_us_ = max_us;
    chaos_seed_ = seed;
  }
  void chaos() const {
    if (chaos_max_us_ == 0) return;
    thread_local std::mt19937_64 rng(chaos_seed_ ^ std::hash<std::thread::id>{}(std::this_thread::get_id()));
    const uint64_t r = rng();
    if (r & 1) std::this_thread::sleep_for(std::chrono::microseconds((r >> 1) % (chaos_max_us_ + 1)));
  }

 private:
  std::atomic<bool> stopped_{false};
  std::atomic<uint64_t> progress_{0};
  std::atomic<bool> busy_{false};
  std::atomic<int32_t> host_work_{0};
  uint32_t chaos_max_us_ = 0;
  uint64_t chaos_seed_ = 0;
  mutable std::mutex mu_;
  std::optional<Error> error_;
  std::optional<std::string> cancel_reason_;
};

// A layer computing on the host CPU, for the watchdog (RunControl::host_working);
// `on` false (a device backend) makes it nothing.
class HostWorkScope {
 public:
  HostWorkScope(RunControl& rc, bool on) : rc_(on ? &rc : nullptr) {
    if (rc_) rc_->host_work_begin();
  }
  ~HostWorkScope() {
    if (rc_) rc_->host_work_end();
  }
  HostWorkScope(const HostWorkScope&) = delete;
  HostWorkScope& operator=(const HostWorkScope&) = delete;

 private:
  RunControl* rc_;
};

}  // namespace ls
