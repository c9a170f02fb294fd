// Argmax kernels: see argmax.cuh.
#include "kernels/argmax.cuh"

#include <cooperative_groups.h>

#include <cfloat>
#include <climits>
#include <cstdint>

#include "kernels/pdl.cuh"
#include "runtime/cuda_util.cuh"

namespace ls {
namespace {

constexpr int kThreads = 1024;  // per block: the most loads in flight an SM can hold for one row
constexpr int kCluster = 8;     // blocks a row (sm_90): the portable cluster size
constexpr int32_t kNone = INT32_MAX;  // index of "nothing yet": loses every tie

__device__ __forceinline__ float neg_inf() {
  return __int_as_float(0xff800000);
}

// +inf counts as the largest float (the CPU's clamp); a NaN stays NaN, and
// since no comparison with a NaN is true it never replaces a best.
__device__ __forceinline__ float clamp_top(float v) {
  return v > FLT_MAX ? FLT_MAX : v;
}

// (v, i) beats (bv, bi) when larger, or equal with a lower index. The best
// starts at (-inf, kNone) and a NaN never enters, so this is a total order
// on every candidate; a best still at -inf at the end means "nothing above
// -inf", which the CPU's rule answers with id 0.
__device__ __forceinline__ bool better(float v, int32_t i, float bv, int32_t bi) {
  return v > bv || (v == bv && i < bi);
}

// The best of the whole warp, in every lane.
__device__ __forceinline__ void warp_best(float& bv, int32_t& bi) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float v = __shfl_xor_sync(0xffffffffu, bv, o);
    const int32_t i = __shfl_xor_sync(0xffffffffu, bi, o);
    if (better(v, i, bv, bi)) {
      bv = v;
      bi = i;
    }
  }
}

// The best of the block, in every lane of warp 0 (others keep their own).
__device__ __forceinline__ void block_best(float& bv, int32_t& bi) {
  __shared__ float sv[kThreads / 32];
  __shared__ int32_t si[kThreads / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  warp_best(bv, bi);
  if (lane == 0) {
    sv[warp] = bv;
    si[warp] = bi;
  }
  __syncthreads();
  if (warp == 0) {
    bv = lane < kThreads / 32 ? sv[lane] : neg_inf();
    bi = lane < kThreads / 32 ? si[lane] : kNone;
    warp_best(bv, bi);
  }
}

// This thread's best of x[begin, end), begin and end multiples of V, read V
// floats a load (V = 4: x 16-byte aligned). kUnroll loads are issued before
// the first compare, so a thread waits about one memory latency per
// kUnroll * V floats instead of one per float. Each thread visits its
// indices in increasing order, so a strict > keeps the first of equal values.
template <int V, int kUnroll>
__device__ __forceinline__ void thread_best(const float* x, int32_t begin, int32_t end, float& bv,
                                            int32_t& bi) {
  const int32_t g_end = end / V;  // groups of V floats
  for (int32_t g0 = begin / V + static_cast<int32_t>(threadIdx.x); g0 < g_end;
       g0 += kUnroll * kThreads) {
    float v[kUnroll][V];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int32_t g = g0 + u * kThreads;
      if constexpr (V == 4) {
        float4 q = make_float4(neg_inf(), neg_inf(), neg_inf(), neg_inf());
        if (g < g_end) q = reinterpret_cast<const float4*>(x)[g];
        v[u][0] = q.x;
        v[u][1] = q.y;
        v[u][2] = q.z;
        v[u][3] = q.w;
      } else {
        v[u][0] = g < g_end ? x[g] : neg_inf();
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int c = 0; c < V; ++c) {
        const float f = clamp_top(v[u][c]);
        if (f > bv) {
          bv = f;
          bi = (g0 + u * kThreads) * V + c;
        }
      }
  }
}

// Loads in flight per thread: 8 float4 or 16 floats, so the 8 blocks of a
// cluster cover 262,144 (vector) or 131,072 (scalar) floats of a row in one
// round. The kernels' __launch_bounds__(kThreads, 1) lets ptxas hold them
// all (~46 registers); without the 1 it aims at two blocks an SM (32
// registers) and waits on the loads a few at a time.
template <int V>
constexpr int kUnrollOf = V == 4 ? 8 : 16;

// One row per cluster of kCluster blocks (grid (kCluster, n_rows)): block
// `rank` scans the rank-th eighth of the row, then pushes its best into
// rank 0's shared memory, which picks the best of the eight and writes it.
template <int V>
__global__ void __launch_bounds__(kThreads, 1) argmax_f32_cluster_kernel(ArgmaxParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  __shared__ float cv[kCluster];  // rank 0's: each block's best, by rank
  __shared__ int32_t ci[kCluster];
  pdl_trigger();
  // A block may write another's shared memory only once that block runs:
  // arrive now, wait after the scan, so the wait costs nothing.
  __cluster_barrier_arrive_relaxed();
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int32_t n = static_cast<int32_t>(p.n);
  const int32_t chunk = (n + 4 * kCluster - 1) / (4 * kCluster) * 4;  // a multiple of 4, for V
  const int32_t begin = min(n, rank * chunk), end = min(n, begin + chunk);
  float bv = neg_inf();
  int32_t bi = kNone;
  pdl_wait();
  thread_best<V, kUnrollOf<V>>(p.x + static_cast<int64_t>(blockIdx.y) * p.n, begin, end, bv, bi);
  block_best(bv, bi);
  __cluster_barrier_wait();
  if (threadIdx.x == 0) {
    cluster.map_shared_rank(cv, 0)[rank] = bv;
    cluster.map_shared_rank(ci, 0)[rank] = bi;
  }
  // Releases the stores above, and makes rank 0 see them; the other blocks
  // may exit after it, since nothing reads their shared memory.
  cluster.sync();
  if (rank == 0 && threadIdx.x < 32) {
    bv = threadIdx.x < kCluster ? cv[threadIdx.x] : neg_inf();
    bi = threadIdx.x < kCluster ? ci[threadIdx.x] : kNone;
    warp_best(bv, bi);
    if (threadIdx.x == 0) p.out[blockIdx.y] = bv == neg_inf() ? 0 : bi;
  }
#endif
}

// Below sm_90 (no clusters), or past 65,535 rows: one block a row, the same
// scan in more rounds.
template <int V>
__global__ void __launch_bounds__(kThreads, 1) argmax_f32_block_kernel(ArgmaxParams p) {
  pdl_trigger();
  float bv = neg_inf();
  int32_t bi = kNone;
  pdl_wait();
  thread_best<V, kUnrollOf<V>>(p.x + static_cast<int64_t>(blockIdx.x) * p.n, 0,
                               static_cast<int32_t>(p.n), bv, bi);
  block_best(bv, bi);
  if (threadIdx.x == 0) p.out[blockIdx.x] = bv == neg_inf() ? 0 : bi;
}

// Whether the cluster kernel can run here, asked once: the device is sm_90
// or newer, and the kernel was compiled for sm_90 (a build for an older
// arch JIT-compiled on an H100 has its body empty).
bool clusters_usable() {
  static const bool usable = [] {
    int dev = 0, major = 0;
    cudaFuncAttributes fa = {};
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaFuncGetAttributes(&fa, argmax_f32_cluster_kernel<4>) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    return major >= 9 && fa.ptxVersion >= 90;
  }();
  return usable;
}

template <int V>
cudaError_t launch(const ArgmaxParams& p, cudaStream_t stream) {
  // gridDim.y holds the rows: at most 65,535 (far more than a step has).
  if (!clusters_usable() || p.n_rows > 65535)
    return launch_pdl(argmax_f32_block_kernel<V>, dim3(static_cast<unsigned>(p.n_rows)),
                      dim3(kThreads), 0, stream, p);
  return launch_pdl_cluster(argmax_f32_cluster_kernel<V>,
                            dim3(kCluster, static_cast<unsigned>(p.n_rows)), dim3(kThreads), 0,
                            stream, kCluster, p);
}

}  // namespace

Status argmax_f32_cuda(const ArgmaxParams& p, cudaStream_t stream) {
  if (p.n_rows == 0) return ok();
  // Ids are int32, and the scan's group index may run a round past n.
  if (p.n < 0 || p.n > (int64_t{1} << 30))
    return make_error("argmax: row length %lld out of range (0 to 2^30)",
                      static_cast<long long>(p.n));
  // Rows are x + r * n: every row is 16-byte aligned only when x is and n % 4 == 0.
  const bool vec4 = p.n % 4 == 0 && reinterpret_cast<uintptr_t>(p.x) % 16 == 0;
  LS_CUDA_TRY(vec4 ? launch<4>(p, stream) : launch<1>(p, stream));
  return ok();
}

}  // namespace ls
