// The GEMM weight packers' software prefetch. A packer reads a row's
// blocks from DRAM (the first touch of the weights in a call) and does
// little arithmetic a block, so without it each block waits for its lines:
// on the H200 machine's Xeon, 16 threads, the chunk form's AMX GEMM read a
// 70B gate/up's Q4_K at 37-45 GB/s packing with no prefetch and 42-50 with
// the block 16 on fetched (bench/results/2026-12-04-h200-s30.md); on the
// dev VM's Zen 4, one core from DRAM, its Q4_K pack took 8.3-8.9 ns a block
// against 16.9. Past the row's end the prefetches fetch the next row's
// first blocks (rows are contiguous in a weight matrix), which the packer
// reads next; past the matrix they are dropped (a prefetch never faults).
// LS_CPU_PACK_AHEAD=n sets the distance in blocks (0: none), for A/B runs.
// defines: cpu_pack_ahead(), prefetch_span()
#pragma once

#include <cstdint>
#include <cstdlib>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace ls {

inline int64_t cpu_pack_ahead() {
  static const int64_t v = [] {
    const char* e = std::getenv("LS_CPU_PACK_AHEAD");
    if (!e || !*e) return int64_t{16};
    const long long n = std::atoll(e);
    return n > 0 ? static_cast<int64_t>(n) : int64_t{0};
  }();
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
