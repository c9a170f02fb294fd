// The control plane: the stall watchdog reports when a request runs but
// nothing moves, and stays quiet while the run is idle or progressing.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
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
