// A bounded mailbox: moodycamel's lock-free BlockingConcurrentQueue for the
// messages, plus a semaphore of free places so that a full mailbox blocks its
// sender (back-pressure instead of unbounded growth). Every wait is timed by
// kPollInterval and gives up when the run is stopped, so no actor can hang on
// a mailbox after another one failed.
// (pop_expecting polls for a message known to be imminent.)
// defines: Mailbox<T>
#pragma once

#include <concurrentqueue/blockingconcurrentqueue.h>
#include <concurrentqueue/lightweightsemaphore.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <thread>

#include "runtime/run_control.h"

namespace ls {

template <typename T>
class Mailbox {
 public:
  explicit Mailbox(size_t capacity)
      : capacity_(capacity), q_(capacity), space_(static_cast<moodycamel::LightweightSemaphore::ssize_t>(capacity)) {}
  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;

  size_t capacity() const { return capacity_; }

  // Blocks while the mailbox is full. False if the run stopped first.
  bool push(T msg, const RunControl& rc) {
    while (!space_.wait(poll_us())) {
      if (rc.stopped()) return false;
    }
    q_.enqueue(std::move(msg));
    return true;
  }
  // Blocks until a message arrives. nullopt if the run stopped first.
  std::optional<T> pop(const RunControl& rc) {
    T msg;
    while (!q_.wait_dequeue_timed(msg, poll_us())) {
      if (rc.stopped()) return std::nullopt;
    }
    space_.signal();
    return msg;
  }
  // pop() for a message expected about `expected` from now (how long the
  // last one took): blocks until kSpinLead before then, then polls, the
  // core yielded between polls, for up to kSpinWindow, then blocks as pop()
  // does. Why: a thread woken from a futex sleep takes 20-200 us to run
  // again on a virtual machine's idle core (on the H200 machine, 150 us
  // median from the compute actor's push to the sampler's first step, 4 %
  // of an 8b decode step), and each decode step waits for two such hops.
  // The polling costs one core for at most the window per wait.
  std::optional<T> pop_expecting(const RunControl& rc, std::chrono::nanoseconds expected) {
    if (!polling()) return pop(rc);
    using clock = std::chrono::steady_clock;
    T msg;
    const auto sleep_until = clock::now() + expected - kSpinLead;
    for (auto left = sleep_until - clock::now(); left > std::chrono::nanoseconds(0);
         left = sleep_until - clock::now()) {
      const auto us = std::chrono::duration_cast<std::chrono::microseconds>(left).count();
      if (q_.wait_dequeue_timed(msg, std::min<int64_t>(us + 1, poll_us()))) {
        space_.signal();
        return msg;
      }
      if (rc.stopped()) return std::nullopt;
    }
    const auto spin_until = clock::now() + kSpinWindow;
    while (clock::now() < spin_until) {
      if (q_.try_dequeue(msg)) {
        space_.signal();
        return msg;
      }
      if (rc.stopped()) return std::nullopt;
      std::this_thread::yield();
    }
    return pop(rc);
  }
  static constexpr std::chrono::microseconds kSpinLead{300}, kSpinWindow{1000};
  // LS_POLL_WAIT=0: pop_expecting is pop (A/B runs).
  static bool polling() {
    static const bool on = [] {
      const char* e = std::getenv("LS_POLL_WAIT");
      return !(e && std::string_view(e) == "0");
    }();
    return on;
  }

  std::optional<T> try_pop() {
    T msg;
    if (!q_.try_dequeue(msg)) return std::nullopt;
    space_.signal();
    return msg;
  }
  size_t size_approx() const { return q_.size_approx(); }

 private:
  static int64_t poll_us() {
    return std::chrono::duration_cast<std::chrono::microseconds>(kPollInterval).count();
  }
  size_t capacity_;
  moodycamel::BlockingConcurrentQueue<T> q_;
  moodycamel::LightweightSemaphore space_;
};

}  // namespace ls
