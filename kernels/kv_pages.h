// The paged key/value cache's addressing, shared by the host and the device
// (the PagedAttention idea): a sequence's positions live in fixed-size blocks
// of kKvBlockLen positions, taken from a pool as the sequence grows, and a
// block table maps (sequence slot, position / kKvBlockLen) to a pool block.
// model/kv_blocks.h owns the tables (who holds which block); the kernels only
// read through them.
//
// Why 16 positions a block: what is wasted is at most one partly filled block
// per sequence (15 positions: 0.4 % of a 4k context), and a block of one
// key/value head is 16 × head_dim 128 × 2 bytes = 4 KiB of f16: one page, the
// span within which the CPU's hardware prefetchers stream, so the CPU tier's
// head-major reads (model/kv_cache.h) lose nothing to the paging. 64
// positions (the tensor-core prefill kernel's key tile) would waste up to 63
// positions a sequence; a tile of 64 positions spans 4 blocks, each row found
// through the table. A table of 4096 / 16 = 256 ints per slot is 1 KiB, sent
// with every step.
//
// Table: (n_seq, max_blocks) int32, row s the pool blocks of slot s in
// position order, -1 where the slot holds no block. A null table means the
// contiguous layout of the unpaged cache (n_seq, n_ctx): slot s's position p
// is row s·n_ctx + p (the kernels' tests use both, to check one against the
// other).
// defines: kKvBlockLen, kKvBlockShift, KvPages, kv_page_row()
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define LS_KV_HD __host__ __device__
#else
#define LS_KV_HD
#endif

namespace ls {

inline constexpr int32_t kKvBlockShift = 4;
inline constexpr int32_t kKvBlockLen = 1 << kKvBlockShift;  // positions per block

struct KvPages {
  const int32_t* table = nullptr;  // (n_seq, max_blocks); null: contiguous (n_seq, n_ctx)
  int32_t max_blocks = 0;          // the table's row stride
  int32_t shift = kKvBlockShift;   // log2 of the positions per block (kernel tests vary it)
};

// The pool row (a block's first row is block · 2^shift) holding position pos
// of slot seq; n_ctx is the contiguous layout's row stride (null table).
LS_KV_HD inline int64_t kv_page_row(const KvPages& pg, int32_t n_ctx, int32_t seq, int32_t pos) {
  if (!pg.table) return static_cast<int64_t>(seq) * n_ctx + pos;
  const int32_t block = pg.table[static_cast<int64_t>(seq) * pg.max_blocks + (pos >> pg.shift)];
  return (static_cast<int64_t>(block) << pg.shift) + (pos & ((1 << pg.shift) - 1));
}

}  // namespace ls
