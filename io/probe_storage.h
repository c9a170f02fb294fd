// How fast can this machine read this file? The ceiling every tier-C result
// is compared to: the file is streamed through a block source (the same one
// the reader would pick) at several queue depths, a few passes each, and the
// median, min and max GB/s are reported. O_DIRECT bypasses the page cache, so
// the numbers are the storage's; a buffered source says so in `note`, since
// the cache may serve it.
// defines: ProbeOptions, ProbeRow, StorageProbe, probe_storage
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/status.h"

namespace ls {

struct ProbeOptions {
  std::string kind = "auto";  // as SourceOptions::kind
  std::vector<uint32_t> queue_depths = {1, 4, 16, 32};
  uint64_t chunk_bytes = 1 << 20;  // one request = one chunk
  uint64_t max_bytes = 0;          // read [0, max_bytes) per pass; 0: the whole file
  // Instead, read exactly these (offset, bytes) ranges per pass, in order (the
  // byte ranges a run reads, so the bound is measured on the same bytes).
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  // With ranges: 0 cuts them into chunk-sized requests (qd in flight); N > 0
  // submits each range whole, N at a time, the way the reader submits layers
  // (the source then keeps qd chunks in flight), so the block layer sees the
  // same pattern as in a run.
  uint32_t ranges_in_flight = 0;
  int passes = 3;
};

struct ProbeRow {
  uint32_t queue_depth = 0;
  double gbps_median = 0, gbps_min = 0, gbps_max = 0;  // 1 GB = 1e9 bytes
  std::vector<double> gbps;                            // every pass
};

struct StorageProbe {
  std::string path;
  std::string source;       // "io_uring", "pread"
  std::string source_line;  // the block source's log line: which and why
  bool direct = false;
  bool fixed_buffers = false;  // staging buffers registered with the source
  std::string note;            // caveats: page cache, registration refused, ...
  uint64_t file_bytes = 0, bytes_per_pass = 0, chunk_bytes = 0;
  std::vector<ProbeRow> rows;    // one per queue depth, in the order asked
  const ProbeRow* best() const;  // the highest median
};

Expected<StorageProbe> probe_storage(const std::string& path, const ProbeOptions& o);

}  // namespace ls
