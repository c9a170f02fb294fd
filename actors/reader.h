// The reader: fills staging buffers with storage-tier layers. It keeps up to
// one layer per staging buffer in flight (the block source splits each into
// chunks at its queue depth), and forwards finished layers to the copier in
// the order they were planned. RAM-tier jobs pass through its queue unread,
// so the copier sees every streamed layer in planned order: slots are then
// taken in that order, which is what keeps the credits free of deadlock (a
// later layer holding the last slot while compute waits for an earlier one).
// A read error stops the run, naming the layer.
// defines: Reader
#pragma once

#include "actors/layer_memory.h"
#include "actors/messages.h"
#include "io/block_source.h"
#include "model/layer_map.h"
#include "runtime/credit_pool.h"
#include "runtime/trace.h"

namespace ls {

class Reader {
 public:
  Reader(const LayerMap& map, const LayerMemory& mem, BlockSource* src, CreditPool& staging,
         Mailbox<LayerJob>& in, Mailbox<LayerJob>& to_copier, RunControl& rc, Tracer& tracer);
  void run();  // the actor's thread

 private:
  const LayerMap& map_;
  const LayerMemory& mem_;
  BlockSource* src_;  // nullptr when no layer is on storage
  CreditPool& staging_;
  Mailbox<LayerJob>& in_;
  Mailbox<LayerJob>& to_copier_;
  RunControl& rc_;
  Tracer& tracer_;
};

}  // namespace ls
