// The control plane, on Asio: SIGINT/SIGTERM cancel the run cleanly (the
// actors drain, the trace is still written, the summary still printed; the
// request ends with "interrupted (Ctrl-C)" or "terminated (SIGTERM)"), and
// a stall watchdog prints the stall table when nothing has moved for N
// seconds while a request is running. The watchdog only reports: it never
// stops a run. "Moved": a pulse (a layer done, a buffer filled), or a layer
// computing on the host CPU while the process uses CPU time (a wide prefill
// layer on a few cores takes minutes; a deadlocked one burns nothing). Its
// own thread; everything it does to the data plane goes through RunControl.
// defines: ControlPlane
#pragma once

#include <asio.hpp>

#include <thread>

#include "runtime/run_control.h"
#include "runtime/trace.h"

namespace ls {

class ControlPlane {
 public:
  // watchdog_s = 0 turns the watchdog off.
  ControlPlane(RunControl& rc, const Tracer& tracer, int watchdog_s);
  ~ControlPlane();  // stops the thread, restores default signal handling
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;
  bool interrupted() const { return signal_.load() != 0; }
  // The signal that stopped the run (SIGINT or SIGTERM), 0 if none.
  int signal() const { return signal_.load(); }

 private:
  void arm_timer();

  RunControl& rc_;
  const Tracer& tracer_;
  int watchdog_s_;
  asio::io_context io_;
  asio::signal_set signals_;
  asio::steady_timer timer_;
  std::thread thread_;
  std::atomic<int> signal_{0};
  uint64_t last_progress_ = 0;
  double last_cpu_s_ = 0;  // the process's CPU time at the last tick
  int still_s_ = 0;
  bool reported_ = false;
};

}  // namespace ls
