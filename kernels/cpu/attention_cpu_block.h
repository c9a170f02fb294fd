// One block of kernels/cpu/attention_cpu.h: the query heads of one GQA group
// (one token, one key/value head) over up to kAttnBlock consecutive
// positions, giving the partial triple the blocks are merged from:
//     s[g][p] = scale · q_g · k_p            (into scores, then in place:)
//     m[g]    = max_p s[g][p]
//     e[g][p] = exp(s[g][p] - m[g]),   l[g] = Σ_p e[g][p]
//     acc[g]  = Σ_p e[g][p] · v_p            (head_dim values)
// One function per ISA variant (attention_cpu_{avx512,avx2,scalar}.cpp, one
// templated body in attention_cpu_body.h); internal to attention_cpu.cpp.
//
// Summation orders (fixed per variant, whatever the threads):
//   scores: W lanes (W = 16 avx512, 8 avx2, 16 or 1 portable), lane j summing
//           dims j, j+W, ... in order, then the lanes by a fixed tree (the
//           variant's hsums, the same for every position);
//   l:      W lanes over positions j, j+W, ..., then the tree;
//   acc:    one chain per value, positions in order.
// defines: AttnBlockArgs, attention_block_avx512(), attention_block_avx2(),
//          attention_block_portable()
#pragma once

#include <cstdint>

#include "kernels/ref/attention.h"

namespace ls {

struct AttnBlockArgs {
  const float* q = nullptr;  // (group, head_dim): the group's query heads
  const void* k = nullptr;   // key of the block's first position, at this head
  const void* v = nullptr;   // value, likewise
  AttnKvType type = AttnKvType::F16;
  int64_t ld_pos = 0;  // elements between positions
  int n_pos = 0;       // 1..kAttnBlock
  int ahead = 8;       // key rows the scores loop prefetches ahead
  int group = 0, head_dim = 0;
  float scale = 0;
  float* scores = nullptr;  // (group, kAttnBlock) scratch
  // The partial triple, out: m (group), l (group), acc (group, head_dim),
  // contiguous in that order.
  float* triple = nullptr;
};

// head_dim % 16 == 0.
void attention_block_avx512(const AttnBlockArgs& a);
// head_dim % 8 == 0.
void attention_block_avx2(const AttnBlockArgs& a);
// Any head_dim.
void attention_block_portable(const AttnBlockArgs& a);

}  // namespace ls
