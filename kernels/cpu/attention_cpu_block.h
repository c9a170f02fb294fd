// One block of kernels/cpu/attention_cpu.h: the query heads of one GQA group
// (one key/value head; one token, or several of one sequence) over up to
// kAttnBlock consecutive positions, giving the partial triple the blocks are
// merged from:
//     s[g][p] = scale · q_g · k_p            (into scores, then in place:)
//     m[g]    = max_p s[g][p]
//     e[g][p] = exp(s[g][p] - m[g]),   l[g] = Σ_p e[g][p]
//     acc[g]  = Σ_p e[g][p] · v_p            (head_dim values)
// One function per ISA variant (attention_cpu_{avx512,avx2,scalar}.cpp, one
// templated body in attention_cpu_body.h); internal to attention_cpu.cpp.
//
// Summation orders (fixed per variant, whatever the threads):
//   scores: tiled keys (AttnKv::k_tiled): one chain per score, dims 0, 1, ...
//           in order (a lane per position);
//           row keys: W lanes (W = 16 avx512, 8 avx2, 16 or 1 portable), lane
//           j summing dims j, j+W, ... in order, then the lanes by a fixed
//           tree (the variant's hsums, the same for every position);
//   l:      W lanes over positions j, j+W, ..., then the tree;
//   acc:    one chain per value, positions in order.
// defines: kAttnMinRun, kAttnMaxRuns, AttnBlockArgs, kv_row(), attention_block_avx512(),
//          attention_block_avx2(), attention_block_portable()
#pragma once

#include <cstdint>

#include "kernels/cpu/attention_cpu.h"
#include "kernels/ref/attention.h"

namespace ls {

// Runs per block at most: a paged cache's blocks of at least kAttnMinRun
// positions (kernels/kv_pages.h) within a block of up to kAttnBlock.
inline constexpr int kAttnMinRun = 4;
inline constexpr int kAttnMaxRuns = kAttnBlock / kAttnMinRun;

struct AttnBlockArgs {
  // The group's query heads (group, head_dim) of each of `tokens` tokens of
  // one sequence, token i's at q + i·ldq_tok: a block of positions that all
  // of them see is read once for all (attention_cpu.h, AttnCpuTuning::share).
  // Scores and the triple hold tokens · group rows, token-major.
  const float* q = nullptr;
  int tokens = 1;
  int64_t ldq_tok = 0;
  // Where the block's positions lie, at this head: runs of 2^run_shift
  // consecutive positions (a paged cache's blocks; one run of the whole
  // block for a contiguous cache), run r's first key at k_run[r] and value
  // at v_run[r]. Position p's key is at k_run[p >> run_shift] + (p mod
  // 2^run_shift)·ld_pos (kv_row below): only the addresses depend on the
  // runs, never the arithmetic.
  // (Left uninitialised: run_block fills the runs a block has, every call.)
  const void* k_run[kAttnMaxRuns];
  const void* v_run[kAttnMaxRuns];
  int run_shift = 30;
  AttnKvType type = AttnKvType::F16;
  // Keys in tiles (AttnKv::k_tiled): position p's tile starts at kv_row(a,
  // k_run, p rounded down to kAttnKTile); runs are whole tiles.
  bool k_tiled = false;
  int64_t ld_pos = 0;             // elements between positions of a run
  int n_pos = 0;                  // 1..kAttnBlock
  int ahead = 8;                  // key rows the scores loop prefetches ahead
  int prefetch = kAttnPfDefault;  // kAttnPf* bits: what the scores loop prefetches
  int group = 0, head_dim = 0;
  float scale = 0;
  // The next block this thread computes, if known: its keys go to L2 during
  // this block's value loop, a line or so per position (attention_cpu.h says
  // why). Runs of next_run_bytes at next_k[r], r < next_runs, the last one
  // next_last_bytes; next_runs 0: nothing.
  const void* next_k[kAttnMaxRuns];
  int next_runs = 0;
  int64_t next_run_bytes = 0, next_last_bytes = 0;
  float* scores = nullptr;  // (tokens · group, kAttnBlock) scratch
  float* q_t = nullptr;     // (head_dim, 8) scratch: a run's q transposed (tiled keys)
  // The partial triple, out: m (R), l (R), acc (R, head_dim), contiguous in
  // that order, R = tokens · group.
  float* triple = nullptr;
};

// Position p's key (runs = k_run) or value (v_run) row.
template <class T>
inline const T* kv_row(const AttnBlockArgs& a, const void* const* runs, int p) {
  return static_cast<const T*>(runs[p >> a.run_shift]) +
         int64_t{p & ((1 << a.run_shift) - 1)} * a.ld_pos;
}

// head_dim % 16 == 0.
void attention_block_avx512(const AttnBlockArgs& a);
// head_dim % 8 == 0.
void attention_block_avx2(const AttnBlockArgs& a);
// Any head_dim.
void attention_block_portable(const AttnBlockArgs& a);

}  // namespace ls
