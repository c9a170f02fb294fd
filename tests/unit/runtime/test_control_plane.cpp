// The control plane: the stall watchdog reports when a request runs but
// nothing moves, and stays quiet while the run is idle or progressing, or a
// slow layer computes on the host CPU; it never stops a run. A signal stops
// it with the reason as the run's error.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "runtime/control_plane.h"

using namespace ls;

namespace {

// Run f with stderr redirected to a file; return what was written.
std::string capture_stderr(const std::function<void()>& f) {
  char path[] = "/tmp/ls_stderr_XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  std::fflush(stderr);
  const int saved = dup(STDERR_FILENO);
  dup2(fd, STDERR_FILENO);
  f();
  std::fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  close(fd);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  unlink(path);
  return ss.str();
}

}  // namespace

TEST_CASE("control plane: the watchdog reports a stalled request, not an idle or moving one") {
  Tracer tracer(false);
  const int track = tracer.register_track("reader");
  tracer.record(track, {0, 1000, "read", SpanKind::Busy, 0, 0, 100, 0, 0, 0});
  {
    RunControl rc;
    const std::string out = capture_stderr([&] {
      ControlPlane cp(rc, tracer, 1);
      rc.set_busy(true);  // a request runs, nothing pulses
      std::this_thread::sleep_for(std::chrono::milliseconds(2600));
      rc.stop();
    });
    CHECK(out.find("watchdog: nothing has moved") != std::string::npos);
    CHECK(out.find("reader") != std::string::npos);  // the stall table came with it
  }
  {
    RunControl rc;
    const std::string out = capture_stderr([&] {
      ControlPlane cp(rc, tracer, 1);
      // Idle (a chat waiting for the user): no report.
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      // Busy but progressing: no report.
      rc.set_busy(true);
      for (int i = 0; i < 15; ++i) {
        rc.pulse();
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      rc.stop();
    });
    CHECK(out.find("watchdog") == std::string::npos);
  }
}

namespace {

// Burn CPU on this thread for `ms` milliseconds: a layer computing.
double burn_cpu(int ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  volatile double x = 1.0;
  while (std::chrono::steady_clock::now() < end)
    for (int i = 0; i < 10000; ++i) x = std::sqrt(x + i);
  return x;
}

}  // namespace

TEST_CASE(
    "control plane: a slow layer on the host CPU is movement; one that burns nothing is not") {
  Tracer tracer(false);
  {
    // One layer of a wide prefill: 2.6 s with no pulse, watchdog at 1 s.
    RunControl rc;
    bool finished = false;
    const std::string out = capture_stderr([&] {
      ControlPlane cp(rc, tracer, 1);
      rc.set_busy(true);
      std::thread compute([&] {
        {
          const HostWorkScope computing(rc, true);
          burn_cpu(2600);
        }
        rc.pulse();
        finished = !rc.stopped();
      });
      compute.join();
      rc.set_busy(false);
      rc.stop();
    });
    CHECK(finished);
    CHECK_FALSE(rc.error().has_value());
    CHECK(out.find("watchdog") == std::string::npos);
  }
  {
    // A layer "computing" that uses no CPU (a deadlock) is still a stall,
    // and the report says so, but the run is not stopped.
    RunControl rc;
    const std::string out = capture_stderr([&] {
      ControlPlane cp(rc, tracer, 1);
      rc.set_busy(true);
      const HostWorkScope computing(rc, true);
      std::this_thread::sleep_for(std::chrono::milliseconds(2600));
      CHECK_FALSE(rc.stopped());
      rc.stop();
    });
    CHECK(out.find("watchdog: nothing has moved") != std::string::npos);
    CHECK(out.find("uses no CPU time") != std::string::npos);
    CHECK(out.find("the run goes on") != std::string::npos);
  }
  {
    // A device backend's layer (the scope off) counts for nothing.
    RunControl rc;
    const std::string out = capture_stderr([&] {
      ControlPlane cp(rc, tracer, 1);
      rc.set_busy(true);
      const HostWorkScope not_host(rc, false);
      CHECK_FALSE(rc.host_working());
      burn_cpu(2600);
      rc.stop();
    });
    CHECK(out.find("watchdog: nothing has moved") != std::string::npos);
  }
}

TEST_CASE("control plane: SIGTERM stops the run with the reason as its error") {
  Tracer tracer(false);
  RunControl rc;
  {
    ControlPlane cp(rc, tracer, 0);
    REQUIRE(::kill(::getpid(), SIGTERM) == 0);
    for (int i = 0; i < 200 && !rc.stopped(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(cp.signal() == SIGTERM);
  }
  REQUIRE(rc.stopped());
  // What a request in flight returns (Pipeline::run_request): the reason,
  // not a bare "the run was stopped".
  REQUIRE(rc.error().has_value());
  CHECK(rc.error()->message == "terminated (SIGTERM)");
  CHECK(rc.cancelled() == std::optional<std::string>("terminated (SIGTERM)"));
}

TEST_CASE("run control: an actor's failure before a cancel stays the run's error") {
  RunControl rc;
  rc.fail("reader", 3, 7, "read failed: EIO");
  rc.cancel("interrupted (Ctrl-C)");
  REQUIRE(rc.error().has_value());
  CHECK(rc.error()->message == "reader (layer 3, step 7): read failed: EIO");
  CHECK(rc.cancelled() == std::optional<std::string>("interrupted (Ctrl-C)"));
}
