// The CUDA backend's paged key/value cache (kernels/kv_pages.h): a pool of
// n_blocks blocks of kKvBlockLen positions for every layer in device memory,
// k and v each (n_layer, n_blocks · kKvBlockLen, n_embd_kv) of __half (or of
// float: --kv-type f32), and the block table (n_seq, max_blocks) int32 on the
// device, at a fixed address (the decode layers' CUDA graphs read it there:
// a new table needs no new capture), with its host mirror. The sampler's
// table (model/kv_blocks.h) arrives with each step's batch; set_table
// uploads it on the compute stream when it changed, ordered before the
// step's kernels. read_rows / write_rows move a sequence's rows between the
// pool and host f32 (hybrid plans, Backend::read_kv / write_kv).
// defines: CudaKvPool
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "kernels/kv_pages.h"
#include "model/kv_cache.h"
#include "runtime/status.h"

namespace ls {

class CudaKvPool {
 public:
  CudaKvPool() = default;
  CudaKvPool(const CudaKvPool&) = delete;
  CudaKvPool& operator=(const CudaKvPool&) = delete;
  ~CudaKvPool();

  // Device bytes of a pool (its table is a few KiB besides: not counted).
  static uint64_t bytes_for(uint32_t n_layer, uint32_t n_blocks, uint32_t n_embd_kv, KvType type) {
    return KvCache::bytes_for(n_layer, n_blocks, n_embd_kv, type);
  }
  // Allocates the pool, zeroed, and the table: slot s the blocks
  // s·max_blocks.. when the pool holds n_ctx positions for every slot, else
  // none. n_blocks 0: that default pool. When it fails, allocated() says
  // whether the pool's memory was the cause (the caller's message then says
  // what else the device holds).
  // table_by_kernel: set_table's uploads read by a kernel from pinned,
  // mapped host memory (kernels/host_read.cuh), not copied: past 64 KiB
  // (n_seq x n_ctx over 262,144 positions: 8 slots of 32k) a copy goes to a
  // copy engine and waits behind the layers a hybrid plan streams, as the
  // step's other inputs did (CudaBackendOptions::inputs_by_kernel).
  Status create(uint32_t n_layer, uint32_t n_seq, uint32_t n_ctx, uint32_t n_embd_kv, KvType type,
                uint32_t n_blocks, cudaStream_t stream, bool table_by_kernel = true);
  bool allocated() const { return k_ && v_; }

  uint32_t n_blocks() const { return n_blocks_; }
  uint32_t n_seq() const { return n_seq_; }
  uint32_t n_ctx() const { return n_ctx_; }
  bool f32() const { return type_ == KvType::F32; }
  uint64_t bytes() const { return bytes_for(n_layer_, n_blocks_, n_embd_kv_, type_); }

  // A batch's table, (n_seq, max_blocks): checked (-1 or a pool block), and
  // uploaded on `stream` when it differs from the one held.
  Status set_table(const std::vector<int32_t>& table, cudaStream_t stream);
  // Whether slot seq holds a block for every position of [p0, p1); the
  // blocks it holds (for messages).
  bool holds(uint32_t seq, uint32_t p0, uint32_t p1) const;
  // The block table the cache reads through (the host's mirror of the last set_table).
  const std::vector<int32_t>& table() const { return table_; }
  uint32_t held(uint32_t seq) const;

  // Layer l's pool (row 0) and the table, for kv_store and attention.
  void* k_layer(uint32_t l) const { return k_ + layer_bytes() * l; }
  void* v_layer(uint32_t l) const { return v_ + layer_bytes() * l; }
  KvPages pages() const { return {table_dev_, static_cast<int32_t>(max_blocks_), kKvBlockShift}; }

  // Rows [p0, p1) of slot seq, layer l, to and from host f32 (n_embd_kv a
  // row; exact both ways for either type), on `stream`, waited for. The
  // rows must be in blocks (holds()).
  Status read_rows(uint32_t l, uint32_t seq, uint32_t p0, uint32_t p1, float* k, float* v,
                   cudaStream_t stream);
  Status write_rows(uint32_t l, uint32_t seq, uint32_t p0, uint32_t p1, const float* k,
                    const float* v, cudaStream_t stream);
  // read_rows and write_rows for several slots of layer l, waited for once
  // a group of up to set_stage_cap bytes of rows (64 MiB): rows [p0, p1) of
  // slot seq, to or from k and v.
  struct Span {
    uint32_t seq, p0, p1;
    float *k, *v;
  };
  Status read_spans(uint32_t l, const Span* s, size_t n, cudaStream_t stream);
  void set_stage_cap(uint64_t bytes) { stage_cap_ = bytes; }
  Status write_spans(uint32_t l, const Span* s, size_t n, cudaStream_t stream);

 private:
  uint64_t elem() const { return f32() ? 4 : 2; }
  uint64_t row_bytes() const { return uint64_t{n_embd_kv_} * elem(); }
  uint64_t layer_bytes() const { return uint64_t{n_blocks_} * kKvBlockLen * row_bytes(); }
  // The pool row of (seq, pos), from the host mirror.
  uint64_t row(uint32_t seq, uint32_t pos) const;
  // Calls f(p, pool row, n) for each run of positions [p, p + n) of [p0, p1)
  // that lie in consecutive pool rows (a block, or blocks taken in order).
  template <class F>
  Status runs(uint32_t seq, uint32_t p0, uint32_t p1, F f) const;

  uint32_t n_layer_ = 0, n_seq_ = 0, n_ctx_ = 0, n_embd_kv_ = 0, n_blocks_ = 0, max_blocks_ = 0;
  KvType type_ = KvType::F16;
  uint8_t* k_ = nullptr;
  uint8_t* v_ = nullptr;
  int32_t* table_dev_ = nullptr;
  std::vector<int32_t> table_;               // the host mirror
  int32_t* table_host_ = nullptr;            // pinned, mapped staging of uploads (null: copies)
  const int32_t* table_host_dev_ = nullptr;  // its device address
  // Rows in transit (keys, then values): pinned and mapped. Read from the
  // device by the copy engine's DMA, not the driver's staged copies of
  // pageable memory; written to it by a kernel reading the mapped memory
  // (kernels/host_read.cuh), which waits behind no layer the copy engine is
  // streaming, where a copy did (14.6 ms a layer's rows at width 32 on the
  // 70b, session 45). Grown as needed; the vector where pinning fails.
  // n: bytes; dev (may be null): the buffer's device address.
  uint8_t* stage(uint64_t n, const uint8_t** dev = nullptr);
  Status check_spans(const Span* s, size_t n) const;  // every span in blocks
  // read_spans / write_spans of a group whose staging is held at once.
  Status read_group(uint32_t l, const Span* s, size_t n, cudaStream_t stream);
  Status write_group(uint32_t l, const Span* s, size_t n, cudaStream_t stream);
  uint8_t* pinned_ = nullptr;
  const uint8_t* pinned_dev_ = nullptr;
  uint64_t pinned_n_ = 0;
  uint64_t stage_cap_ = uint64_t{64} << 20;  // a group's staging (read_spans, write_spans)
  bool pin_failed_ = false;
  std::vector<uint8_t> staging_;
};

}  // namespace ls
