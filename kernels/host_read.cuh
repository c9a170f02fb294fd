// Bytes from pinned, mapped host memory into device memory by a kernel, not
// by a copy engine: the hybrid plan's hidden state coming back from the CPU
// tier. A cudaMemcpyAsync of it (host to device, over 64 KiB, so not sent
// inline with the stream's commands) queued on the copy engine behind the
// layer being streamed, which takes 9 ms on the 70b: on the H200 at width
// 8, 6.4-8.7 ms per CPU-tier layer and 65 ms of a 300 ms step went to that
// wait (bench/results/raw-2026-12-05-s33/call2, trace-steps). The SMs' reads of host memory
// share the link with the copy but wait behind nothing.
// Layout: src, a device pointer to mapped pinned host memory
// (cudaHostAlloc(..., cudaHostAllocMapped) and cudaHostGetDevicePointer);
// dst, device memory; both 16-byte aligned; any byte count.
// Grid: 16-byte loads, grid-stride; the tail (< 16 bytes) byte by byte.
// The CPU reference is memcpy (tests/gpu/test_ops.cpp).
// defines: read_host_cuda
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/status.h"

namespace ls {

Status read_host_cuda(const void* src, void* dst, uint64_t bytes, cudaStream_t stream);

}  // namespace ls
