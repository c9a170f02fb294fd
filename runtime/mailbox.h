// A bounded mailbox: moodycamel's lock-free BlockingConcurrentQueue for the
// messages, plus a semaphore of free places so that a full mailbox blocks its
// sender (back-pressure instead of unbounded growth). Every wait is timed by
// kPollInterval and gives up when the run is stopped, so no actor can hang on
// a mailbox after another one failed.
// defines: Mailbox<T>
#pragma once

#include <concurrentqueue/blockingconcurrentqueue.h>
#include <concurrentqueue/lightweightsemaphore.h>

#include <optional>

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
