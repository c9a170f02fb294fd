// Causal attention of a batch of query tokens over a key/value cache, and the
// reference that computes it one (token, query head) at a time in f32: the
// CPU backend's attention before kernels/cpu/attention_cpu.h, kept as the
// oracle (it converts each key or value it uses to f32, then dot_f32 and
// softmax_f32 of kernels/ref/ops.h).
//
// The cache is raw memory, so kernels/ needs nothing of model/: keys and
// values of sequence s at position p, head h start at k + s·ld_seq +
// p·ld_pos + h·ld_head (elements, f32 or f16 as uint16; ld_head = head_dim
// by default: each row n_head_kv heads of head_dim values). A paged cache
// (kernels/kv_pages.h: pages.table set) holds them at k + b·ld_block +
// (p mod block length)·ld_pos + h·ld_head instead, b = the pool block that
// slot s's table gives for position p. Query token t (at position pos[t] of
// sequence seq[t]) sees positions 0..pos[t] of its own sequence; its query head h (head_dim values
// at q + t·ldq + h·head_dim) uses key/value head h / (n_head / n_head_kv)
// (grouped-query attention), and its output goes to out + t·ldo +
// h·head_dim.
//
// Tiled keys (k_tiled; the CPU tier's KvCache): each head's keys in tiles of
// kAttnKTile consecutive positions (16j..16j+15, contiguous: ld_pos =
// head_dim, and runs of whole tiles), each tile dims-major: dim d of
// position p at the tile's start + d·kAttnKTile + p mod kAttnKTile, the
// tile's start being where position 16j's row would start. A cache holds
// whole tiles (a tile past a sequence's end is allocated; its unused
// positions are read and their scores dropped). Why: one vector load then
// holds one dim of 16 positions, so the CPU tier's scores are plain FMAs
// with a position per lane, no horizontal sums (attention_cpu.h). Values
// keep the row layout.
// defines: AttnKvType, kAttnKTile, AttnKv, AttnArgs, attention_ref_f32()
#pragma once

#include <cstdint>

#include "kernels/kv_pages.h"

namespace ls {

enum class AttnKvType { F32, F16 };

// Positions per key tile (AttnKv::k_tiled).
inline constexpr int kAttnKTile = 16;

// One layer's cache.
struct AttnKv {
  const void* k = nullptr;  // (n_seq, n_ctx, n_head_kv · head_dim) at (seq 0, pos 0)
  const void* v = nullptr;  // same layout
  AttnKvType type = AttnKvType::F16;
  int64_t ld_pos = 0;   // elements between positions (n_head_kv · head_dim for a packed cache)
  int64_t ld_seq = 0;   // elements between sequences (n_ctx · ld_pos)
  int64_t ld_head = 0;  // elements between heads; 0: head_dim (heads side by side in a row)
  // Paged (pages.table set): the block table, and the elements between pool
  // blocks; ld_seq is then unused.
  KvPages pages;
  int64_t ld_block = 0;
  bool k_tiled = false;  // keys in tiles (the header); values never
  int64_t head_stride(int head_dim) const { return ld_head ? ld_head : head_dim; }
  // Elements from k (or v) to position pos of sequence seq, head 0.
  int64_t at(int32_t seq, int32_t pos) const {
    if (!pages.table) return seq * ld_seq + pos * ld_pos;
    const int32_t b = pages.table[int64_t{seq} * pages.max_blocks + (pos >> pages.shift)];
    return b * ld_block + (pos & ((1 << pages.shift) - 1)) * ld_pos;
  }
  // Elements from k to dim d of the key of (seq, pos), head `head`.
  int64_t k_elem(int32_t seq, int32_t pos, int head, int head_dim, int d) const {
    const int64_t h = int64_t{head} * head_stride(head_dim);
    if (!k_tiled) return at(seq, pos) + h + d;
    return at(seq, pos & ~(kAttnKTile - 1)) + h + int64_t{d} * kAttnKTile +
           (pos & (kAttnKTile - 1));
  }
};

struct AttnArgs {
  int n_head = 0, n_head_kv = 0, head_dim = 0;
  float scale = 0;  // 1/sqrt(head_dim) for Llama
  int64_t n_tok = 0;
  const int32_t* pos = nullptr;  // (n_tok)
  const int32_t* seq = nullptr;  // (n_tok)
  const float* q = nullptr;      // (n_tok, ldq): n_head heads of head_dim
  int64_t ldq = 0;
  float* out = nullptr;  // (n_tok, ldo): n_head heads of head_dim
  int64_t ldo = 0;
  AttnKv kv;
};

// Single-threaded; allocates its scores buffer (a reference, not a hot path).
void attention_ref_f32(const AttnArgs& a);

}  // namespace ls
