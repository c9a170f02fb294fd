// The host memory's read bandwidth, measured: the ceiling of the CPU compute
// tier (tier B'), which reads each weight once per token from RAM. `probe`
// prints it beside the storage and GPU rows; the CPU matmul bench measures it
// in the same run and prints its GB/s as a ratio to it.
//
// A buffer well past the last-level cache (2 GiB by default) is first
// touched by the threads that will read it (so on a NUMA machine its pages
// sit where they are read), then read `passes` times by a pool of n threads
// in contiguous chunks; GB/s = bytes / wall time of a pass (1 GB = 1e9 B).
// defines: HostReadBuffer, HostBandwidth, probe_host_read()
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/status.h"
#include "runtime/thread_pool.h"

namespace ls {

// A page-aligned buffer to read, allocated and filled once (reusable across
// thread counts). Transparent huge pages are asked for where Linux has them,
// so the read measures DRAM rather than page walks.
class HostReadBuffer {
 public:
  static Expected<HostReadBuffer> make(ThreadPool& pool, uint64_t bytes);
  HostReadBuffer(HostReadBuffer&& o) noexcept : p_(o.p_), bytes_(o.bytes_) { o.p_ = nullptr; }
  HostReadBuffer& operator=(HostReadBuffer&&) = delete;
  HostReadBuffer(const HostReadBuffer&) = delete;
  ~HostReadBuffer();
  const uint8_t* data() const { return p_; }
  uint64_t bytes() const { return bytes_; }

 private:
  HostReadBuffer(uint8_t* p, uint64_t bytes) : p_(p), bytes_(bytes) {}
  uint8_t* p_;
  uint64_t bytes_;
};

struct HostBandwidth {
  int threads = 0;
  uint64_t bytes = 0;        // per pass
  std::vector<double> gbps;  // one per pass
  double median = 0, min = 0, max = 0;
};

// One untimed pass, then `passes` timed ones, with all of pool's threads.
HostBandwidth probe_host_read(ThreadPool& pool, const HostReadBuffer& buf, int passes);

}  // namespace ls
