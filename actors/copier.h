// The copier: moves a streamed layer into a free device slot — from its RAM
// tier buffer, or from the staging buffer the reader filled — and passes the
// slot to compute. The DeviceLink does the moving: a memcpy on the CPU
// backend; on CUDA a cudaMemcpyAsync on the copy stream plus an event that
// compute's stream waits on, so this thread only issues copies and never
// waits for one. The staging buffer goes back to the reader when the link
// says its bytes have left (on CUDA: when the copy's event has completed).
// defines: Copier
#pragma once

#include <vector>

#include "actors/layer_memory.h"
#include "actors/messages.h"
#include "model/device_link.h"
#include "model/layer_map.h"
#include "runtime/credit_pool.h"
#include "runtime/trace.h"

namespace ls {

class Copier {
 public:
  Copier(const LayerMap& map, const LayerMemory& mem, DeviceLink& link, CreditPool& staging,
         CreditPool& slots, Mailbox<LayerJob>& in, Mailbox<LayerJob>& to_compute, RunControl& rc,
         Tracer& tracer);
  void run();  // the actor's thread

 private:
  const LayerMap& map_;
  const LayerMemory& mem_;
  DeviceLink& link_;
  CreditPool& staging_;
  CreditPool& slots_;
  Mailbox<LayerJob>& in_;
  Mailbox<LayerJob>& to_compute_;
  RunControl& rc_;
  Tracer& tracer_;
  std::vector<CopyPiece> pieces_;  // reused: nothing allocated per layer
};

}  // namespace ls
