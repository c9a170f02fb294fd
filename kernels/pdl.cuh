// Programmatic dependent launch (Hopper, sm_90): a kernel of a decode step
// is launched while the one before it still runs, and does what does not
// depend on it (a GEMV's first weight loads, block setup) before it waits.
//
// Why: a decode layer is ~10 kernels of a few to ~20 us each; between two
// kernels of one stream the GPU drains the first (its last wave, the memory
// flush) and then ramps up the second (launch, the first loads' latency),
// about 2-4 us a boundary that no kernel's own speed removes. With the
// launch attribute below the second kernel's blocks start as soon as every
// block of the first has called pdl_trigger(); its pdl_wait() returns once
// the first has completed and its writes are visible.
//
// The rules, for every kernel launched by launch_pdl:
//   - pdl_wait() before its first read of anything an earlier kernel of the
//     stream wrote, and before its first write of anything an earlier kernel
//     reads (weights, which no kernel of a step writes, may be read before);
//   - pdl_trigger() where its dependents may start (at the top: they only
//     prefetch weights and then wait).
// The attribute is only set inside a PdlScope, which the CUDA backend opens
// while it captures a decode layer into a CUDA graph: there every kernel's
// predecessor is a kernel of the same graph, and the graph's edges say the
// rest (a streamed layer's weights arrive by a copy the stream waits for
// with an event, before the graph launch). Outside a scope, on a GPU below
// sm_90, or with LS_PDL=0 in the environment (A/B runs), a kernel waits for
// the whole previous kernel as usual and the two calls do nothing.
// defines: pdl_wait(), pdl_trigger(), pdl_enabled(), PdlScope, launch_pdl(), launch_pdl_cluster()
#pragma once

#include <cuda_runtime.h>

#include <utility>

namespace ls {

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Whether launches take the attribute: inside a PdlScope of this thread,
// the current device is sm_90 or newer, and LS_PDL is not "0" (read once).
bool pdl_enabled();

// Launches of this thread take the attribute while one lives (not nested).
class PdlScope {
 public:
  PdlScope();
  ~PdlScope();
  PdlScope(const PdlScope&) = delete;
  PdlScope& operator=(const PdlScope&) = delete;
};

// kernel<<<grid, block, smem, stream>>>(args...), with the programmatic
// stream serialization attribute when pdl_enabled(), and the blocks in
// thread-block clusters of cluster_x along x when cluster_x > 1 (sm_90;
// grid.x a multiple of it). Returns the launch error.
template <typename... Params, typename... Args>
cudaError_t launch_pdl_cluster(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
                               cudaStream_t stream, unsigned cluster_x, Args&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[2];
  unsigned n = 0;
  if (cluster_x > 1) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = cluster_x;
    attr[n].val.clusterDim.y = 1;
    attr[n].val.clusterDim.z = 1;
    ++n;
  }
  if (pdl_enabled()) {
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  cfg.attrs = attr;
  cfg.numAttrs = n;
  return cudaLaunchKernelEx(&cfg, kernel, static_cast<Params>(args)...);
}

template <typename... Params, typename... Args>
cudaError_t launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
                       cudaStream_t stream, Args&&... args) {
  return launch_pdl_cluster(kernel, grid, block, smem, stream, 1u, std::forward<Args>(args)...);
}

}  // namespace ls
