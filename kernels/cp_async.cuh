// cp.async (sm_80+): 16-byte copies from global to shared memory that run
// while the thread goes on, in commit groups it waits for by count.
// defines: cp_async16(), cp_async16_evict_first(), l2_evict_first_policy(), cp_async8(),
//          cp_async16_zfill(), cp_async_commit(), cp_async_wait<N>()
#pragma once

#include <cstdint>

namespace ls {

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const uint32_t s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}
// An L2 cache policy that evicts what it covers first (createpolicy), for
// data read once: a GEMV's weights.
__device__ __forceinline__ uint64_t l2_evict_first_policy() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
  return p;
}
// cp_async16 under that policy (.L2::cache_hint).
__device__ __forceinline__ void cp_async16_evict_first(void* smem, const void* gmem,
                                                       uint64_t policy) {
  const uint32_t s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem),
               "l"(policy)
               : "memory");
}
// 8 bytes (through L1: the .cg form takes only 16), for rows whose blocks
// are 8-byte aligned only (Q6_K's 210-byte blocks, in fours).
__device__ __forceinline__ void cp_async8(void* smem, const void* gmem) {
  const uint32_t s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(s), "l"(gmem) : "memory");
}
// 16 bytes to the shared address dst; src_bytes 0 writes zeros (src is not read).
__device__ __forceinline__ void cp_async16_zfill(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
// Until at most N of this thread's commit groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

}  // namespace ls
