// bench_kv_read: how fast the decode attention's reads of a KV cache can
// be, with no arithmetic: the tensor-core decode kernel's access pattern
// (kernels/attention_decode_tc.cu: grid (splits, KV heads), 128 threads, a
// split's positions in tiles of 64, each tile's key and value rows copied
// into shared memory with cp.async, `stages` tiles in flight) over two cache
// layouts, beside a plain streaming read of the same bytes.
//   rows:  a position's row holds its KV heads (the engine's GPU cache):
//          a head's 256-byte slice every n_head_kv * 256 bytes;
//   heads: head-major, each head's positions contiguous.
// The question it answers: is the attention at long contexts (0.5-0.6 of
// the bound at 16k, ls_bench_attention) held back by its arithmetic and
// latency, or by this read pattern itself?
// Each figure: calls captured in one CUDA graph, each on another layer's
// cache (enough layers to pass L2 several times), us a call, GB/s of the K
// and V bytes and the ratio to the D2D bound measured in the same run.
// Usage: ls_bench_kv_read [--ctx N] [--kv-heads N]
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "kernels/cp_async.cuh"
#include "tests/bench/bench_util.cuh"

using namespace ls;

namespace {

constexpr int kThreads = 128, kTile = 64, kHd = 128, kChunks = kHd / 8;
constexpr int kStageHalves = 2 * kTile * kHd;  // keys then values of a tile (no padding)

struct Args {
  const __half* k;
  const __half* v;
  int32_t n_pos, n_split, n_kv;
  bool heads;  // layout
  float* sink;
};

// One block: split blockIdx.x of head blockIdx.y.
template <int kStages>
__global__ void __launch_bounds__(kThreads, 2) tiles_kernel(Args a) {
  extern __shared__ __align__(16) __half sm[];
  const int s = blockIdx.x, h = blockIdx.y, tid = threadIdx.x;
  const int32_t chunk = (a.n_pos + a.n_split - 1) / a.n_split;
  const int32_t begin = s * chunk, end = min(a.n_pos, begin + chunk);
  const int n_tiles = end > begin ? (end - begin + kTile - 1) / kTile : 0;
  auto off = [&](int32_t q, int ch) -> int64_t {
    return a.heads ? (static_cast<int64_t>(h) * a.n_pos + q) * kHd + ch * 8
                   : (static_cast<int64_t>(q) * a.n_kv + h) * kHd + ch * 8;
  };
  auto stage = [&](int j) {
    __half* ks = sm + (j % kStages) * kStageHalves;
    __half* vs = ks + kTile * kHd;
    for (int i = tid; i < kTile * kChunks; i += kThreads) {
      const int r = i / kChunks, ch = i % kChunks;
      const int32_t q = begin + j * kTile + r;
      const uint32_t kd = static_cast<uint32_t>(__cvta_generic_to_shared(ks + r * kHd + ch * 8));
      const uint32_t vd = static_cast<uint32_t>(__cvta_generic_to_shared(vs + r * kHd + ch * 8));
      cp_async16_zfill(kd, q < end ? a.k + off(q, ch) : a.k, q < end ? 16 : 0);
      cp_async16_zfill(vd, q < end ? a.v + off(q, ch) : a.v, q < end ? 16 : 0);
    }
    cp_async_commit();
  };
  for (int j = 0; j < kStages && j < n_tiles; ++j) stage(j);
  float acc = 0.0f;
  for (int j = 0; j < n_tiles; ++j) {
    const int later = min(kStages - 1, n_tiles - 1 - j);
    if (later >= 3)
      cp_async_wait<3>();
    else if (later == 2)
      cp_async_wait<2>();
    else if (later == 1)
      cp_async_wait<1>();
    else
      cp_async_wait<0>();
    __syncthreads();
    const __half* ks = sm + (j % kStages) * kStageHalves;
    acc += __half2float(ks[tid * 16 + (j & 15)]) + __half2float(ks[kTile * kHd + tid * 16]);
    __syncthreads();
    if (j + kStages < n_tiles) stage(j + kStages);
  }
  if (acc == 12345.0f) a.sink[0] = acc;  // keeps the reads; never true for these values
}

// The same bytes as one streaming read: 16-byte loads, grid-stride.
__global__ void flat_kernel(const uint4* p, int64_t n16, float* sink) {
  uint32_t x = 0;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n16;
       i += int64_t{gridDim.x} * blockDim.x) {
    const uint4 w = __ldcs(p + i);
    x ^= w.x ^ w.y ^ w.z ^ w.w;
  }
  if (x == 0x12345678u) sink[0] = 1.0f;
}

}  // namespace

int main(int argc, char** argv) {
  int32_t n_pos = 16384, n_kv = 8;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if ((s == "--ctx" || s == "--kv-heads") && i + 1 < argc) {
      (s == "--ctx" ? n_pos : n_kv) = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: ls_bench_kv_read [--ctx N] [--kv-heads N]\n");
      return 2;
    }
  }
  if (n_pos < kTile || n_kv < 1) {
    std::fprintf(stderr, "error: --ctx must be >= %d and --kv-heads >= 1\n", kTile);
    return 2;
  }
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  const double bound = d2d_bound_gbs(st);
  const int64_t layer_halves = int64_t{n_pos} * n_kv * kHd;
  const double layer_bytes = 2.0 * layer_halves * 2;               // K and V
  int n_layers = static_cast<int>(4.0 * 256e6 / layer_bytes) + 2;  // ~1 GB, past L2
  if (n_layers > 64) n_layers = 64;
  __half *k, *v;
  float* sink;
  CK(cudaMalloc(&k, layer_halves * 2 * n_layers));
  CK(cudaMalloc(&v, layer_halves * 2 * n_layers));
  CK(cudaMalloc(&sink, 4));
  CK(cudaMemset(k, 0, layer_halves * 2 * n_layers));
  CK(cudaMemset(v, 0, layer_halves * 2 * n_layers));
  std::printf("ctx %d, %d KV heads, head_dim %d: %.1f MB of K and V a layer, %d layers\n", n_pos,
              n_kv, kHd, layer_bytes / 1e6, n_layers);
  auto report = [&](const char* name, double us) {
    const double gbs = layer_bytes / (us * 1e-6) / 1e9;
    std::printf("%-28s %8.2f us  %7.0f GB/s  %.3f of the bound\n", name, us, gbs, gbs / bound);
  };
  for (int n_split : {32, 64}) {
    for (int heads = 0; heads < 2; ++heads) {
      for (int stages : {2, 3, 4}) {
        const size_t smem = static_cast<size_t>(stages) * kStageHalves * 2;
        auto kern = stages == 2 ? tiles_kernel<2> : stages == 3 ? tiles_kernel<3> : tiles_kernel<4>;
        CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                static_cast<int>(smem)));
        const double us = graph_us(st, n_layers, [&](int i) {
          Args a{
              k + i * layer_halves, v + i * layer_halves, n_pos, n_split, n_kv, heads == 1, sink};
          kern<<<dim3(n_split, n_kv), kThreads, smem, st>>>(a);
        });
        char name[64];
        std::snprintf(name, sizeof name, "tiles %s, %d splits, %d st", heads ? "heads" : "rows",
                      n_split, stages);
        report(name, us);
      }
    }
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  for (int per_sm : {4, 8}) {
    const int64_t n16 = layer_halves * 2 / 16;  // one layer's K, then its V
    const double us = graph_us(st, n_layers, [&](int i) {
      flat_kernel<<<prop.multiProcessorCount * per_sm, 256, 0, st>>>(
          reinterpret_cast<const uint4*>(k + i * layer_halves), n16, sink);
      flat_kernel<<<prop.multiProcessorCount * per_sm, 256, 0, st>>>(
          reinterpret_cast<const uint4*>(v + i * layer_halves), n16, sink);
    });
    char name[64];
    std::snprintf(name, sizeof name, "flat (K, V), %d blocks/SM", per_sm);
    report(name, us);
  }
  return 0;
}
