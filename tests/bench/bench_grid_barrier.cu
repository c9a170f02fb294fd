// bench_grid_barrier: would one persistent kernel a decode step beat today's
// graph of PDL kernels (issue 20; docs/status.md, the plan's step 1)?
//
// The 8b Q4_K_M's decode step, modelled without arithmetic. Each layer is
// eight stages:
//   - four streams: reads of the GEMVs' weight bytes (q|k|v 15.2 MB, o
//     9.4, gate|up 66.1, down 40.6: the Q4_K and Q6_K layers' mean), in
//     16 KB chunks, 128 threads a chunk, loads with the streaming hint;
//   - four chains (the two norms, attention, SwiGLU): one block reads
//     16 KB of activations, reduces them and writes them back.
// 32 layers of them, with 32 layers' own weights (4.2 GB, past the L2),
// are run three ways:
//   kernels     one kernel a stage, launched with PDL (kernels/pdl.cuh), in
//               one CUDA graph: today's form;
//   persistent  one cooperative kernel of every block that fits, with a
//               grid barrier between stages (arrive: one red.release.gpu a
//               block; wait: ld.acquire.gpu until every block arrived);
//               (also with a 64 ns pause between a waiting block's polls);
//   prefetch    the same, and before it arrives at a barrier each block
//               asks the L2 for its first two chunks of the next stream
//               (cp.async.bulk.prefetch.L2), so the HBM streams through
//               the wait.
// Each way also runs with the streams alone (no chains), and with no
// bytes at all: an empty stage costs one PDL boundary, or one barrier.
// Each figure: us a layer (of 32 layers: the median of 10 graph launches,
// or of 5 cooperative ones), the streamed GB/s, and the ratio to the D2D
// bound measured in the same run.
// What it answers: if a barrier costs what a PDL boundary does, or the
// persistent kernel's streams run no closer to the bound, the persistent
// step is not worth its complexity.
// Usage: ls_bench_grid_barrier
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "kernels/l2_prefetch.cuh"
#include "kernels/pdl.cuh"
#include "tests/bench/bench_util.cuh"

using namespace ls;

namespace {

constexpr int kThreads = 128;
constexpr int kLoads = 8;                               // uint4 loads a thread a chunk
constexpr int64_t kChunk = int64_t{kThreads} * 16 * kLoads;  // 16 KB
constexpr int kActFloats = 4096;                        // a chain's activations
constexpr int kLayers = 32;

struct Stage {
  int64_t offset = 0;  // into the weights (a stream)
  int64_t bytes = 0;   // 0: a chain (or, with chains off, an empty stage)
  bool chain = false;
};

// One 16 KB chunk read by the block's 128 threads. The loads' values feed a
// store that never happens (the sum is never that value), so none is dropped.
__device__ __forceinline__ void read_chunk(const uint8_t* w, int64_t chunk, uint32_t* sink) {
  const uint4* p = reinterpret_cast<const uint4*>(w + chunk * kChunk) + threadIdx.x;
  uint32_t x = 0;
#pragma unroll
  for (int i = 0; i < kLoads; ++i) {
    const uint4 v = __ldcs(p + i * kThreads);
    x += v.x ^ v.y ^ v.z ^ v.w;
  }
  if (x == 0x9e3779b9u) sink[0] = x;
}

// A chain: the activations read, summed over the block, scaled and written
// back: two dependent trips to the L2 and a block reduction.
__device__ __forceinline__ void chain(float* act) {
  __shared__ float part[kThreads / 32];
  float v[kActFloats / kThreads];
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < kActFloats / kThreads; ++i) {
    v[i] = act[threadIdx.x + i * kThreads];
    s += v[i] * v[i];
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = s;
  __syncthreads();
  float t = 0.f;
#pragma unroll
  for (int w = 0; w < kThreads / 32; ++w) t += part[w];
  const float r = rsqrtf(t / kActFloats + 1e-5f);
#pragma unroll
  for (int i = 0; i < kActFloats / kThreads; ++i) act[threadIdx.x + i * kThreads] = v[i] * r;
  __syncthreads();
}

__global__ void __launch_bounds__(kThreads) stream_kernel(const uint8_t* w, uint32_t* sink) {
  pdl_trigger();
  pdl_wait();
  read_chunk(w, blockIdx.x, sink);
}

__global__ void __launch_bounds__(kThreads) chain_kernel(float* act) {
  pdl_trigger();
  pdl_wait();
  chain(act);
}

__global__ void __launch_bounds__(kThreads) empty_kernel() {
  pdl_trigger();
  pdl_wait();
}

__device__ __forceinline__ void barrier_arrive(unsigned* bar) {
  __syncthreads();  // the block's work is done (and, with release, visible)
  if (threadIdx.x == 0) asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(bar) : "memory");
}

// sleep_ns > 0: a pause between polls, so ~1,300 polling threads do not
// crowd the L2 slice that holds the count (0: poll back to back).
__device__ __forceinline__ void barrier_wait(const unsigned* bar, unsigned target, int sleep_ns) {
  if (threadIdx.x == 0) {
    unsigned v = 0;
    for (;;) {
      asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(bar) : "memory");
      if (v >= target) break;
      if (sleep_ns > 0) __nanosleep(static_cast<unsigned>(sleep_ns));
    }
  }
  __syncthreads();
}

// The whole run in one launch: stage s's work, then a barrier (the count
// after stage s is (s + 1) blocks' worth; bar starts at zero).
__global__ void __launch_bounds__(kThreads) persistent_kernel(const Stage* stages, int n_stages,
                                                              const uint8_t* w, float* act,
                                                              unsigned* bar, uint32_t* sink,
                                                              bool prefetch, int sleep_ns) {
  const unsigned nb = gridDim.x;
  for (int s = 0; s < n_stages; ++s) {
    const Stage st = stages[s];
    if (st.chain) {
      if (blockIdx.x == 0) chain(act);
    } else if (st.bytes > 0) {
      const int64_t n = st.bytes / kChunk;
      for (int64_t c = blockIdx.x; c < n; c += nb) read_chunk(w + st.offset, c, sink);
    }
    if (s + 1 == n_stages) break;
    if (prefetch && threadIdx.x == 0) {
      // The first two of this block's chunks of the next stream, from here
      // on, while the barrier waits.
      for (int u = s + 1; u < n_stages; ++u) {
        if (stages[u].bytes == 0) continue;
        const int64_t n = stages[u].bytes / kChunk;
        for (int64_t c = blockIdx.x, k = 0; c < n && k < 2; c += nb, ++k)
          l2_prefetch_bytes(w + stages[u].offset + c * kChunk, static_cast<uint32_t>(kChunk));
        break;
      }
    }
    barrier_arrive(bar);
    barrier_wait(bar, (static_cast<unsigned>(s) + 1) * nb, sleep_ns);
  }
}

// The 8b's layer: chain, q|k|v, chain, o, chain, gate|up, chain, down.
std::vector<Stage> layer_stages(bool chains, bool bytes) {
  const int64_t mb[4] = {15'200'000, 9'440'000, 66'060'000, 40'600'000};
  std::vector<Stage> v;
  int64_t off = 0;
  for (int l = 0; l < kLayers; ++l)
    for (int64_t m : mb) {
      Stage c;
      c.chain = chains;
      v.push_back(c);
      Stage s;
      s.bytes = bytes ? m / kChunk * kChunk : 0;
      s.offset = off;
      off += s.bytes;
      v.push_back(s);
    }
  return v;
}

int64_t streamed_bytes(const std::vector<Stage>& v) {
  int64_t b = 0;
  for (const Stage& s : v) b += s.bytes;
  return b;
}

}  // namespace

int main() {
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  const double bound = d2d_bound_gbs(s);
  const std::vector<Stage> full = layer_stages(true, true);
  const int64_t total = streamed_bytes(full);
  uint8_t* w;
  float* act;
  unsigned* bar;
  uint32_t* sink;
  Stage* dstages;
  CK(cudaMalloc(&w, static_cast<size_t>(total)));
  CK(cudaMemset(w, 1, static_cast<size_t>(total)));
  CK(cudaMalloc(&act, kActFloats * sizeof(float)));
  std::vector<float> ones(kActFloats, 1.0f);
  CK(cudaMemcpy(act, ones.data(), kActFloats * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaMalloc(&bar, sizeof(unsigned)));
  CK(cudaMalloc(&sink, sizeof(uint32_t)));
  CK(cudaMalloc(&dstages, full.size() * sizeof(Stage)));
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, persistent_kernel, kThreads, 0));
  const int nb = per_sm * prop.multiProcessorCount;
  std::printf("persistent: %d blocks (%d an SM) of %d threads; %lld MB streamed a layer "
              "(bytes alone at the bound: %.1f us a layer)\n",
              nb, per_sm, kThreads, static_cast<long long>(total / kLayers / 1'000'000),
              total / kLayers / (bound * 1e3));
  std::printf("| form | stages | us a layer | streamed GB/s | ratio to bound |\n|---|---|---|---|---|\n");
  auto report = [&](const char* form, const char* what, double ms, int64_t bytes) {
    const double us = ms * 1e3 / kLayers;
    if (bytes > 0)
      std::printf("| %s | %s | %.2f | %.0f | %.3f |\n", form, what, us, bytes / (ms * 1e6),
                  bytes / (ms * 1e6) / bound);
    else
      std::printf("| %s | %s | %.2f | - | - |\n", form, what, us);
  };
  struct Variant {
    const char* name;
    bool chains, bytes;
  };
  const Variant variants[] = {{"streams and chains", true, true},
                              {"streams alone", false, true},
                              {"empty (boundaries only)", false, false}};
  for (const Variant& var : variants) {
    const std::vector<Stage> st = layer_stages(var.chains, var.bytes);
    const int64_t bytes = streamed_bytes(st);
    // kernels: one a stage, PDL, in one graph (bench_util's graph_us: us a call).
    double us_stage = 0;
    {
      const PdlScope pdl;
      us_stage = graph_us(s, static_cast<int>(st.size()), [&](int i) {
        const Stage& x = st[static_cast<size_t>(i)];
        if (x.chain)
          CK(launch_pdl(chain_kernel, dim3(1), dim3(kThreads), 0, s, act));
        else if (x.bytes > 0)
          CK(launch_pdl(stream_kernel, dim3(static_cast<unsigned>(x.bytes / kChunk)),
                        dim3(kThreads), 0, s, static_cast<const uint8_t*>(w + x.offset), sink));
        else
          CK(launch_pdl(empty_kernel, dim3(1), dim3(kThreads), 0, s));
      });
    }
    report("kernels (PDL, one graph)", var.name, us_stage * static_cast<double>(st.size()) / 1e3,
           bytes);
    // persistent: one cooperative launch; polling back to back or with a
    // 64 ns pause; with the prefetch (back to back).
    CK(cudaMemcpy(dstages, st.data(), st.size() * sizeof(Stage), cudaMemcpyHostToDevice));
    struct Form {
      const char* name;
      bool prefetch;
      int sleep_ns;
    };
    const Form forms[] = {{"persistent (grid barrier)", false, 0},
                          {"persistent, 64 ns between polls", false, 64},
                          {"persistent + L2 prefetch", true, 0}};
    for (const Form& f : forms) {
      int n_stages = static_cast<int>(st.size());
      const uint8_t* cw = w;
      bool prefetch = f.prefetch;
      int sleep_ns = f.sleep_ns;
      void* args[] = {&dstages, &n_stages, &cw, &act, &bar, &sink, &prefetch, &sleep_ns};
      // Each timed call also zeroes the barrier's count (a memset of 4 bytes).
      const Stats p = time_it(s, 2, 5, [&](int) {
        CK(cudaMemsetAsync(bar, 0, sizeof(unsigned), s));
        CK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(persistent_kernel), dim3(nb),
                                       dim3(kThreads), args, 0, s));
      });
      report(f.name, var.name, p.med, bytes);
    }
  }
  CK(cudaFree(w));
  CK(cudaFree(act));
  CK(cudaFree(bar));
  CK(cudaFree(sink));
  CK(cudaFree(dstages));
  CK(cudaStreamDestroy(s));
  return 0;
}
