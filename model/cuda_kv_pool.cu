// CudaKvPool: see cuda_kv_pool.cuh.
#include "model/cuda_kv_pool.cuh"

#include <algorithm>
#include <cstring>

#include "kernels/cpu/convert_f16.h"
#include "kernels/host_read.cuh"
#include "model/kv_blocks.h"
#include "runtime/cuda_util.cuh"

namespace ls {

CudaKvPool::~CudaKvPool() {
  if (k_) cudaFree(k_);
  if (v_) cudaFree(v_);
  if (table_dev_) cudaFree(table_dev_);
  if (table_host_) cudaFreeHost(table_host_);
  if (pinned_) cudaFreeHost(pinned_);
}

uint8_t* CudaKvPool::stage(uint64_t n, const uint8_t** dev) {
  if (n > pinned_n_ && !pin_failed_) {
    if (pinned_) cudaFreeHost(pinned_);
    pinned_ = nullptr;
    pinned_dev_ = nullptr;
    pinned_n_ = 0;
    // A power of two from 1 MiB: a few sizes over a run, not one a call.
    uint64_t want = uint64_t{1} << 20;
    while (want < n) want *= 2;
    void* h = nullptr;
    const void* d = nullptr;
    if (cuda_host_alloc_mapped(want, &h, &d)) {
      pinned_ = static_cast<uint8_t*>(h);
      pinned_dev_ = static_cast<const uint8_t*>(d);
      pinned_n_ = want;
    } else {
      pin_failed_ = true;
    }
  }
  if (n <= pinned_n_) {
    if (dev) *dev = pinned_dev_;
    return pinned_;
  }
  if (dev) *dev = nullptr;
  staging_.resize(n);
  return staging_.data();
}

Status CudaKvPool::create(uint32_t n_layer, uint32_t n_seq, uint32_t n_ctx, uint32_t n_embd_kv,
                          KvType type, uint32_t n_blocks, cudaStream_t stream,
                          bool table_by_kernel) {
  n_layer_ = n_layer;
  n_seq_ = n_seq;
  n_ctx_ = n_ctx;
  n_embd_kv_ = n_embd_kv;
  type_ = type;
  n_blocks_ = n_blocks ? n_blocks : kv_default_blocks(n_seq, n_ctx);
  max_blocks_ = kv_blocks_for(n_ctx);
  const uint64_t half = bytes() / 2;
  for (uint8_t** p : {&k_, &v_}) {
    if (cudaMalloc(p, half) != cudaSuccess) {
      (void)cudaGetLastError();
      *p = nullptr;
      return make_error("out of device memory for the KV cache (%u blocks)", n_blocks_);
    }
    // Zeroed, as the unpaged cache was (a position is written before it is read).
    LS_CUDA_TRY(cudaMemsetAsync(*p, 0, half, stream));
  }
  table_.assign(static_cast<size_t>(n_seq) * max_blocks_, -1);
  if (n_blocks_ >= uint64_t{n_seq} * max_blocks_)
    for (size_t i = 0; i < table_.size(); ++i) table_[i] = static_cast<int32_t>(i);
  LS_CUDA_TRY(cudaMalloc(&table_dev_, std::max<size_t>(1, table_.size()) * sizeof(int32_t)));
  LS_CUDA_TRY(cudaMemcpyAsync(table_dev_, table_.data(), table_.size() * sizeof(int32_t),
                              cudaMemcpyHostToDevice, stream));
  if (table_by_kernel && !table_.empty()) {  // where mapping fails, set_table copies
    void* h = nullptr;
    const void* d = nullptr;
    if (cuda_host_alloc_mapped(table_.size() * sizeof(int32_t), &h, &d)) {
      table_host_ = static_cast<int32_t*>(h);
      table_host_dev_ = static_cast<const int32_t*>(d);
    }
  }
  return ok();
}

Status CudaKvPool::set_table(const std::vector<int32_t>& table, cudaStream_t stream) {
  if (table == table_) return ok();
  if (table.size() != table_.size())
    return make_error(
        "cuda backend: key/value block table of %zu entries; the cache's is %u slots x %u blocks",
        table.size(), n_seq_, max_blocks_);
  for (size_t i = 0; i < table.size(); ++i)
    if (table[i] < -1 || table[i] >= static_cast<int64_t>(n_blocks_))
      return make_error(
          "cuda backend: key/value block table: slot %zu, block %zu is %d; the pool has %u blocks",
          i / max_blocks_, i % max_blocks_, table[i], n_blocks_);
  table_ = table;
  // The staging (or, copied, the mirror) is not touched again before the
  // next step: begin() waits for the stream first.
  if (table_host_dev_) {
    std::copy(table_.begin(), table_.end(), table_host_);
    const HostI32Seg seg{table_host_dev_, table_dev_, static_cast<int64_t>(table_.size())};
    return read_host_i32_cuda(&seg, 1, stream);
  }
  LS_CUDA_TRY(cudaMemcpyAsync(table_dev_, table_.data(), table_.size() * sizeof(int32_t),
                              cudaMemcpyHostToDevice, stream));
  return ok();
}

bool CudaKvPool::holds(uint32_t seq, uint32_t p0, uint32_t p1) const {
  if (seq >= n_seq_ || p1 > n_ctx_) return false;
  for (uint32_t b = p0 / kKvBlockLen; b * kKvBlockLen < p1; ++b)
    if (table_[static_cast<size_t>(seq) * max_blocks_ + b] < 0) return false;
  return true;
}

uint32_t CudaKvPool::held(uint32_t seq) const {
  uint32_t n = 0;
  for (uint32_t b = 0; b < max_blocks_; ++b)
    n += table_[static_cast<size_t>(seq) * max_blocks_ + b] >= 0;
  return n;
}

uint64_t CudaKvPool::row(uint32_t seq, uint32_t pos) const {
  const int32_t block = table_[static_cast<size_t>(seq) * max_blocks_ + pos / kKvBlockLen];
  return static_cast<uint64_t>(block) * kKvBlockLen + pos % kKvBlockLen;
}

template <class F>
Status CudaKvPool::runs(uint32_t seq, uint32_t p0, uint32_t p1, F f) const {
  if (!holds(seq, p0, p1))
    return make_error("cuda backend: key/value rows %u..%u of sequence %u are not all in blocks",
                      p0, p1, seq);
  uint32_t p = p0;
  while (p < p1) {
    const uint64_t r0 = row(seq, p);
    uint32_t n = 1;
    while (p + n < p1 && row(seq, p + n) == r0 + n) ++n;
    LS_TRY(f(p, r0, n));
    p += n;
  }
  return ok();
}

// f16 pools go through host f16 staging, converted on the host (f16 to f32
// and back is exact). Once per wide step and CPU-tier layer, not per token.
Status CudaKvPool::read_rows(uint32_t l, uint32_t seq, uint32_t p0, uint32_t p1, float* k, float* v,
                             cudaStream_t stream) {
  const Span one{seq, p0, p1, k, v};
  return read_spans(l, &one, 1, stream);
}

// Spans in groups whose staging fits cap (a group of one where a span
// alone is larger): a layer's rows for every sequence can be the whole
// layer's cache (8 sequences of 32k positions: 1 GiB on the 70b), too much
// to pin at once.
template <class F>
static Status in_groups(const CudaKvPool::Span* spans, size_t n, uint64_t row_bytes, uint64_t cap,
                        F f) {
  size_t i = 0;
  while (i < n) {  // (every span checked by the caller first: nothing is moved for a bad one)
    size_t j = i;
    uint64_t bytes = 0;
    while (j < n) {
      const uint64_t b = 2 * uint64_t{spans[j].p1 - spans[j].p0} * row_bytes;
      if (j > i && bytes + b > cap) break;
      bytes += b;
      ++j;
    }
    LS_TRY(f(spans + i, j - i));
    i = j;
  }
  return ok();
}

Status CudaKvPool::check_spans(const Span* spans, size_t n) const {
  for (size_t i = 0; i < n; ++i)
    if (!holds(spans[i].seq, spans[i].p0, spans[i].p1))
      return make_error("cuda backend: key/value rows %u..%u of sequence %u are not all in blocks",
                        spans[i].p0, spans[i].p1, spans[i].seq);
  return ok();
}

Status CudaKvPool::read_spans(uint32_t l, const Span* spans, size_t n, cudaStream_t stream) {
  LS_TRY(check_spans(spans, n));
  return in_groups(spans, n, row_bytes(), stage_cap_,
                   [&](const Span* g, size_t m) { return read_group(l, g, m, stream); });
}

Status CudaKvPool::write_spans(uint32_t l, const Span* spans, size_t n, cudaStream_t stream) {
  LS_TRY(check_spans(spans, n));
  return in_groups(spans, n, row_bytes(), stage_cap_,
                   [&](const Span* g, size_t m) { return write_group(l, g, m, stream); });
}

Status CudaKvPool::read_group(uint32_t l, const Span* spans, size_t n_spans, cudaStream_t stream) {
  const uint64_t E = n_embd_kv_;
  uint64_t total = 0;  // f16 values of all the spans' keys (and as many values)
  for (size_t i = 0; i < n_spans; ++i) total += uint64_t{spans[i].p1 - spans[i].p0} * E;
  if (total == 0) return ok();
  uint16_t* const st =
      f32() ? nullptr : reinterpret_cast<uint16_t*>(stage(2 * total * sizeof(uint16_t)));
  const uint8_t* kl = static_cast<const uint8_t*>(k_layer(l));
  const uint8_t* vl = static_cast<const uint8_t*>(v_layer(l));
  uint64_t off = 0;  // span i's keys at st + off, its values at st + total + off
  for (size_t i = 0; i < n_spans; ++i) {
    const Span& sp = spans[i];
    LS_TRY(runs(sp.seq, sp.p0, sp.p1, [&](uint32_t p, uint64_t r, uint32_t len) -> Status {
      const uint64_t at = (p - sp.p0) * E, bytes = len * row_bytes();
      void* dk = f32() ? static_cast<void*>(sp.k + at) : st + off + at;
      void* dv = f32() ? static_cast<void*>(sp.v + at) : st + total + off + at;
      LS_CUDA_TRY(cudaMemcpyAsync(dk, kl + r * row_bytes(), bytes, cudaMemcpyDeviceToHost, stream));
      LS_CUDA_TRY(cudaMemcpyAsync(dv, vl + r * row_bytes(), bytes, cudaMemcpyDeviceToHost, stream));
      return ok();
    }));
    off += uint64_t{sp.p1 - sp.p0} * E;
  }
  LS_CUDA_TRY(cudaStreamSynchronize(stream));
  if (st) {
    off = 0;
    for (size_t i = 0; i < n_spans; ++i) {
      const int64_t m = static_cast<int64_t>(uint64_t{spans[i].p1 - spans[i].p0} * E);
      fp16_to_fp32_n(st + off, spans[i].k, m);
      fp16_to_fp32_n(st + total + off, spans[i].v, m);
      off += static_cast<uint64_t>(m);
    }
  }
  return ok();
}

Status CudaKvPool::write_rows(uint32_t l, uint32_t seq, uint32_t p0, uint32_t p1, const float* k,
                              const float* v, cudaStream_t stream) {
  const Span one{seq, p0, p1, const_cast<float*>(k), const_cast<float*>(v)};
  return write_spans(l, &one, 1, stream);
}

Status CudaKvPool::write_group(uint32_t l, const Span* spans, size_t n_spans, cudaStream_t stream) {
  const uint64_t E = n_embd_kv_, eb = elem();
  uint64_t total = 0;  // values of all the spans' keys (and as many values)
  for (size_t i = 0; i < n_spans; ++i) total += uint64_t{spans[i].p1 - spans[i].p0} * E;
  if (total == 0) return ok();
  const uint8_t* st_dev = nullptr;
  uint8_t* const st = stage(2 * total * eb, &st_dev);
  uint64_t off = 0;  // span i's keys at value off of the staging, its values at total + off
  for (size_t i = 0; i < n_spans; ++i) {
    const uint64_t m = uint64_t{spans[i].p1 - spans[i].p0} * E;
    if (f32()) {
      std::memcpy(st + off * eb, spans[i].k, m * eb);
      std::memcpy(st + (total + off) * eb, spans[i].v, m * eb);
    } else {
      fp32_to_fp16_n(spans[i].k, reinterpret_cast<uint16_t*>(st) + off, static_cast<int64_t>(m));
      fp32_to_fp16_n(spans[i].v, reinterpret_cast<uint16_t*>(st) + total + off,
                     static_cast<int64_t>(m));
    }
    off += m;
  }
  uint8_t* kl = static_cast<uint8_t*>(k_layer(l));
  uint8_t* vl = static_cast<uint8_t*>(v_layer(l));
  // A run's bytes by a kernel from the mapped staging where both ends are
  // 16-byte aligned (rows of n_embd_kv values: always, for head sizes of 8
  // values or more), else by a copy.
  auto put = [&](uint8_t* dst, uint64_t at, uint64_t bytes) -> Status {
    const uint8_t* src = st + at;
    if (st_dev && (reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) % 16 == 0)
      return read_host_cuda(st_dev + at, dst, bytes, stream);
    LS_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
    return ok();
  };
  off = 0;
  for (size_t i = 0; i < n_spans; ++i) {
    const Span& sp = spans[i];
    LS_TRY(runs(sp.seq, sp.p0, sp.p1, [&](uint32_t p, uint64_t r, uint32_t len) -> Status {
      const uint64_t at = off + (p - sp.p0) * E, bytes = len * row_bytes();
      LS_TRY(put(kl + r * row_bytes(), at * eb, bytes));
      return put(vl + r * row_bytes(), (total + at) * eb, bytes);
    }));
    off += uint64_t{sp.p1 - sp.p0} * E;
  }
  // The caller's rows (and the staging) may change once this returns.
  LS_CUDA_TRY(cudaStreamSynchronize(stream));
  return ok();
}

}  // namespace ls
