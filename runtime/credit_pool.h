// Credits: a fixed set of buffer ids (staging buffers, device slots, pipeline
// depth). Acquiring one when none is free waits — that wait is the
// back-pressure the stall table reports. Buffers move, never copy: a message
// carries the id, and whoever is done with the buffer releases the id.
// defines: CreditPool
#pragma once

#include <cstdint>
#include <optional>

#include "runtime/mailbox.h"

namespace ls {

class CreditPool {
 public:
  explicit CreditPool(int32_t n) : n_(n), free_(static_cast<size_t>(n)) {
    RunControl never;
    for (int32_t i = 0; i < n; ++i) free_.push(i, never);
  }
  int32_t size() const { return n_; }
  // A free id, waiting as long as it takes; nullopt if the run stopped first.
  std::optional<int32_t> acquire(const RunControl& rc) { return free_.pop(rc); }
  std::optional<int32_t> try_acquire() { return free_.try_pop(); }
  void release(int32_t id) {
    RunControl never;
    free_.push(id, never);  // never blocks: at most n ids exist
  }
  size_t available_approx() const { return free_.size_approx(); }

 private:
  int32_t n_;
  Mailbox<int32_t> free_;
};

}  // namespace ls
