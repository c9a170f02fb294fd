#include "runtime/control_plane.h"

#include <cstdio>

namespace ls {

ControlPlane::ControlPlane(RunControl& rc, const Tracer& tracer, int watchdog_s)
    : rc_(rc),
      tracer_(tracer),
      watchdog_s_(watchdog_s),
      signals_(io_, SIGINT, SIGTERM),
      timer_(io_) {
  signals_.async_wait([this](const asio::error_code& ec, int sig) {
    if (ec) return;
    signal_.store(sig);
    rc_.cancel(sig == SIGINT ? "interrupted (Ctrl-C)" : "terminated (SIGTERM)");
  });
  arm_timer();
  thread_ = std::thread([this] { io_.run(); });
}

void ControlPlane::arm_timer() {
  timer_.expires_after(std::chrono::seconds(1));
  timer_.async_wait([this](const asio::error_code& ec) {
    if (ec) return;
    const uint64_t p = rc_.progress();
    if (!rc_.busy() || p != last_progress_) {
      last_progress_ = p;
      still_s_ = 0;
      reported_ = false;
    } else if (watchdog_s_ > 0 && ++still_s_ >= watchdog_s_ && !reported_) {
      reported_ = true;
      const StallTable t = tracer_.stall_table();
      std::fprintf(stderr,
                   "\nlayerstream: watchdog: nothing has moved for %d s. Stall table so far "
                   "(the stuck stage is the one not busy while the others wait on it):\n%s",
                   still_s_, t.to_text().c_str());
    }
    if (!rc_.stopped()) arm_timer();
  });
}

ControlPlane::~ControlPlane() {
  asio::error_code ec;
  signals_.cancel(ec);
  timer_.cancel();
  io_.stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace ls
