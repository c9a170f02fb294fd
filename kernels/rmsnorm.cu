// RMSNorm (+ fused residual add, + 8-bit quantization) kernels: see rmsnorm.cuh.
#include <algorithm>

#include "kernels/act_q8_group.cuh"
#include "kernels/pdl.cuh"
#include "kernels/reduce.cuh"
#include "kernels/rmsnorm.cuh"
#include "runtime/cuda_util.cuh"

namespace ls {
namespace {

// Blocks past n_out that only issue a share of p.pf: one block (a decode
// token's norm) would leave one SM's copy engine to ask for megabytes.
int64_t pf_blocks(const L2Prefetch& pf, int64_t n_out) {
  uint64_t total = 0;
  for (int i = 0; i < pf.n; ++i) total += pf.bytes[i];
  const int64_t want =
      static_cast<int64_t>(std::min<uint64_t>((total + (128 << 10) - 1) >> 17, 128));
  return want > n_out ? want - n_out : 0;
}

// v2: 256 threads, a strided loop over the row (any n).
constexpr int kThreads = 256;
// v3: the row in registers, kVec float4s a thread, up to 1024 threads.
constexpr int kVecThreads = 1024;

__global__ void __launch_bounds__(kThreads) rmsnorm_f32_kernel(RmsNormParams p) {
  __shared__ float sh[32];
  pdl_trigger();
  l2_prefetch_issue(p.pf);
  if (blockIdx.x >= p.n_out) return;  // a block that only prefetches (pf_blocks)
  pdl_wait();
  const int64_t m = blockIdx.x;
  const int64_t r = p.rows ? p.rows[m] : m;
  float* h = p.h + r * p.n;
  float ss = 0.0f;
  if (p.add) {
    const float* a = p.add + r * p.n;
    for (int64_t i = threadIdx.x; i < p.n; i += blockDim.x) {
      const float v = h[i] + a[i];
      h[i] = v;
      ss += v * v;
    }
  } else {
    for (int64_t i = threadIdx.x; i < p.n; i += blockDim.x) ss += h[i] * h[i];
  }
  ss = block_sum(ss, sh);
  // 1/sqrt in double as the reference does: one per row, cheap.
  const float scale = static_cast<float>(1.0 / sqrt(static_cast<double>(ss) / p.n + p.eps));
  float* y = p.y + m * p.n;
  if (!p.q8.q) {
    for (int64_t i = threadIdx.x; i < p.n; i += blockDim.x) y[i] = h[i] * scale * p.w[i];
    return;
  }
  // n % 32 == 0 and blockDim a multiple of 32: each pass of a warp is one
  // whole block of 32 values (warp-uniform bounds).
  int8_t* q = p.q8.q + m * p.n;
  float2* ds = p.q8.ds + m * (p.n / kActQ8Block);
  for (int64_t i = threadIdx.x; i < p.n; i += blockDim.x) {
    const float v = h[i] * scale * p.w[i];
    y[i] = v;
    act_q8_group<1>(&v, true, q + i, ds + i / kActQ8Block, (threadIdx.x & 31) == 0);
  }
}

// v3: every load of the row is issued before any is used (v2's loop, whose
// stores to h may alias its loads, waited for each load in turn: 15 us for
// a 4096 row, the slowest kernel of a decode layer).
template <int kVec>
__global__ void __launch_bounds__(kVecThreads) rmsnorm_vec_kernel(RmsNormParams p) {
  __shared__ float sh[32];
  pdl_trigger();
  l2_prefetch_issue(p.pf);
  if (blockIdx.x >= p.n_out) return;  // a block that only prefetches (pf_blocks)
  // The norm weight, which no kernel of a step writes, is loaded before the
  // wait, so its round trip to memory overlaps the kernel before instead of
  // following the reduction.
  const int n4 = static_cast<int>(p.n / 4);
  const float4* w = reinterpret_cast<const float4*>(p.w);
  float4 g[kVec];
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    const int i = threadIdx.x + k * blockDim.x;
    g[k] = i < n4 ? w[i] : make_float4(0.f, 0.f, 0.f, 0.f);
  }
  pdl_wait();
  const int64_t m = blockIdx.x;
  const int64_t r = p.rows ? p.rows[m] : m;
  float4* h = reinterpret_cast<float4*>(p.h + r * p.n);
  float4 v[kVec];
  float ss = 0.0f;
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    const int i = threadIdx.x + k * blockDim.x;
    v[k] = i < n4 ? h[i] : make_float4(0.f, 0.f, 0.f, 0.f);
  }
  if (p.add) {
    const float4* a = reinterpret_cast<const float4*>(p.add + r * p.n);
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      const int i = threadIdx.x + k * blockDim.x;
      if (i < n4) {
        const float4 b = a[i];
        v[k].x += b.x, v[k].y += b.y, v[k].z += b.z, v[k].w += b.w;
        h[i] = v[k];
      }
    }
  }
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    ss += v[k].x * v[k].x;
    ss += v[k].y * v[k].y;
    ss += v[k].z * v[k].z;
    ss += v[k].w * v[k].w;
  }
  ss = block_sum(ss, sh);
  const float scale = static_cast<float>(1.0 / sqrt(static_cast<double>(ss) / p.n + p.eps));
  float4* y = reinterpret_cast<float4*>(p.y + m * p.n);
  const bool lead = (threadIdx.x & 7) == 0;  // the first of the 8 lanes of a block of 32
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    const int i = threadIdx.x + k * blockDim.x;
    const bool in = i < n4;
    float o[4] = {0.f, 0.f, 0.f, 0.f};
    if (in) {
      o[0] = v[k].x * scale * g[k].x;
      o[1] = v[k].y * scale * g[k].y;
      o[2] = v[k].z * scale * g[k].z;
      o[3] = v[k].w * scale * g[k].w;
      y[i] = make_float4(o[0], o[1], o[2], o[3]);
    }
    // Bounds are per group of 8 lanes (n % 32 == 0), so a group is all in or all out.
    if (p.q8.q)
      act_q8_group<4>(o, in, p.q8.q + m * p.n + 4 * static_cast<int64_t>(i),
                      p.q8.ds + m * (p.n / kActQ8Block) + i / 8, lead);
  }
}

}  // namespace

Status rmsnorm_f32_cuda(const RmsNormParams& p, cudaStream_t stream) {
  if (p.n_out == 0) return ok();
  if (p.q8.q && (p.n % kActQ8Block != 0 || !p.q8.ds))
    return make_error("rmsnorm: the 8-bit output needs n (%lld) a multiple of %d and ds",
                      static_cast<long long>(p.n), kActQ8Block);
  const dim3 grid(static_cast<unsigned>(p.n_out + pf_blocks(p.pf, p.n_out)));
  const int64_t n4 = p.n / 4;
  const bool aligned = p.n % 32 == 0 && reinterpret_cast<uintptr_t>(p.h) % 16 == 0 &&
                       (!p.add || reinterpret_cast<uintptr_t>(p.add) % 16 == 0) &&
                       reinterpret_cast<uintptr_t>(p.w) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(p.y) % 16 == 0;
  if (aligned && n4 <= 4 * kVecThreads) {
    const int per = static_cast<int>((n4 + kVecThreads - 1) / kVecThreads);  // 1..4
    const dim3 block(static_cast<unsigned>(per == 1 ? (n4 + 31) / 32 * 32 : kVecThreads));
    switch (per) {
      case 1:
        LS_CUDA_TRY(launch_pdl(rmsnorm_vec_kernel<1>, grid, block, 0, stream, p));
        return ok();
      case 2:
        LS_CUDA_TRY(launch_pdl(rmsnorm_vec_kernel<2>, grid, block, 0, stream, p));
        return ok();
      default:
        LS_CUDA_TRY(launch_pdl(rmsnorm_vec_kernel<4>, grid, block, 0, stream, p));
        return ok();
    }
  }
  LS_CUDA_TRY(launch_pdl(rmsnorm_f32_kernel, grid, dim3(kThreads), 0, stream, p));
  return ok();
}

}  // namespace ls
