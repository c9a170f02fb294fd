// runtime/mailbox.h: pop_expecting's three phases (sleep until shortly before
// the expected time, poll, then block as pop) each hand over the message, in
// order, and give up when the run stops.
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include "runtime/mailbox.h"
#include "runtime/run_control.h"

using namespace ls;
using namespace std::chrono_literals;

namespace {

// The message sent `after` from now by another thread; pop_expecting told
// to expect it after `expected`; what came, and how long the wait took.
struct Got {
  std::optional<int> msg;
  std::chrono::nanoseconds took;
};
Got send_and_wait(std::chrono::nanoseconds after, std::chrono::nanoseconds expected, int value) {
  Mailbox<int> box(4);
  RunControl rc;
  const auto t0 = std::chrono::steady_clock::now();
  std::thread sender([&] {
    std::this_thread::sleep_for(after);
    CHECK(box.push(value, rc));
  });
  Got g{box.pop_expecting(rc, expected), {}};
  g.took = std::chrono::steady_clock::now() - t0;
  sender.join();
  return g;
}

}  // namespace

TEST_CASE("mailbox: pop_expecting hands over a message in each phase of its wait") {
  // Before the poll starts (expected far later), while it polls (expected
  // about now), and after the poll window (expected long before).
  const std::pair<std::chrono::milliseconds, std::chrono::milliseconds> cases[] = {
      {5ms, 50ms}, {5ms, 5ms}, {30ms, 0ms}};
  for (const auto& c : cases) {
    const auto after = c.first, expected = c.second;
    CAPTURE(after.count());
    CAPTURE(expected.count());
    const Got g = send_and_wait(after, expected, 7);
    REQUIRE(g.msg);
    CHECK(*g.msg == 7);
    CHECK(g.took >= after);
    CHECK(g.took < after + 2s);  // woken by the message, not by a timeout
    // Arriving in the sleep phase wakes it: it does not sleep on to the
    // expected time.
    if (expected == 50ms) CHECK(g.took < 45ms);
  }
}

TEST_CASE("mailbox: pop_expecting keeps the order and frees the place") {
  Mailbox<int> box(2);
  RunControl rc;
  REQUIRE(box.push(1, rc));
  REQUIRE(box.push(2, rc));
  CHECK(box.pop_expecting(rc, 0ns) == std::optional<int>(1));
  REQUIRE(box.push(3, rc));  // the place popped is free again: does not block
  CHECK(box.pop_expecting(rc, 1ms) == std::optional<int>(2));
  CHECK(box.pop_expecting(rc, 0ns) == std::optional<int>(3));
}

TEST_CASE("mailbox: pop_expecting gives up when the run stops") {
  Mailbox<int> box(1);
  RunControl rc;
  std::thread stopper([&] {
    std::this_thread::sleep_for(10ms);
    rc.stop();
  });
  const auto t0 = std::chrono::steady_clock::now();
  // Expected in a minute: it must not sleep that long once stopped.
  CHECK_FALSE(box.pop_expecting(rc, std::chrono::minutes(1)));
  CHECK(std::chrono::steady_clock::now() - t0 < 5s);
  stopper.join();
}
