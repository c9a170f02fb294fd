// The GEMM weight packers' software prefetch. A packer reads a row's
// blocks from DRAM (the first touch of the weights in a call) and does
// little arithmetic a block, so without it each block waits for its lines.
// On the H200 machine's Xeon, 16 threads, 70B shapes, the block 16 on
// fetched against none, two rounds: the GEMMs at 8 and 16 tokens read
// 7-15 % faster (geometric mean of each path's four shapes: VNNI, AMX and
// the AMX chunk form, Q4_K and Q6_K), at 32 tokens the same; the engine's
// widths 8 and 32 on the 70b at 24 GiB did not move (bound by the copy
// engine) (bench/results/2026-12-04-h200-s30.md, call 7). On the dev VM's
// Zen 4, one core from DRAM, the chunk form's Q4_K pack took 8.3-8.9 ns a
// block against 16.9. Past the row's end the prefetches fetch the next
// row's first blocks (rows are contiguous in a weight matrix), which the
// packer reads next; past the matrix they are dropped (a prefetch never
// faults).
// LS_CPU_PACK_AHEAD=n sets the distance in blocks (0: none), for A/B runs.
// defines: cpu_pack_ahead(), prefetch_span()
#pragma once

#include <cstdint>

#include "runtime/env.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace ls {

inline int64_t cpu_pack_ahead() {
  static const int64_t v = env_int("LS_CPU_PACK_AHEAD", 16, 0);
  return v;
}

// The lines of [p + at, p + at + bytes) into L1; the address is computed
// as an integer, since it may lie past the end of p's object.
inline void prefetch_span(const void* p, int64_t at, int64_t bytes) {
#if defined(__x86_64__) || defined(__i386__)
  const uintptr_t a = reinterpret_cast<uintptr_t>(p) + static_cast<uintptr_t>(at);
  for (int64_t o = 0; o < bytes; o += 64)
    _mm_prefetch(reinterpret_cast<const char*>(a + static_cast<uintptr_t>(o)), _MM_HINT_T0);
  _mm_prefetch(reinterpret_cast<const char*>(a + static_cast<uintptr_t>(bytes - 1)), _MM_HINT_T0);
#else
  (void)p, (void)at, (void)bytes;
#endif
}

}  // namespace ls
