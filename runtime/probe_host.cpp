// probe_host_read (runtime/probe_host.h). The read loop sums 64-byte lines as
// eight 64-bit words into independent accumulators: plain C++ that any
// compiler vectorises, with more than enough loads per cycle to saturate a
// core's share of DRAM bandwidth, and a sum that keeps the loads alive. It
// also prefetches 4 KiB ahead in software: the hardware prefetchers stop at
// each 4 KiB page, and the CPU tier's kernels prefetch their next weight
// row, so a probe without it read ~30 % less than they did on the H200 box
// (82 GB/s against 107) and was no ceiling.
// defines: HostReadBuffer, probe_host_read (runtime/probe_host.h)
#include "runtime/probe_host.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace ls {
namespace {

// Chunks per thread: contiguous runs long enough for the prefetchers (2 GiB
// over 16 threads × 4 = 32 MiB each), and slack for a thread that starts late.
constexpr int kChunksPerThread = 4;
constexpr uint64_t kAlign = 2ull << 20;  // a huge page

std::atomic<uint64_t> g_sink{0};  // where the sums go, so no read is optimised away

uint64_t read_range(const uint8_t* p, uint64_t n) {
  const uint64_t* w = reinterpret_cast<const uint64_t*>(p);
  uint64_t a[8] = {};
  constexpr uint64_t kAhead = 4096 / 8;  // in words
  for (uint64_t i = 0; i + 8 <= n / 8; i += 8) {
    if (i + kAhead < n / 8) __builtin_prefetch(w + i + kAhead, 0, 2);
    for (int k = 0; k < 8; ++k) a[k] += w[i + k];
  }
  return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

struct Split {
  const uint8_t* p;
  uint64_t bytes, chunk;
  int64_t n;
};
Split split(const uint8_t* p, uint64_t bytes, int threads) {
  const int64_t n = static_cast<int64_t>(threads) * kChunksPerThread;
  const uint64_t chunk = (bytes / n + 4095) / 4096 * 4096;
  return {p, bytes, chunk, static_cast<int64_t>((bytes + chunk - 1) / chunk)};
}

}  // namespace

Expected<HostReadBuffer> HostReadBuffer::make(ThreadPool& pool, uint64_t bytes) {
  bytes = (bytes + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, bytes);
  if (!p) return make_error("probe: cannot allocate %.2f GB of host memory", bytes / 1e9);
#ifdef MADV_HUGEPAGE
  madvise(p, bytes, MADV_HUGEPAGE);  // a hint: fine if THP is off
#endif
  // First touch by the pool that will read it, in the same chunks.
  const Split s = split(static_cast<uint8_t*>(p), bytes, pool.size());
  uint8_t* base = static_cast<uint8_t*>(p);
  const Split* sp = &s;
  pool.run(s.n, [sp, base](int64_t task, int) {
    const uint64_t off = task * sp->chunk, n = std::min(sp->chunk, sp->bytes - off);
    std::memset(base + off, static_cast<int>(task & 0xff), n);
  });
  return HostReadBuffer(base, bytes);
}

HostReadBuffer::~HostReadBuffer() {
  std::free(p_);
}

HostBandwidth probe_host_read(ThreadPool& pool, const HostReadBuffer& buf, int passes) {
  HostBandwidth r;
  r.threads = pool.size();
  r.bytes = buf.bytes();
  const Split s = split(buf.data(), buf.bytes(), pool.size());
  const Split* sp = &s;
  auto pass = [&] {
    pool.run(sp->n, [sp](int64_t task, int) {
      const uint64_t off = task * sp->chunk, n = std::min(sp->chunk, sp->bytes - off);
      g_sink.fetch_add(read_range(sp->p + off, n), std::memory_order_relaxed);
    });
  };
  pass();  // warm-up: wakes the workers, faults in nothing (already touched)
  for (int i = 0; i < std::max(1, passes); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    pass();
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.gbps.push_back(buf.bytes() / sec / 1e9);
  }
  std::vector<double> v = r.gbps;
  std::sort(v.begin(), v.end());
  r.min = v.front();
  r.max = v.back();
  r.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  return r;
}

}  // namespace ls
