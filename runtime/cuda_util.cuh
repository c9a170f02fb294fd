// CUDA error handling as values: a failed call becomes an Error carrying the
// CUDA error name, its text and the call site, never an abort.
// defines: cuda_error(), cuda_sm_count(), cuda_host_alloc_mapped(), LS_CUDA_TRY,
//          LS_CUDA_LAUNCH_TRY
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/status.h"

namespace ls {

inline Error cuda_error(cudaError_t e, const char* call, const char* file, int line) {
  return make_error("CUDA error %s (%s) in %s at %s:%d", cudaGetErrorName(e), cudaGetErrorString(e),
                    call, file, line);
}

// The current device's SM count, read once per process (0 where it cannot
// be read: the kernels' shape rules then fall back to their defaults).
inline int cuda_sm_count() {
  static const int n = [] {
    int d = 0, s = 0;
    if (cudaGetDevice(&d) != cudaSuccess ||
        cudaDeviceGetAttribute(&s, cudaDevAttrMultiProcessorCount, d) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return s;
  }();
  return n;
}

// Pinned host memory the GPU's kernels read themselves (kernels/host_read.cuh):
// *host and its device address *dev. False where the allocation or the
// mapping fails: both null, the error cleared, and the caller takes the
// copy engine's path instead.
inline bool cuda_host_alloc_mapped(uint64_t bytes, void** host, const void** dev) {
  void* h = nullptr;
  void* d = nullptr;
  if (cudaHostAlloc(&h, bytes, cudaHostAllocMapped) == cudaSuccess &&
      cudaHostGetDevicePointer(&d, h, 0) == cudaSuccess) {
    *host = h;
    *dev = d;
    return true;
  }
  if (h) cudaFreeHost(h);
  (void)cudaGetLastError();
  *host = nullptr;
  *dev = nullptr;
  return false;
}

}  // namespace ls

// Return an Error from the enclosing function when a CUDA call fails.
#define LS_CUDA_TRY(call)                                                                          \
  do {                                                                                             \
    cudaError_t ls_cuda_e_ = (call);                                                               \
    if (ls_cuda_e_ != cudaSuccess) return ::ls::cuda_error(ls_cuda_e_, #call, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: the launch error, if any (cudaGetLastError also
// clears it, so the next check does not report it again).
#define LS_CUDA_LAUNCH_TRY() LS_CUDA_TRY(cudaGetLastError())
