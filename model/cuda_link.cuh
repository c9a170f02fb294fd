// CudaLink: the device link of the CUDA backend (see model/device_link.h).
//   copy_to_slot — cudaMemcpyAsync of each piece from pinned host memory on
//     the copy stream, between two timing events; then the slot's "ready"
//     event. The copier thread returns at once.
//   before_layer — the compute stream waits on the slot's ready event (a
//     GPU-side wait), then a timing event marks the layer's start.
//   after_layer  — a timing event marks its end.
// Two watcher threads, one per stream, take the (begin, end) event pairs in
// issue order, block on the end event (cudaEventBlockingSync: the thread
// sleeps, no core spins), record the span on the "gpu-copy" / "gpu-compute"
// track with times from the events, and only then run the Release (a
// staging buffer back to the reader, a slot back to the copier). So a credit
// never returns before the GPU is done with its buffer, and the compute
// thread never waits for a copy.
// Event times become tracer times through one reference event recorded when
// the tracer is set (cudaEventElapsedTime is a float of ms: about 8 us of
// resolution 100 s into a run, fine for spans of ~10 ms).
// defines: CudaLink
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "model/device_link.h"
#include "runtime/mailbox.h"
#include "runtime/run_control.h"

namespace ls {

class CudaLink final : public DeviceLink {
 public:
  static constexpr int32_t kMaxSlots = 64;
  static constexpr int32_t kPairs = 128;  // timing event pairs per stream (in flight at most)

  // compute: the backend's stream, which layers run on.
  static Expected<std::unique_ptr<CudaLink>> create(cudaStream_t compute);
  ~CudaLink() override;

  MemoryOps memory_ops() override;
  void set_tracer(Tracer* t) override;
  Status copy_to_slot(uint8_t* dst, int32_t slot, std::span<const CopyPiece> pieces,
                      Release src_free, const GpuSpan& span) override;
  Status before_layer(int32_t slot, const GpuSpan& span) override;
  Status after_layer(Release done, const GpuSpan& span) override;
  Status drain() override;

 private:
  class Watcher;
  CudaLink() = default;

  cudaStream_t compute_ = nullptr, copy_ = nullptr;
  std::vector<cudaEvent_t> slot_ready_;  // kMaxSlots, recorded after each slot's copy
  std::unique_ptr<Watcher> copies_, layers_;
  int32_t open_pair_ = -1;  // compute thread: the pair of the layer in progress
};

}  // namespace ls
