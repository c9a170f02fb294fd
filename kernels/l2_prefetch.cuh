// The next GEMV's weights asked into L2 by the short kernel before it.
//
// Why: a decode layer alternates GEMVs, which keep HBM busy, with kernels
// that read almost nothing (attention at short contexts, the norms, SwiGLU:
// 2-19 us each, session 16). While one of those runs, HBM idles, and the
// GEMV after it starts cold: its first loads wait a full DRAM round trip.
// Weights are never written during a step, so the short kernel can ask L2
// for the head of the next matrix at no risk: one bulk prefetch instruction
// (sm_90, cp.async.bulk.prefetch.L2) per chunk, issued by every thread of
// the grid in turn, costs a few instructions and no registers.
// defines: L2Prefetch, l2_prefetch(), l2_prefetch_grid(), pdl_wait_l2_prefetch()
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#include "kernels/pdl.cuh"
#endif

namespace ls {

// Bytes [p, p + bytes) to ask into L2; p null: nothing.
struct L2Prefetch {
  const void* p = nullptr;
  uint64_t bytes = 0;
  // Issued before the kernel's PDL wait (while the GEMV before it still
  // streams) instead of after it (A/B, LS_L2_PF_EARLY).
  bool before_wait = false;
};

#ifdef __CUDACC__
// This thread's share of pf: chunks part, part + n_parts, ... (a grid's
// threads pass their linear index and the grid's thread count). The range
// is cut to 16-byte bounds inside it (the instruction's rule); below sm_90
// it does nothing.
__device__ __forceinline__ void l2_prefetch(const L2Prefetch& pf, uint64_t part, uint64_t n_parts) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr uint64_t kChunk = 4096;
  if (!pf.p) return;
  const uint64_t b = reinterpret_cast<uint64_t>(pf.p);
  const uint64_t a = (b + 15) & ~uint64_t(15), e = (b + pf.bytes) & ~uint64_t(15);
  for (uint64_t c = a + part * kChunk; c < e; c += n_parts * kChunk) {
    const uint32_t len = static_cast<uint32_t>(e - c < kChunk ? e - c : kChunk);
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(c), "r"(len) : "memory");
  }
#endif
}

// The calling block's threads share pf with every other block of the grid.
__device__ __forceinline__ void l2_prefetch_grid(const L2Prefetch& pf) {
  const uint64_t nb = static_cast<uint64_t>(gridDim.x) * gridDim.y * gridDim.z;
  const uint64_t b =
      (static_cast<uint64_t>(blockIdx.z) * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  l2_prefetch(pf, b * blockDim.x + threadIdx.x, nb * blockDim.x);
}

// pdl_wait(), with pf issued by the grid just before or just after it.
__device__ __forceinline__ void pdl_wait_l2_prefetch(const L2Prefetch& pf) {
  if (pf.before_wait) l2_prefetch_grid(pf);
  pdl_wait();
  if (!pf.before_wait) l2_prefetch_grid(pf);
}
#endif

}  // namespace ls
