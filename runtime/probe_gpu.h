// The GPU's ceilings, measured: pinned and pageable host-to-device copy
// bandwidth and device memory bandwidth (a device-to-device copy, counting
// read + write). `probe` prints them; `bench` measures pinned H2D around each
// streamed run so that its PCIe ratio compares with the same machine, now.
// Implemented in probe_gpu.cu (CUDA builds only; tools guard with LS_HAVE_CUDA).
// defines: GpuBandwidth, probe_h2d(), probe_d2d(), probe_h2d_until()
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/status.h"

namespace ls {

struct GpuBandwidth {
  std::string what;
  std::vector<double> gbps;  // one per pass, 1e9 bytes/s
  double median = 0, min = 0, max = 0;
};

// `bytes` copied `passes` times (after one untimed warm-up), each pass timed
// with CUDA events. pinned: from cudaHostAlloc memory; else from malloc'd memory.
Expected<GpuBandwidth> probe_h2d(uint64_t bytes, int passes, bool pinned);
// A device-to-device copy of `bytes`; GB/s counts the bytes read plus written.
Expected<GpuBandwidth> probe_d2d(uint64_t bytes, int passes);

// Pinned H2D copies of `bytes`, one after another, from when `started` is
// set until `stop` is: the link's rate while something else (a host memory
// read, the CPU tier) shares the DRAM. Returns the GB/s over that window.
Expected<double> probe_h2d_until(uint64_t bytes, std::atomic<bool>& started,
                                 const std::atomic<bool>& stop);

}  // namespace ls
