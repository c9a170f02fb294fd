// Reads of mapped host memory into device memory: see host_read.cuh.
#include "kernels/host_read.cuh"

#include <algorithm>

#include "runtime/cuda_util.cuh"

namespace ls {
namespace {

__global__ void read_host_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                 uint64_t n16, const uint8_t* __restrict__ tail_src,
                                 uint8_t* __restrict__ tail_dst, int tail) {
  const uint64_t stride = uint64_t{gridDim.x} * blockDim.x;
  for (uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n16; i += stride)
    dst[i] = src[i];
  if (blockIdx.x == 0 && static_cast<int>(threadIdx.x) < tail)
    tail_dst[threadIdx.x] = tail_src[threadIdx.x];
}

struct HostI32Segs {
  HostI32Seg s[kHostI32Segs];
  int n;
};

// Each segment grid-strided in turn: a step's inputs are tens to thousands
// of ints, so the launch, not the loop, is what they cost.
__global__ void read_host_i32_kernel(HostI32Segs segs) {
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  const int64_t first = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  for (int k = 0; k < segs.n; ++k) {
    const HostI32Seg g = segs.s[k];
    for (int64_t i = first; i < g.n; i += stride) g.dst[i] = g.src[i];
  }
}

}  // namespace

Status read_host_i32_cuda(const HostI32Seg* segs, int n_segs, cudaStream_t stream) {
  if (n_segs < 0 || n_segs > kHostI32Segs)
    return make_error("read_host_i32_cuda: %d segments; at most %d", n_segs, kHostI32Segs);
  HostI32Segs p{};
  int64_t most = 0;
  for (int k = 0; k < n_segs; ++k) {
    if (segs[k].n < 0)
      return make_error("read_host_i32_cuda: segment %d of %lld ints", k,
                        static_cast<long long>(segs[k].n));
    if (segs[k].n == 0) continue;
    p.s[p.n++] = segs[k];
    most = std::max(most, segs[k].n);
  }
  if (p.n == 0) return ok();
  const int threads = 256;
  const int64_t want = (most + threads - 1) / threads;
  const int blocks = static_cast<int>(want > 64 ? 64 : want);
  read_host_i32_kernel<<<blocks, threads, 0, stream>>>(p);
  LS_CUDA_LAUNCH_TRY();
  return ok();
}

Status read_host_cuda(const void* src, void* dst, uint64_t bytes, cudaStream_t stream) {
  if (bytes == 0) return ok();
  if (reinterpret_cast<uintptr_t>(src) % 16 != 0 || reinterpret_cast<uintptr_t>(dst) % 16 != 0)
    return make_error("read_host_cuda: source and destination must be 16-byte aligned");
  const uint64_t n16 = bytes / 16;
  const int tail = static_cast<int>(bytes % 16);
  // Enough loads in flight to cover the link's latency (each ~1-2 us): a
  // block of 256 threads per 64 KiB, at most 1024 blocks.
  const int threads = 256;
  const uint64_t want = (n16 + 4095) / 4096;
  const int blocks = static_cast<int>(want < 1 ? 1 : want > 1024 ? 1024 : want);
  read_host_kernel<<<blocks, threads, 0, stream>>>(
      static_cast<const uint4*>(src), static_cast<uint4*>(dst), n16,
      static_cast<const uint8_t*>(src) + n16 * 16, static_cast<uint8_t*>(dst) + n16 * 16, tail);
  LS_CUDA_LAUNCH_TRY();
  return ok();
}

}  // namespace ls
