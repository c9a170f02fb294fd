// Stream a file through a block source at each queue depth: qd staging
// buffers of one chunk each, every buffer refilled as soon as its read lands,
// so exactly qd reads are in flight until the tail.
// defines: probe_storage
#include "io/probe_storage.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>

#include "io/block_source.h"

namespace ls {

const ProbeRow* StorageProbe::best() const {
  const ProbeRow* b = nullptr;
  for (const ProbeRow& r : rows)
    if (!b || r.gbps_median > b->gbps_median) b = &r;
  return b;
}

namespace {

constexpr uint64_t kMaxAlign = 4096;  // room for an aligned over-read at each end

// Page-aligned, pre-faulted staging memory (page faults must not be timed).
struct Staging {
  uint8_t* p = nullptr;
  size_t bytes = 0;
  explicit Staging(size_t n) : bytes(n) {
    void* m = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) {
      p = static_cast<uint8_t*>(m);
      std::memset(p, 0, n);
    }
  }
  ~Staging() {
    if (p) ::munmap(p, bytes);
  }
};

// The pieces one pass reads: each range cut at multiples of the chunk size
// in the file, so that every piece's aligned over-read is one chunk (cutting
// at range-relative offsets would make each over-read a chunk and a page,
// i.e. two device reads, and measure a slower disk than the pipeline sees).
std::vector<std::pair<uint64_t, uint64_t>> pieces_of(
    const std::vector<std::pair<uint64_t, uint64_t>>& ranges, uint64_t chunk) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (auto [off, n] : ranges) {
    for (uint64_t at = off, end = off + n; at < end;) {
      const uint64_t next = std::min(end, (at / chunk + 1) * chunk);
      out.push_back({at, next - at});
      at = next;
    }
  }
  return out;
}

// One pass over the pieces (each one request), n_bufs buffers of `stride`
// bytes (a piece plus room for its aligned over-read) in rotation, so exactly
// n_bufs reads are in flight until the tail.
Expected<double> one_pass(BlockSource& src,
                                 const std::vector<std::pair<uint64_t, uint64_t>>& pieces,
                                 uint64_t stride, uint32_t n_bufs, uint8_t* staging) {
  std::vector<uint32_t> free_bufs;
  for (uint32_t i = n_bufs; i-- > 0;) free_bufs.push_back(i);
  std::vector<ReadRequest> batch;
  std::vector<ReadCompletion> done;
  size_t next = 0, landed = 0;
  uint64_t bytes = 0;
  for (auto& p : pieces) bytes += p.second;
  const auto t0 = std::chrono::steady_clock::now();
  while (landed < pieces.size()) {
    batch.clear();
    while (!free_bufs.empty() && next < pieces.size()) {
      const uint32_t b = free_bufs.back();
      free_bufs.pop_back();
      batch.push_back({pieces[next].first, pieces[next].second, staging + uint64_t{b} * stride, b});
      ++next;
    }
    if (!batch.empty()) LS_TRY(src.submit(batch));
    done.clear();
    LS_TRY(src.wait(1, 30000, done));
    if (done.empty()) return make_error("probe: no read completed in 30 s (storage stalled?)");
    for (const ReadCompletion& c : done) {
      if (!c.status.ok()) return c.status.error();
      ++landed;
      free_bufs.push_back(static_cast<uint32_t>(c.tag));
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return static_cast<double>(bytes) / s / 1e9;
}

}  // namespace

Expected<StorageProbe> probe_storage(const std::string& path, const ProbeOptions& o) {
  if (o.queue_depths.empty()) return make_error("probe: no queue depth given");
  if (o.passes < 1) return make_error("probe: passes must be at least 1");
  StorageProbe r;
  r.path = path;
  const uint32_t max_qd = *std::max_element(o.queue_depths.begin(), o.queue_depths.end());
  std::unique_ptr<Staging> st;  // max_qd chunks, shared by every queue depth
  for (uint32_t qd : o.queue_depths) {
    if (qd == 0) return make_error("probe: queue depth 0");
    SourceOptions so;
    so.kind = o.kind;
    so.queue_depth = qd;
    so.chunk_bytes = o.chunk_bytes;
    so.log = false;
    std::string why;
    auto src = open_block_source(path, so, &why);
    if (!src) return src.error();
    BlockSource& s = **src;
    if (r.rows.empty()) {  // the first source sets the scene
      r.source = s.name();
      r.source_line = why;
      r.direct = s.direct();
      r.file_bytes = s.size();
      r.chunk_bytes = s.chunk_bytes();
      r.bytes_per_pass = o.max_bytes ? std::min(o.max_bytes, s.size()) : s.size();
      if (!o.ranges.empty()) {
        r.bytes_per_pass = 0;
        for (auto& rg : o.ranges) r.bytes_per_pass += rg.second;
      }
      if (r.bytes_per_pass == 0) return make_error("probe: %s is empty", path.c_str());
      if (!r.direct)
        r.note = "buffered reads: the page cache may serve them, so this can exceed the storage";
    }
    const uint64_t chunk = s.chunk_bytes();  // the same for every source opened here
    uint64_t whole_stride = 0;  // ranges submitted whole: the largest range's over-read
    for (auto& rg : o.ranges) whole_stride = std::max(whole_stride, rg.second + 2 * kMaxAlign);
    const bool whole = !o.ranges.empty() && o.ranges_in_flight > 0;
    if (!st && whole) {
      st = std::make_unique<Staging>(uint64_t{o.ranges_in_flight} * whole_stride);
      if (!st->p) return make_error("probe: cannot map staging memory for whole ranges");
    }
    if (!st) {
      st = std::make_unique<Staging>(uint64_t{max_qd} * (chunk + 2 * kMaxAlign));
      if (!st->p)
        return make_error("probe: cannot map %s of staging memory",
                          format_bytes(uint64_t{max_qd} * chunk).c_str());
    }
    const std::span<uint8_t> all(st->p, st->bytes);
    Status reg = s.register_buffers(std::span<const std::span<uint8_t>>(&all, 1));
    if (r.rows.empty()) {
      r.fixed_buffers = reg.ok();
      if (!reg.ok())
        r.note += (r.note.empty() ? "" : "; ") + ("buffers not registered: " + reg.error().message);
    }
    // What one pass reads: the file from the start, or the given ranges, cut
    // into chunk-sized requests (or the ranges whole).
    const std::vector<std::pair<uint64_t, uint64_t>> pieces = pieces_of(
        o.ranges.empty() ? std::vector<std::pair<uint64_t, uint64_t>>{{0, r.bytes_per_pass}}
                         : o.ranges,
        chunk);
    ProbeRow row;
    row.queue_depth = qd;
    for (int p = 0; p < o.passes; ++p) {
      auto g = whole ? one_pass(s, o.ranges, whole_stride, o.ranges_in_flight, st->p)
                     : one_pass(s, pieces, chunk + 2 * kMaxAlign, qd, st->p);
      if (!g) return g.error();
      row.gbps.push_back(*g);
    }
    std::vector<double> v = row.gbps;
    std::sort(v.begin(), v.end());
    row.gbps_min = v.front();
    row.gbps_max = v.back();
    row.gbps_median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    r.rows.push_back(std::move(row));
  }
  return r;
}

}  // namespace ls
