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
//
// read_host_i32_cuda: a step's inputs (token ids, positions, sequences, the
// rows whose logits are kept), a few int32 arrays at any offset, in one
// launch. Copied from pinned memory they took the copy engine too, and at a
// step's start the copier has just queued the first streamed layers there:
// on the 70b at 24 GiB half the steps began with the GPU idle for three
// layers' copies, 26-28 ms (session 33's traces at widths 1, 8 and 32).
// defines: read_host_cuda, HostI32Seg, kHostI32Segs, read_host_i32_cuda
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/status.h"

namespace ls {

Status read_host_cuda(const void* src, void* dst, uint64_t bytes, cudaStream_t stream);

// n int32 from src (device pointer to mapped pinned host memory) to dst
// (device memory); 4-byte aligned, n >= 0.
struct HostI32Seg {
  const int32_t* src = nullptr;
  int32_t* dst = nullptr;
  int64_t n = 0;
};
inline constexpr int kHostI32Segs = 4;  // segments a call takes at most
Status read_host_i32_cuda(const HostI32Seg* segs, int n_segs, cudaStream_t stream);

}  // namespace ls
