#include "model/cuda_link.cuh"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "runtime/cuda_util.cuh"
#include "runtime/trace.h"

namespace ls {

// One stream's watcher: a ring of (begin, end) timing events, the pending
// pairs in issue order, and the thread that waits for them.
class CudaLink::Watcher {
 public:
  struct Item {
    int32_t pair = -1;
    Release release;
    GpuSpan span;
  };

  Watcher(const char* track, const char* span_name) : track_name_(track), span_name_(span_name) {}

  Status init() {
    begin_.resize(kPairs);
    end_.resize(kPairs);
    for (int32_t i = 0; i < kPairs; ++i) {
      LS_CUDA_TRY(cudaEventCreateWithFlags(&begin_[i], cudaEventBlockingSync));
      LS_CUDA_TRY(cudaEventCreateWithFlags(&end_[i], cudaEventBlockingSync));
      free_.push(i, stop_);
    }
    thread_ = std::thread([this] { run(); });
    return ok();
  }

  ~Watcher() {
    (void)drain();
    stop_.stop();
    if (thread_.joinable()) thread_.join();
    for (cudaEvent_t e : begin_) cudaEventDestroy(e);
    for (cudaEvent_t e : end_) cudaEventDestroy(e);
  }

  void set_tracer(Tracer* t, cudaEvent_t ref, uint64_t ref_ns) {
    tracer_ = t;
    ref_ = ref;
    ref_ns_ = ref_ns;
  }

  // Issuing thread: a free pair with its begin event recorded on `stream`.
  Expected<int32_t> open(cudaStream_t stream) {
    std::optional<int32_t> p = free_.pop(stop_);
    if (!p) return make_error("cuda link: stopped");
    LS_CUDA_TRY(cudaEventRecord(begin_[*p], stream));
    return *p;
  }
  // Issuing thread: record the pair's end and hand it to the watcher.
  Status close(int32_t pair, cudaStream_t stream, Release release, const GpuSpan& span) {
    LS_CUDA_TRY(cudaEventRecord(end_[pair], stream));
    issued_.fetch_add(1, std::memory_order_relaxed);
    if (!pending_.push(Item{pair, release, span}, stop_)) return make_error("cuda link: stopped");
    return ok();
  }

  // Wait until every pair handed over has been processed.
  Status drain() {
    while (done_.load(std::memory_order_acquire) < issued_.load(std::memory_order_relaxed)) {
      if (!thread_.joinable()) break;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return error_;
  }

 private:
  void run() {
    int track = -1;
    Tracer* registered = nullptr;
    while (!stop_.stopped()) {
      std::optional<Item> it = pending_.pop(stop_);
      if (!it) return;
      const cudaError_t e = cudaEventSynchronize(end_[it->pair]);
      if (e != cudaSuccess && error_.ok())
        (void)(error_ = Status(cuda_error(e, "cudaEventSynchronize", __FILE__, __LINE__)));
      if (tracer_ && e == cudaSuccess) {
        if (registered != tracer_) {
          track = tracer_->register_track(track_name_);
          registered = tracer_;
        }
        float t0 = 0, t1 = 0;
        if (cudaEventElapsedTime(&t0, ref_, begin_[it->pair]) == cudaSuccess &&
            cudaEventElapsedTime(&t1, ref_, end_[it->pair]) == cudaSuccess) {
          SpanRecord r{};
          r.t0_ns = ref_ns_ + static_cast<uint64_t>(std::max(0.0f, t0) * 1e6);
          r.t1_ns = ref_ns_ + static_cast<uint64_t>(std::max(t0, t1) * 1e6);
          r.name = it->span.name ? it->span.name : span_name_;
          r.kind = SpanKind::Busy;
          r.layer = it->span.layer;
          r.step = it->span.step;
          r.bytes = it->span.bytes;
          r.buffer = it->span.buffer;
          // No flow arrow: the GPU runs a copy or a layer later than the CPU
          // span that issued it, so it would break the trip's causal order
          // (the args still say which layer and step it was).
          r.flow_id = 0;
          r.flow_phase = kFlowNone;
          tracer_->record(track, r);
        } else {
          (void)cudaGetLastError();
        }
      }
      it->release();  // even after an error: nobody may wait forever for a credit
      free_.push(it->pair, stop_);
      done_.fetch_add(1, std::memory_order_release);
    }
  }

  const char* track_name_;
  const char* span_name_;
  std::vector<cudaEvent_t> begin_, end_;
  RunControl stop_;  // the watcher's own: it outlives the pipeline's run
  Mailbox<int32_t> free_{kPairs};
  Mailbox<Item> pending_{kPairs};
  std::atomic<uint64_t> issued_{0}, done_{0};
  Status error_;
  Tracer* tracer_ = nullptr;
  cudaEvent_t ref_ = nullptr;
  uint64_t ref_ns_ = 0;
  std::thread thread_;
};

Expected<std::unique_ptr<CudaLink>> CudaLink::create(cudaStream_t compute) {
  std::unique_ptr<CudaLink> l(new CudaLink());
  l->compute_ = compute;
  LS_CUDA_TRY(cudaStreamCreateWithFlags(&l->copy_, cudaStreamNonBlocking));
  l->slot_ready_.assign(kMaxSlots, nullptr);
  for (cudaEvent_t& e : l->slot_ready_)
    LS_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  l->copies_ = std::make_unique<Watcher>("gpu-copy", "h2d");
  l->layers_ = std::make_unique<Watcher>("gpu-compute", "layer");
  LS_TRY(l->copies_->init());
  LS_TRY(l->layers_->init());
  return std::move(l);
}

CudaLink::~CudaLink() {
  copies_.reset();  // each drains first
  layers_.reset();
  for (cudaEvent_t e : slot_ready_)
    if (e) cudaEventDestroy(e);
  if (copy_) cudaStreamDestroy(copy_);
}

MemoryOps CudaLink::memory_ops() {
  MemoryOps ops;
  // Pinned host memory: the copy engine reads it directly (55 GB/s on Gen5
  // x16 against ~9 for pageable memory), and O_DIRECT reads land in it, so it
  // must be page-aligned: cudaHostAlloc sub-allocates small requests at
  // 512-byte offsets, hence page-aligned memory registered with CUDA instead.
  ops.alloc_host = [](uint64_t bytes) -> uint8_t* {
    const uint64_t n = std::max<uint64_t>((bytes + 4095) / 4096 * 4096, 4096);
    void* p = std::aligned_alloc(4096, n);
    if (!p) return nullptr;
    if (cudaHostRegister(p, n, cudaHostRegisterPortable) != cudaSuccess) {
      (void)cudaGetLastError();
      std::free(p);
      return nullptr;
    }
    return static_cast<uint8_t*>(p);
  };
  ops.free_host = [](uint8_t* p) {
    cudaHostUnregister(p);
    std::free(p);
  };
  ops.alloc_device = [](uint64_t bytes) -> uint8_t* {
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
    return static_cast<uint8_t*>(p);
  };
  ops.free_device = [](uint8_t* p) { cudaFree(p); };
  return ops;
}

void CudaLink::set_tracer(Tracer* t) {
  if (!t) return;
  // One reference point: an event and the tracer's clock read right after it completed.
  cudaEvent_t ref = nullptr;
  if (cudaEventCreate(&ref) != cudaSuccess || cudaEventRecord(ref, compute_) != cudaSuccess ||
      cudaEventSynchronize(ref) != cudaSuccess) {
    (void)cudaGetLastError();
    return;  // no GPU spans; the credits still flow
  }
  const uint64_t ns = t->now_ns();
  copies_->set_tracer(t, ref, ns);
  layers_->set_tracer(t, ref, ns);
}

Status CudaLink::copy_to_slot(uint8_t* dst, int32_t slot, std::span<const CopyPiece> pieces,
                              Release src_free, const GpuSpan& span) {
  if (slot < 0 || slot >= kMaxSlots)
    return make_error("cuda link: device slot %d is outside 0..%d (at most %d slots)", slot,
                      kMaxSlots - 1, kMaxSlots);
  auto pair = copies_->open(copy_);
  if (!pair) return pair.error();
  for (const CopyPiece& p : pieces)
    LS_CUDA_TRY(cudaMemcpyAsync(dst + p.dst_offset, p.src, p.bytes, cudaMemcpyHostToDevice, copy_));
  LS_CUDA_TRY(cudaEventRecord(slot_ready_[slot], copy_));
  return copies_->close(*pair, copy_, src_free, span);
}

Status CudaLink::before_layer(int32_t slot, const GpuSpan&) {
  if (slot >= kMaxSlots) return make_error("cuda link: device slot %d out of range", slot);
  if (slot >= 0) LS_CUDA_TRY(cudaStreamWaitEvent(compute_, slot_ready_[slot], 0));
  auto pair = layers_->open(compute_);
  if (!pair) return pair.error();
  open_pair_ = *pair;
  return ok();
}

Status CudaLink::after_layer(Release done, const GpuSpan& span) {
  if (open_pair_ < 0) return make_error("cuda link: after_layer without before_layer");
  const int32_t p = open_pair_;
  open_pair_ = -1;
  return layers_->close(p, compute_, done, span);
}

Status CudaLink::drain() {
  LS_CUDA_TRY(cudaStreamSynchronize(copy_));
  LS_CUDA_TRY(cudaStreamSynchronize(compute_));
  LS_TRY(copies_->drain());
  return layers_->drain();
}

}  // namespace ls
