// L2 prefetch of the next GEMV's weights (sm_90: cp.async.bulk.prefetch).
//
// Why: a resident decode step is a chain of kernels, and only the GEMVs
// read memory at speed. The norms, the attention at short contexts and
// SwiGLU are latency chains over a few hundred KB, and each GEMV ramps up
// (its first loads' latency) and drains (its last wave) at its ends: over
// those stretches the HBM idles. Session 50 measured the 8b Q4_K_M at
// 2.2 ms a token on an H200 as on an H100 (445 against 455 tok/s), although
// the H200 reads 1.4x as fast: the step waits on its chain, not on bytes.
// So a kernel of the step asks the L2 for the first bytes of the weights
// the next GEMV reads, as soon as it starts (weights are never written in a
// step, so before its PDL wait). The HBM streams them while the chain runs,
// and the GEMV finds them in the L2. Nothing waits for a prefetch: it is a
// hint (a line evicted before use is read again, no error), and one thread
// a block issues its share in one instruction a range, no registers held.
//
// The ranges: 16-byte aligned starts, sizes multiples of 16 (the
// instruction's rule; l2_prefetch_add keeps to it by trimming). A block
// takes chunk blockIdx of the ranges cut into one chunk per block (at least
// kL2PrefetchMinChunk bytes each), so the launch's first blocks issue them.
// defines: l2_prefetch_bytes, L2Prefetch, kL2PrefetchMinChunk, l2_prefetch_add(), l2_prefetch_issue()
#pragma once

#include <cstdint>

namespace ls {

struct L2Prefetch {
  static constexpr int kMax = 3;
  const void* p[kMax] = {nullptr, nullptr, nullptr};
  uint32_t bytes[kMax] = {0, 0, 0};
  int n = 0;
};

inline constexpr uint32_t kL2PrefetchMinChunk = 32 * 1024;

// Adds the prefix of [p, p + bytes) that fits `budget` (what is left of it
// is returned), trimmed to the instruction's alignment.
inline uint64_t l2_prefetch_add(L2Prefetch& pf, const void* p, uint64_t bytes, uint64_t budget) {
  if (pf.n >= L2Prefetch::kMax || budget == 0 || p == nullptr) return budget;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const uintptr_t a16 = (a + 15) & ~uintptr_t(15);
  if (a16 - a >= bytes) return budget;
  uint64_t len = bytes - (a16 - a);
  if (len > budget) len = budget;
  if (len > 0xFFFFFFF0u) len = 0xFFFFFFF0u;
  len &= ~uint64_t(15);
  if (len == 0) return budget;
  pf.p[pf.n] = reinterpret_cast<const void*>(a16);
  pf.bytes[pf.n] = static_cast<uint32_t>(len);
  ++pf.n;
  return budget - len;
}

#ifdef __CUDACC__
// One cp.async.bulk.prefetch.L2 of [p, p + bytes): p 16-byte aligned, bytes a
// multiple of 16 (the instruction's rules). Nothing below sm_90.
__device__ __forceinline__ void l2_prefetch_bytes(const void* p, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(p), "r"(bytes) : "memory");
#else
  (void)p, (void)bytes;
#endif
}

// This block's share of pf: thread 0 issues it. Call it from every block of
// a launch (a flat grid or not), before the PDL wait.
__device__ __forceinline__ void l2_prefetch_issue(const L2Prefetch& pf) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (pf.n == 0 || threadIdx.x + threadIdx.y + threadIdx.z != 0) return;
  const uint64_t blocks = uint64_t(gridDim.x) * gridDim.y * gridDim.z;
  const uint64_t b =
      blockIdx.x + uint64_t(gridDim.x) * (blockIdx.y + uint64_t(gridDim.y) * blockIdx.z);
  // Loops of kMax, unrolled: an index known at compile time keeps pf in
  // the parameter space (a run-time index copies the kernel's parameters to
  // local memory, session 12).
  uint64_t total = 0;
#pragma unroll
  for (int i = 0; i < L2Prefetch::kMax; ++i) total += i < pf.n ? pf.bytes[i] : 0u;
  uint64_t chunk = (total + blocks - 1) / blocks;
  chunk = chunk < kL2PrefetchMinChunk ? kL2PrefetchMinChunk : (chunk + 15) & ~uint64_t(15);
  // Chunk b of the ranges laid end to end; a chunk that crosses a range's
  // end goes on into the next.
  uint64_t lo = b * chunk, hi = lo + chunk, base = 0;
  if (lo >= total) return;
#pragma unroll
  for (int i = 0; i < L2Prefetch::kMax; ++i) {
    if (i >= pf.n) break;
    const uint64_t end = base + pf.bytes[i];
    if (lo < end && hi > base) {
      const uint64_t s = lo > base ? lo : base, e = hi < end ? hi : end;
      l2_prefetch_bytes(static_cast<const char*>(pf.p[i]) + (s - base),
                        static_cast<uint32_t>(e - s));
    }
    base = end;
  }
#else
  (void)pf;
#endif
}
#endif

}  // namespace ls
