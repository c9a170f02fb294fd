// The CPU compute actor: runs the CPU-tier layers of a hybrid plan on the
// CPU backend, from the layer's RAM buffer, in place. The GPU compute actor
// sends it the hidden state when the next layer is a CPU one and waits for
// it to come back; meanwhile the copier keeps filling device slots with the
// streamed layers that follow, which is the overlap that makes the hybrid
// plan pay (CPU reading RAM and the PCIe link at once).
// defines: CpuComputeActor
#pragma once

#include <vector>

#include "actors/layer_memory.h"
#include "actors/messages.h"
#include "model/model.h"
#include "runtime/mailbox.h"
#include "runtime/run_control.h"
#include "runtime/trace.h"

namespace ls {

class CpuComputeActor {
 public:
  CpuComputeActor(const Model& m, Backend& cpu, const LayerMemory& mem, Mailbox<CpuWork>& in,
                  Mailbox<CpuWork>& out, RunControl& rc, Tracer& tracer);
  void run();  // the actor's thread

 private:
  const Model& m_;
  Backend& cpu_;
  const LayerMemory& mem_;
  Mailbox<CpuWork>& in_;
  Mailbox<CpuWork>& out_;
  RunControl& rc_;
  Tracer& tracer_;
  std::vector<Backend::KvRowSpan> spans_;  // a message's key/value rows, for the backend's calls
};

}  // namespace ls
