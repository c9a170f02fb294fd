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

#include <memory>

#include "runtime/run_control.h"
#include "runtime/trace.h"

namespace ls {

class ControlPlane {
 public:
  // watchdog_s = 0 turns the watchdog off. signals = false leaves SIGINT and
  // SIGTERM to the caller (the server drains its requests before it stops
  // the run, tools/serve/http_server.h).
  ControlPlane(RunControl& rc, const Tracer& tracer, int watchdog_s, bool signals = true);
  ~ControlPlane();  // stops the thread, restores default signal handling
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;
  bool interrupted() const { return signal() != 0; }
  // The signal that stopped the run (SIGINT or SIGTERM), 0 if none.
  int signal() const;

 private:
  // Asio's io_context, signal_set and timer, and the thread that runs them:
  // behind a pointer so that Boost.Asio (about 7 s of compile time per
  // translation unit) stays in control_plane.cpp and out of every file that
  // includes actors/engine.h.
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ls
