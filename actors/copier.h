// The copier: moves a streamed layer into a free device slot — from its RAM
// tier buffer, or from the staging buffer the reader filled (which it then
// hands back) — and passes the slot to compute. This is the host version, for
// the CPU backend, where a "device slot" is host memory and the copy is a
// memcpy; the CUDA copier issues cudaMemcpyAsync on its own stream and
// records an event instead, with the same messages and credits.
// defines: HostCopier
#pragma once

#include "model/layer_map.h"
#include "runtime/credit_pool.h"
#include "runtime/layer_memory.h"
#include "runtime/messages.h"
#include "runtime/trace.h"

namespace ls {

class HostCopier {
 public:
  HostCopier(const LayerMap& map, const LayerMemory& mem, CreditPool& staging, CreditPool& slots,
             Mailbox<LayerJob>& in, Mailbox<LayerJob>& to_compute, RunControl& rc, Tracer& tracer);
  void run();  // the actor's thread

 private:
  const LayerMap& map_;
  const LayerMemory& mem_;
  CreditPool& staging_;
  CreditPool& slots_;
  Mailbox<LayerJob>& in_;
  Mailbox<LayerJob>& to_compute_;
  RunControl& rc_;
  Tracer& tracer_;
};

}  // namespace ls
