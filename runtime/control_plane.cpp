#include "runtime/control_plane.h"

#include <time.h>

// Boost.Asio (libboost-dev), the project's one Asio flavour: the HTTP server
// (tools/serve/) runs on Boost.Beast, which needs it.
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <cstdio>
#include <thread>

namespace ls {
namespace {

// CPU time of the whole process, all threads, in seconds.
double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

// CPU time a second of host-layer computing must show to count as movement.
// The actors' idle polling costs a few milliseconds a second; a layer
// computing gets at least a tenth of a core even on a crowded machine.
constexpr double kComputingCpuPerTick = 0.1;

}  // namespace

struct ControlPlane::Impl {
  Impl(RunControl& rc, const Tracer& tracer, int watchdog_s, bool signals);
  ~Impl();
  void arm_timer();

  RunControl& rc_;
  const Tracer& tracer_;
  int watchdog_s_;
  boost::asio::io_context io_;
  boost::asio::signal_set signals_;
  boost::asio::steady_timer timer_;
  std::thread thread_;
  std::atomic<int> signal_{0};
  uint64_t last_progress_ = 0;
  double last_cpu_s_ = 0;  // the process's CPU time at the last tick
  int still_s_ = 0;
  bool reported_ = false;
};

ControlPlane::ControlPlane(RunControl& rc, const Tracer& tracer, int watchdog_s, bool signals)
    : impl_(std::make_unique<Impl>(rc, tracer, watchdog_s, signals)) {}

ControlPlane::~ControlPlane() = default;

int ControlPlane::signal() const {
  return impl_->signal_.load();
}

ControlPlane::Impl::Impl(RunControl& rc, const Tracer& tracer, int watchdog_s, bool signals)
    : rc_(rc), tracer_(tracer), watchdog_s_(watchdog_s), signals_(io_), timer_(io_) {
  if (signals) {
    signals_.add(SIGINT);
    signals_.add(SIGTERM);
  }
  signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    signal_.store(sig);
    rc_.cancel(sig == SIGINT ? "interrupted (Ctrl-C)" : "terminated (SIGTERM)");
  });
  last_cpu_s_ = process_cpu_seconds();
  arm_timer();
  thread_ = std::thread([this] { io_.run(); });
}

void ControlPlane::Impl::arm_timer() {
  timer_.expires_after(std::chrono::seconds(1));
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    const uint64_t p = rc_.progress();
    const double cpu_s = process_cpu_seconds();
    const bool computing = rc_.host_working() && cpu_s - last_cpu_s_ >= kComputingCpuPerTick;
    last_cpu_s_ = cpu_s;
    if (!rc_.busy() || p != last_progress_ || computing) {
      last_progress_ = p;
      still_s_ = 0;
      reported_ = false;
    } else if (watchdog_s_ > 0 && ++still_s_ >= watchdog_s_ && !reported_) {
      reported_ = true;
      const StallTable t = tracer_.stall_table();
      std::fprintf(stderr,
                   "\nlayerstream: watchdog: nothing has moved for %d s%s (a report: the run "
                   "goes on; --watchdog 0 turns it off). Stall table so far (the stuck stage is "
                   "the one not busy while the others wait on it):\n%s",
                   still_s_,
                   rc_.host_working() ? ", and the layer on the host CPU uses no CPU time" : "",
                   t.to_text().c_str());
    }
    if (!rc_.stopped()) arm_timer();
  });
}

ControlPlane::Impl::~Impl() {
  boost::system::error_code ec;
  signals_.cancel(ec);
  timer_.cancel();
  io_.stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace ls
