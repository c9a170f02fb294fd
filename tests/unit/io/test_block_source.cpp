// Block sources against a file of known content: each 8-byte little-endian
// word holds its own offset, so any byte of any extent can be checked without
// a copy of the file. Every source the machine allows (io_uring, pread with
// O_DIRECT, buffered pread) reads unaligned extents of many sizes, at queue
// depth 1 and 8; then the faults: EIO, short reads, delays, a file truncated
// while reading, and wait()'s timeout.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "io/block_source.h"
#include "io/faulty_source.h"
#include "io/probe_storage.h"
#include "tests/unit/ls_binary.h"

using namespace ls;
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kFileBytes = 5 * 1024 * 1024 + 1234;  // not a multiple of 4096 nor of 8
constexpr uint64_t kChunk = 64 * 1024;                   // small, so requests span many chunks

uint8_t pattern_byte(uint64_t pos) {
  const uint64_t word = pos & ~uint64_t{7};
  return static_cast<uint8_t>(word >> (8 * (pos & 7)));
}

bool contains(const std::string& s, const std::string& sub) {
  return s.find(sub) != std::string::npos;
}

void write_pattern(const fs::path& p, uint64_t bytes) {
  std::vector<uint8_t> b(bytes);
  for (uint64_t i = 0; i < bytes; ++i) b[i] = pattern_byte(i);
  FILE* f = std::fopen(p.c_str(), "wb");
  REQUIRE(f);
  REQUIRE(std::fwrite(b.data(), 1, b.size(), f) == b.size());
  std::fclose(f);
}

bool direct_works(const fs::path& dir) {
  const fs::path p = dir / "odirect_probe.bin";
  write_pattern(p, 8192);
  const int fd = ::open(p.c_str(), O_RDONLY | O_DIRECT);
  bool ok = false;
  if (fd >= 0) {
    void* buf = std::aligned_alloc(4096, 4096);
    ok = ::pread(fd, buf, 4096, 0) == 4096;
    std::free(buf);
    ::close(fd);
  }
  fs::remove(p);
  return ok;
}

// A directory for the test files: the first candidate where O_DIRECT works
// (tmpfs may refuse it), else the system temp dir.
struct TestDir {
  fs::path dir;
  bool direct = false;
  TestDir() {
    const std::string leaf = "ls_block_source_" + std::to_string(::getpid());
    std::vector<fs::path> candidates = {fs::temp_directory_path() / leaf,
                                        fs::path(LS_BINARY).parent_path() / leaf};
    for (const fs::path& c : candidates) {
      fs::create_directories(c);
      const bool d = direct_works(c);
      const std::string said = "test dir " + c.string() + ": O_DIRECT " + (d ? "works" : "refused");
      MESSAGE(said);
      if (d || dir.empty()) {
        if (!dir.empty()) fs::remove_all(dir);
        dir = c;
        direct = d;
        if (d) break;
      } else {
        fs::remove_all(c);
      }
    }
  }
  ~TestDir() { fs::remove_all(dir); }
};

TestDir& test_dir() {
  static TestDir d;
  return d;
}

fs::path pattern_file() {
  const fs::path p = test_dir().dir / "pattern.bin";
  if (!fs::exists(p) || fs::file_size(p) != kFileBytes) write_pattern(p, kFileBytes);
  return p;
}

std::unique_ptr<BlockSource> open_kind(const fs::path& p, const std::string& kind, uint32_t qd,
                                       uint64_t chunk = kChunk) {
  SourceOptions o;
  o.kind = kind;
  o.queue_depth = qd;
  o.chunk_bytes = chunk;
  o.log = false;
  std::string why;
  auto s = open_block_source(p.string(), o, &why);
  static std::map<std::string, bool> said;  // say once per kind which source it gave, or why not
  const bool first = !said[kind];
  said[kind] = true;
  if (!s) {
    if (first) MESSAGE("source '" << kind << "' unavailable here: " << s.error().message);
    return nullptr;
  }
  if (first) MESSAGE(why);
  return std::move(*s);
}

// The sources this machine allows: io_uring and pread (each O_DIRECT where the
// file system allows it) and buffered pread, which must always work.
std::vector<std::unique_ptr<BlockSource>> all_sources(const fs::path& p, uint32_t qd,
                                                      uint64_t chunk = kChunk) {
  std::vector<std::unique_ptr<BlockSource>> v;
  for (const char* k : {"uring", "pread", "buffered"})
    if (auto s = open_kind(p, k, qd, chunk)) v.push_back(std::move(s));
  REQUIRE(!v.empty());
  CHECK(std::string(v.back()->name()) == "pread");  // buffered pread is always there
  return v;
}

struct AlignedFree {
  void operator()(uint8_t* p) const { std::free(p); }
};
using Arena = std::unique_ptr<uint8_t, AlignedFree>;

Arena make_arena(uint64_t bytes) {
  bytes = (bytes + 4095) / 4096 * 4096;
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(4096, bytes));
  REQUIRE(p);
  std::memset(p, 0xCD, bytes);  // poison: a byte not read shows up
  return Arena(p);
}

struct Extent {
  uint64_t offset, bytes;
};

// Read the extents (each into its own slice of one registered arena) and
// check every wanted byte. Returns the number of completions checked.
size_t read_and_check(BlockSource& src, const std::vector<Extent>& ex, size_t batch) {
  const uint32_t a = src.alignment();
  std::vector<uint64_t> at(ex.size());
  uint64_t total = 0;
  for (size_t i = 0; i < ex.size(); ++i) {
    at[i] = total;
    total += (plan_read(ex[i].offset, ex[i].bytes, a).aligned_bytes + 4095) / 4096 * 4096;
  }
  Arena arena = make_arena(total + 4096);
  const std::span<uint8_t> whole(arena.get(), total + 4096);
  REQUIRE(src.register_buffers(std::span<const std::span<uint8_t>>(&whole, 1)).ok());
  size_t checked = 0;
  for (size_t first = 0; first < ex.size(); first += batch) {
    std::vector<ReadRequest> reqs;
    for (size_t i = first; i < std::min(ex.size(), first + batch); ++i)
      reqs.push_back({ex[i].offset, ex[i].bytes, arena.get() + at[i], 1000 + i});
    Status st = src.submit(reqs);
    REQUIRE_MESSAGE(st.ok(), st.error().message);
    std::vector<ReadCompletion> done;
    REQUIRE(src.wait(reqs.size(), 10000, done).ok());
    REQUIRE(done.size() == reqs.size());
    CHECK(src.in_flight() == 0);
    for (const ReadCompletion& c : done) {
      REQUIRE_MESSAGE(c.status.ok(), c.status.error().message);
      const size_t i = c.tag - 1000;
      REQUIRE(i < ex.size());
      CHECK(c.bytes == ex[i].bytes);
      CHECK(c.lead == plan_read(ex[i].offset, ex[i].bytes, a).lead);
      const uint8_t* got = arena.get() + at[i] + c.lead;
      uint64_t bad = 0;
      for (uint64_t k = 0; k < ex[i].bytes; ++k) bad += got[k] != pattern_byte(ex[i].offset + k);
      CHECK_MESSAGE(bad == 0, src.name() << ": extent " << ex[i].offset << "+" << ex[i].bytes
                                         << " has " << bad << " wrong bytes");
      ++checked;
    }
  }
  return checked;
}

std::vector<Extent> varied_extents(uint64_t seed) {
  std::vector<Extent> ex = {
      {0, 1},
      {0, kFileBytes},                   // the whole file, unaligned end
      {kFileBytes - 1, 1},               // the last byte
      {kFileBytes - 5000, 5000},         // the last bytes, crossing the last 4 KiB boundary
      {kChunk - 3, 10},                  // across a chunk boundary
      {3 * kChunk - 1, 2 * kChunk + 2},  // starts and ends one byte past chunk boundaries
      {4096, 4096},                      // aligned
      {4095, 4098},
      {123457, 0},  // empty
  };
  std::mt19937_64 rng(seed);
  const uint64_t sizes[] = {1, 7, 8, 511, 4095, 4096, 4097, 65535, 65537, 300001, 1 << 20};
  for (int i = 0; i < 60; ++i) {
    const uint64_t n = sizes[rng() % std::size(sizes)];
    const uint64_t off = rng() % (kFileBytes - n + 1);
    ex.push_back({off, n});
  }
  return ex;
}

}  // namespace

TEST_CASE("block source: plan_read covers the wanted bytes with an aligned superset") {
  ReadPlan p = plan_read(5000, 100, 4096);
  CHECK(p.aligned_offset == 4096);
  CHECK(p.aligned_bytes == 4096);
  CHECK(p.lead == 904);
  p = plan_read(4090, 10, 4096);  // straddles a boundary
  CHECK(p.aligned_offset == 0);
  CHECK(p.aligned_bytes == 8192);
  CHECK(p.lead == 4090);
  p = plan_read(8192, 4096, 4096);  // already aligned: no over-read
  CHECK(p.aligned_offset == 8192);
  CHECK(p.aligned_bytes == 4096);
  CHECK(p.lead == 0);
  p = plan_read(12345, 678, 1);  // buffered: the identity
  CHECK(p.aligned_offset == 12345);
  CHECK(p.aligned_bytes == 678);
  CHECK(p.lead == 0);
  CHECK(plan_read(777, 0, 4096).aligned_bytes == 0);
}

TEST_CASE("block source: every available source reads unaligned extents correctly at qd 1 and 8") {
  const fs::path p = pattern_file();
  for (uint32_t qd : {1u, 8u}) {
    for (auto& src : all_sources(p, qd)) {
      CAPTURE(src->name());
      CAPTURE(qd);
      CHECK(src->size() == kFileBytes);
      CHECK(src->direct() == (src->alignment() == 4096));
      // One request at a time, then many at once (more chunks than qd).
      const auto ex = varied_extents(qd);
      CHECK(read_and_check(*src, ex, 1) == ex.size());
      CHECK(read_and_check(*src, ex, ex.size()) == ex.size());
    }
  }
}

TEST_CASE("block source: auto picks a source and says why") {
  SourceOptions o;
  o.log = false;
  std::string why;
  auto s = open_block_source(pattern_file().string(), o, &why);
  REQUIRE_MESSAGE(s, s.error().message);
  MESSAGE(why);
  CHECK(contains(why, (*s)->name()));
  CHECK(contains(why, pattern_file().string()));
  if (test_dir().direct) CHECK((*s)->direct());

  o.kind = "nvme-magic";
  auto bad = open_block_source(pattern_file().string(), o);
  REQUIRE(!bad);
  CHECK(contains(bad.error().message, "nvme-magic"));

  o.kind = "auto";
  auto missing = open_block_source((test_dir().dir / "no_such.gguf").string(), o);
  REQUIRE(!missing);
  CHECK(contains(missing.error().message, "no_such.gguf"));
  CHECK(contains(missing.error().message, "No such file"));
}

TEST_CASE("block source: reading past the end is an error naming the offset") {
  for (auto& src : all_sources(pattern_file(), 4)) {
    CAPTURE(src->name());
    Arena a = make_arena(1 << 16);
    const uint64_t off = kFileBytes - 10;
    const ReadRequest ok_req{0, 100, a.get(), 1};
    const ReadRequest bad[] = {ok_req, {off, 11, a.get() + 8192, 2}};
    Status st = src->submit(bad);
    REQUIRE(!st.ok());
    CHECK(contains(st.error().message, std::to_string(off)));
    CHECK(contains(st.error().message, "past the end"));
    CHECK(src->in_flight() == 0);  // all or none: the good one was not taken either
    // A huge offset must not overflow into "fits".
    const ReadRequest wrap{~uint64_t{0} - 5, 100, a.get(), 3};
    CHECK(!src->submit(std::span<const ReadRequest>(&wrap, 1)).ok());
    if (src->alignment() > 1) {
      const ReadRequest misaligned{0, 100, a.get() + 1, 4};
      Status m = src->submit(std::span<const ReadRequest>(&misaligned, 1));
      REQUIRE(!m.ok());
      CHECK(contains(m.error().message, "aligned"));
    }
  }
}

TEST_CASE("block source: an injected EIO on request N arrives as an error with its errno text") {
  for (auto& src : all_sources(pattern_file(), 8)) {
    CAPTURE(src->name());
    FaultOptions fo;
    fo.fail_request = 3;
    FaultySource f(std::move(src), pattern_file().string(), fo);
    Arena a = make_arena(10 * 2 * kChunk);
    std::vector<ReadRequest> reqs;
    for (uint64_t i = 0; i < 10; ++i)
      reqs.push_back({i * 100000 + 17, kChunk + 5, a.get() + i * 2 * kChunk, 50 + i});
    REQUIRE(f.submit(reqs).ok());
    std::vector<ReadCompletion> done;
    REQUIRE(f.wait(10, 10000, done).ok());
    REQUIRE(done.size() == 10);
    for (const ReadCompletion& c : done) {
      if (c.tag == 53) {
        REQUIRE(!c.status.ok());
        CHECK(contains(c.status.error().message, "Input/output error"));
        CHECK(contains(c.status.error().message, "EIO"));
        CHECK(contains(c.status.error().message, std::to_string(3 * 100000 + 17)));
        CHECK(c.bytes == 0);
      } else {
        CHECK_MESSAGE(c.status.ok(), c.status.error().message);
        const uint64_t i = c.tag - 50;
        CHECK(a.get()[i * 2 * kChunk + c.lead] == pattern_byte(reqs[i].offset));
      }
    }
  }
}

TEST_CASE("block source: an injected short read is an error") {
  for (auto& src : all_sources(pattern_file(), 4)) {
    CAPTURE(src->name());
    FaultOptions fo;
    fo.short_request = 1;
    FaultySource f(std::move(src), pattern_file().string(), fo);
    Arena a = make_arena(3 * 8192);
    const ReadRequest reqs[] = {{10, 100, a.get(), 7}, {20000, 300, a.get() + 8192, 8}};
    REQUIRE(f.submit(reqs).ok());
    std::vector<ReadCompletion> done;
    REQUIRE(f.wait(2, 10000, done).ok());
    REQUIRE(done.size() == 2);
    std::map<uint64_t, const ReadCompletion*> by_tag;
    for (auto& c : done) by_tag[c.tag] = &c;
    CHECK(by_tag[7]->status.ok());
    REQUIRE(!by_tag[8]->status.ok());
    CHECK(contains(by_tag[8]->status.error().message, "short read"));
    CHECK(contains(by_tag[8]->status.error().message, "20000"));
  }
}

TEST_CASE("block source: random completion delays keep every result correct") {
  for (auto& src : all_sources(pattern_file(), 8)) {
    CAPTURE(src->name());
    FaultOptions fo;
    fo.seed = 42;
    fo.max_delay_us = 3000;
    FaultySource f(std::move(src), pattern_file().string(), fo);
    const auto ex = varied_extents(7);
    CHECK(read_and_check(f, ex, 16) == ex.size());
  }
}

TEST_CASE("block source: a file truncated while reading gives an error, not a hang") {
  const fs::path p = test_dir().dir / "truncated.bin";
  for (const char* kind : {"uring", "pread", "buffered"}) {
    write_pattern(p, 4 << 20);
    auto src = open_kind(p, kind, 8);
    if (!src) continue;
    CAPTURE(src->name());
    CAPTURE(kind);
    Arena a = make_arena(3 << 20);
    // First read: fine.
    const ReadRequest first{100, 1 << 20, a.get(), 1};
    REQUIRE(src->submit(std::span<const ReadRequest>(&first, 1)).ok());
    std::vector<ReadCompletion> done;
    REQUIRE(src->wait(1, 10000, done).ok());
    REQUIRE(done.size() == 1);
    CHECK(done[0].status.ok());
    // The file shrinks under the reader.
    const uint64_t new_size = (1 << 20) + 100;
    REQUIRE(::truncate(p.c_str(), new_size) == 0);
    const ReadRequest after[] = {
        {(1 << 20) - 4096 + 1, 8192, a.get() + (1 << 20) + 8192, 2},  // crosses the new end
        {2 << 20, 1 << 20, a.get() + (2 << 20), 3},                   // wholly past it
    };
    const auto t0 = std::chrono::steady_clock::now();
    REQUIRE(src->submit(after).ok());  // the size at open still allows them
    done.clear();
    REQUIRE(src->wait(2, 5000, done).ok());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(s < 1.0);
    REQUIRE(done.size() == 2);
    for (const ReadCompletion& c : done) {
      CAPTURE(c.tag);
      REQUIRE(!c.status.ok());
      CHECK(contains(c.status.error().message, "short read"));
      CHECK(contains(c.status.error().message, std::to_string(after[c.tag - 2].offset)));
      CHECK(contains(c.status.error().message, p.string()));
    }
    CHECK(src->in_flight() == 0);
  }
  fs::remove(p);
}

TEST_CASE("block source: wait returns at its timeout, and does not hang waiting for nothing") {
  auto srcs = all_sources(pattern_file(), 2);
  for (auto& src : srcs) {
    CAPTURE(src->name());
    std::vector<ReadCompletion> done;
    // Nothing in flight: wait(5, no limit) must return at once.
    REQUIRE(src->wait(5, -1, done).ok());
    CHECK(done.empty());

    FaultOptions fo;
    fo.min_delay_us = fo.max_delay_us = 400000;  // every completion held 0.4 s
    FaultySource f(std::move(src), pattern_file().string(), fo);
    Arena a = make_arena(8192);
    const ReadRequest r{0, 4096, a.get(), 9};
    REQUIRE(f.submit(std::span<const ReadRequest>(&r, 1)).ok());
    auto t0 = std::chrono::steady_clock::now();
    REQUIRE(f.wait(1, 50, done).ok());
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(done.empty());
    CHECK(s >= 0.045);
    CHECK(s < 0.3);
    CHECK(f.in_flight() == 1);
    REQUIRE(f.wait(1, -1, done).ok());  // no limit: it comes
    REQUIRE(done.size() == 1);
    CHECK(done[0].status.ok());
    CHECK(f.in_flight() == 0);
  }
}

TEST_CASE("block source: probe_storage reports every queue depth over the whole file") {
  ProbeOptions o;
  o.queue_depths = {1, 4};
  o.chunk_bytes = 256 * 1024;
  o.passes = 3;
  auto r = probe_storage(pattern_file().string(), o);
  REQUIRE_MESSAGE(r, r.error().message);
  MESSAGE(r->source_line);
  CHECK(r->file_bytes == kFileBytes);
  CHECK(r->bytes_per_pass == kFileBytes);
  CHECK(r->chunk_bytes == 256 * 1024);
  CHECK(r->direct == test_dir().direct);
  CHECK(r->note.empty() == r->direct);  // buffered reads carry the page-cache caveat
  REQUIRE(r->rows.size() == 2);
  for (const ProbeRow& row : r->rows) {
    CHECK(row.gbps.size() == 3);
    CHECK(row.gbps_min > 0);
    CHECK(row.gbps_min <= row.gbps_median);
    CHECK(row.gbps_median <= row.gbps_max);
  }
  CHECK(r->rows[0].queue_depth == 1);
  CHECK(r->best() != nullptr);

  o.max_bytes = 1 << 20;
  o.queue_depths = {2};
  auto part = probe_storage(pattern_file().string(), o);
  REQUIRE(part);
  CHECK(part->bytes_per_pass == (1 << 20));
  o.queue_depths = {};
  CHECK(!probe_storage(pattern_file().string(), o));
}
