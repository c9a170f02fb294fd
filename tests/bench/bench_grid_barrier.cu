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
//   hierarchical  the same with a two-level barrier: a block arrives at its
//               group's count (32 blocks a group, each count on a line of
//               its own); the group's last arrival counts the group at the
//               top, waits for every group, then releases its group by a
//               flag of the group's own. So no address sees more than ~40
//               arrivals or pollers; the flat barrier's 1,320 pollers of
//               one word crowd the L2 slice that must also take the
//               arrivals (session 57: 4.1 us a barrier against 0.53 us a
//               PDL boundary).
//   prefetch    the hierarchical barrier, and before a block arrives the
//               first blocks ask the L2 for their first chunk of the next
//               stream (cp.async.bulk.prefetch.L2), 4 or 16 MB in all, so
//               the HBM streams through the wait. (Session 56's form, two
//               chunks a block, asked for 42 MB, most of the L2.)
// Each way also runs with the streams alone (no chains), and with no
// bytes at all: an empty stage costs one PDL boundary, or one barrier.
// Each figure: us a layer (of 32 layers: the median of 10 graph launches,
// or of 5 cooperative ones), the streamed GB/s, and the ratio to the D2D
// bound measured in the same run.
// What it answers: if a barrier costs what a PDL boundary does, or the
// persistent kernel's streams run no closer to the bound, the persistent
// step is not worth its complexity. Session 57, on an H100: a PDL boundary
// 0.54 us, the flat barrier 4.1, the hierarchical 2.6-3.0; streams and
// chains at 0.86 of the bound as kernels, 0.64-0.65 persistent, however
// prefetched. The step stays a graph of kernels (docs/status.md, issue
// 20); the bench stays to ask an H200 the same.
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
  int next_stream = -1;  // the next stage that streams bytes (-1: none)
};

constexpr int kGroup = 32;       // blocks a group of the hierarchical barrier
constexpr int kLineWords = 32;   // 128 bytes: each count or flag on a line of its own

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

__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// Flat: every block counts itself at bar[0] and polls it until the phase's
// count (phase p: p blocks' worth; bar starts at zero). sleep_ns > 0: a
// pause between polls (0: back to back).
__device__ __forceinline__ void flat_barrier(unsigned* bar, unsigned p, int sleep_ns) {
  __syncthreads();  // the block's work is done (and, with release, visible)
  if (threadIdx.x == 0) {
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(bar) : "memory");
    const unsigned target = p * gridDim.x;
    while (ld_acquire(bar) < target)
      if (sleep_ns > 0) __nanosleep(static_cast<unsigned>(sleep_ns));
  }
  __syncthreads();
}

// Hierarchical: bar[0] the top count, then per group g its count at line
// 1 + g and its release flag at line 1 + n_groups + g.
__device__ __forceinline__ void group_barrier(unsigned* bar, unsigned p) {
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned g = blockIdx.x / kGroup, n_groups = (gridDim.x + kGroup - 1) / kGroup;
    const unsigned size = min(static_cast<unsigned>(kGroup), gridDim.x - g * kGroup);
    unsigned* count = bar + kLineWords * (1 + g);
    unsigned* flag = bar + kLineWords * (1 + n_groups + g);
    unsigned old;
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(count) : "memory");
    if (old + 1 == p * size) {  // the group's last: count it at the top, wait, release the group
      asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(bar) : "memory");
      while (ld_acquire(bar) < p * n_groups) {
      }
      asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flag), "r"(p) : "memory");
    } else {
      while (ld_acquire(flag) < p) {
      }
    }
  }
  __syncthreads();
}

// The whole run in one launch: stage s's work, then a barrier (phase s + 1).
// pf_blocks > 0: before the barrier, blocks below pf_blocks ask the L2 for
// their first chunk of the next stream.
__global__ void __launch_bounds__(kThreads) persistent_kernel(const Stage* stages, int n_stages,
                                                              const uint8_t* w, float* act,
                                                              unsigned* bar, uint32_t* sink,
                                                              bool hier, int pf_blocks,
                                                              int sleep_ns) {
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
    if (static_cast<int>(blockIdx.x) < pf_blocks && threadIdx.x == 0 && st.next_stream > s) {
      const Stage& u = stages[st.next_stream];
      if (static_cast<int64_t>(blockIdx.x) < u.bytes / kChunk)
        l2_prefetch_bytes(w + u.offset + blockIdx.x * kChunk, static_cast<uint32_t>(kChunk));
    }
    if (hier)
      group_barrier(bar, static_cast<unsigned>(s) + 1);
    else
      flat_barrier(bar, static_cast<unsigned>(s) + 1, sleep_ns);
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
  for (int i = static_cast<int>(v.size()) - 1, nxt = -1; i >= 0; --i) {
    v[static_cast<size_t>(i)].next_stream = nxt;
    if (v[static_cast<size_t>(i)].bytes > 0) nxt = i;
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
  // The barriers' words: the top count and two lines a group, for the most blocks.
  const size_t bar_bytes = sizeof(unsigned) * kLineWords * (1 + 2 * (4096 / kGroup + 1));
  CK(cudaMalloc(&bar, bar_bytes));
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
    // persistent: one cooperative launch, under each barrier form.
    CK(cudaMemcpy(dstages, st.data(), st.size() * sizeof(Stage), cudaMemcpyHostToDevice));
    struct Form {
      const char* name;
      bool hier;
      int per_sm;  // blocks an SM (0: all that fit)
      int pf_mb;   // the prefetch's MB a barrier (0: none)
      int sleep_ns;
    };
    const Form forms[] = {{"persistent (flat barrier)", false, 0, 0, 0},
                          {"persistent, flat, 64 ns between polls", false, 0, 0, 64},
                          {"persistent (hierarchical barrier)", true, 0, 0, 0},
                          {"persistent, hierarchical, 2 blocks an SM", true, 2, 0, 0},
                          {"persistent, hierarchical + 4 MB L2 prefetch", true, 0, 4, 0},
                          {"persistent, hierarchical + 16 MB L2 prefetch", true, 0, 16, 0}};
    for (const Form& f : forms) {
      int n_stages = static_cast<int>(st.size());
      const uint8_t* cw = w;
      bool hier = f.hier;
      int pf_blocks = static_cast<int>(int64_t{f.pf_mb} * 1'000'000 / kChunk);
      int sleep_ns = f.sleep_ns;
      const int blocks = f.per_sm > 0 ? std::min(f.per_sm, per_sm) * prop.multiProcessorCount : nb;
      void* args[] = {&dstages, &n_stages, &cw, &act, &bar, &sink, &hier, &pf_blocks, &sleep_ns};
      // Each timed call also zeroes the barriers' words (a memset).
      const Stats p = time_it(s, 2, 5, [&](int) {
        CK(cudaMemsetAsync(bar, 0, bar_bytes, s));
        CK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(persistent_kernel),
                                       dim3(static_cast<unsigned>(blocks)), dim3(kThreads), args,
                                       0, s));
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
