// The device link: how a streamed layer reaches the memory compute reads it
// from, and how compute says that a device slot is free again. The copier and
// the compute actor talk to it; the backend supplies it.
//   HostLink (the CPU backend): slots are host memory, a copy is a memcpy,
//     and everything is done when the call returns.
//   CudaLink (the CUDA backend, model/cuda_link.cu): the copier issues
//     cudaMemcpyAsync on a copy stream and records an event; compute makes
//     its stream wait on that event; credits come back from a watcher thread
//     once the GPU has finished with the buffer — never from a busy wait on
//     the compute thread. The watchers also record the GPU's own copy and
//     compute spans in the trace, from event timestamps.
// A credit to give back is a Release (a pool and an id), not a callback, so
// nothing is allocated per layer.
// defines: CopyPiece, Release, GpuSpan, DeviceLink, HostLink
#pragma once

#include <cstdint>
#include <span>

#include "runtime/credit_pool.h"
#include "runtime/memory_ops.h"
#include "runtime/status.h"

namespace ls {

class Tracer;

// One contiguous piece of a layer: bytes from src to slot + dst_offset.
struct CopyPiece {
  uint64_t dst_offset = 0;
  const uint8_t* src = nullptr;
  uint64_t bytes = 0;
};

// A credit to hand back once the GPU no longer needs a buffer.
struct Release {
  CreditPool* pool = nullptr;
  int32_t id = -1;
  void operator()() const {
    if (pool && id >= 0) pool->release(id);
  }
};

// What a GPU span is about, for the trace (layer, step, bytes, buffer).
struct GpuSpan {
  int32_t layer = -1;
  int64_t step = -1;
  uint64_t bytes = 0;
  int32_t buffer = -1;
  const char* name = nullptr;  // a static string; null: the track's own ("layer", "copy")
};

class DeviceLink {
 public:
  virtual ~DeviceLink() = default;
  virtual MemoryOps memory_ops() = 0;
  // The trace the GPU spans go to (nullptr: none). Set before the first copy.
  virtual void set_tracer(Tracer*) {}
  // Copier thread: copy the pieces into slot `slot` at `dst`; `src_free`
  // runs once the source bytes may be overwritten (a staging buffer).
  virtual Status copy_to_slot(uint8_t* dst, int32_t slot, std::span<const CopyPiece> pieces,
                              Release src_free, const GpuSpan& span) = 0;
  // Compute thread, before a layer: the work issued next waits for slot
  // `slot`'s copy (-1: a resident layer, nothing to wait for).
  virtual Status before_layer(int32_t slot, const GpuSpan& span) = 0;
  // Compute thread, after a layer's work is issued: `done` runs once the
  // device has finished it (the slot may then be refilled).
  virtual Status after_layer(Release done, const GpuSpan& span) = 0;
  // Wait until every copy and every release issued so far has happened.
  virtual Status drain() = 0;
};

// Host memory, memcpy, and releases on the spot.
class HostLink final : public DeviceLink {
 public:
  explicit HostLink(MemoryOps ops = host_memory_ops()) : ops_(std::move(ops)) {}
  MemoryOps memory_ops() override { return ops_; }
  Status copy_to_slot(uint8_t* dst, int32_t, std::span<const CopyPiece> pieces, Release src_free,
                      const GpuSpan&) override;
  Status before_layer(int32_t, const GpuSpan&) override { return ok(); }
  Status after_layer(Release done, const GpuSpan&) override {
    done();
    return ok();
  }
  Status drain() override { return ok(); }

 private:
  MemoryOps ops_;
};

}  // namespace ls
