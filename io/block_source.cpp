// plan_read, the shared error texts, and open_block_source: which source,
// and why, in one log line.
// defines: plan_read, open_block_source, read_error, short_read_error, errno_name, format_bytes
#include "io/block_source.h"

#include "io/vfio_source.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "io/chunk_book.h"
#include "io/pread_source.h"
#include "io/uring_source.h"

namespace ls {

ReadPlan plan_read(uint64_t offset, uint64_t bytes, uint32_t alignment) {
  const uint64_t a = alignment ? alignment : 1;
  if (bytes == 0) return {offset, 0, 0};
  const uint64_t lo = offset / a * a;
  const uint64_t hi = (offset + bytes + a - 1) / a * a;
  return {lo, hi - lo, offset - lo};
}

const char* errno_name(int err) {
  const char* n = strerrorname_np(err);  // glibc 2.32+; null when unknown
  if (n) return n;
  thread_local char buf[32];
  std::snprintf(buf, sizeof buf, "errno %d", err);
  return buf;
}

std::string format_bytes(uint64_t n) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && n >= 1024 && n % 1024 == 0) n /= 1024, ++u;
  return std::to_string(n) + " " + units[u];
}

Error read_error(const std::string& path, const char* via, uint64_t offset, uint64_t bytes,
                 int err) {
  return make_error("read of %s at offset %llu (%llu bytes) via %s: %s (%s)", path.c_str(),
                    (unsigned long long)offset, (unsigned long long)bytes, via, std::strerror(err),
                    errno_name(err));
}

Error short_read_error(const std::string& path, const char* via, uint64_t offset, uint64_t bytes,
                       uint64_t eof_at) {
  return make_error(
      "read of %s at offset %llu (%llu bytes) via %s: short read, the file ends at "
      "byte %llu (truncated while running?)",
      path.c_str(), (unsigned long long)offset, (unsigned long long)bytes, via,
      (unsigned long long)eof_at);
}

namespace {

// Does this file system take O_DIRECT for this file? Opening is not enough
// (some file systems accept the flag and fail the read), so read one block.
// An error is returned only for what no source could get past (ENOENT, EACCES).
struct DirectCheck {
  bool works = false;
  std::string why;  // why not, with the errno
};

Expected<DirectCheck> check_direct(const std::string& path) {
  auto f = open_for_read(path, /*direct=*/true);
  if (!f) {
    // Open without O_DIRECT: if that fails too, the file is the problem.
    auto plain = open_for_read(path, false);
    if (!plain) return plain.error();
    ::close(plain->fd);
    return DirectCheck{false, "the file system refuses O_DIRECT (" + f.error().message + ")"};
  }
  DirectCheck c{true, ""};
  if (f->size > 0) {
    void* buf = std::aligned_alloc(4096, 4096);
    ssize_t n;
    do n = ::pread(f->fd, buf, 4096, 0);
    while (n < 0 && errno == EINTR);
    const int e = errno;
    std::free(buf);
    if (n < 0) {
      c.works = false;
      c.why = std::string("the file system refuses O_DIRECT reads (pread: ") + std::strerror(e) +
              " (" + errno_name(e) + "))";
    }
  }
  ::close(f->fd);
  return c;
}

std::string describe(const BlockSource& s) {
  std::string d =
      std::string(s.direct() ? "O_DIRECT" : "buffered, the page cache may serve reads") + ", qd " +
      std::to_string(s.queue_depth()) + ", chunk " + format_bytes(s.chunk_bytes());
  return d;
}

}  // namespace

Expected<std::unique_ptr<BlockSource>> open_block_source(const std::string& path,
                                                         const SourceOptions& o, std::string* why) {
  const std::string& kind = o.kind;
  if (kind == "vfio") return open_vfio_source(path, o);
  if (kind != "auto" && kind != "uring" && kind != "pread" && kind != "buffered")
    return make_error("unknown block source '%s' (auto, uring, pread, buffered, vfio)",
                      kind.c_str());
  const uint32_t qd = std::clamp<uint32_t>(o.queue_depth, 1, 4096);
  // 4 KiB multiples whatever the source, so a chunk means the same for all.
  const uint64_t chunk = std::clamp<uint64_t>((o.chunk_bytes + 4095) / 4096 * 4096, 4096, 1 << 30);

  std::unique_ptr<BlockSource> src;
  std::string reason;
  if (kind == "buffered") {
    auto s = open_pread_source(path, false, qd, chunk);
    if (!s) return s.error();
    src = std::move(*s);
    reason = "forced (buffered)";
  } else {
    auto dc = check_direct(path);
    if (!dc) return dc.error();
    if (kind == "uring") {
      auto s = open_uring_source(path, dc->works, qd, chunk);
      if (!s) return make_error("io_uring was asked for but %s", s.error().message.c_str());
      src = std::move(*s);
      reason = dc->works ? "forced (uring)" : "forced (uring); " + dc->why;
    } else if (kind == "pread") {
      auto s = open_pread_source(path, dc->works, qd, chunk);
      if (!s) return s.error();
      src = std::move(*s);
      reason = dc->works ? "forced (pread)" : "forced (pread); " + dc->why;
    } else if (!dc->works) {  // auto, no O_DIRECT: buffered pread
      auto s = open_pread_source(path, false, qd, chunk);
      if (!s) return s.error();
      src = std::move(*s);
      reason = dc->why;
    } else {  // auto: io_uring, else pread, both O_DIRECT
      auto s = open_uring_source(path, true, qd, chunk);
      if (s) {
        src = std::move(*s);
        reason = "io_uring and O_DIRECT both work here";
      } else {
        auto p = open_pread_source(path, true, qd, chunk);
        if (!p) return p.error();
        src = std::move(*p);
        reason = "io_uring unavailable: " + s.error().message;
      }
    }
  }
  char line[1536];
  std::snprintf(line, sizeof line, "layerstream: reading %s with %s (%s): %s", path.c_str(),
                src->name(), describe(*src).c_str(), reason.c_str());
  if (o.log) std::fprintf(stderr, "%s\n", line);
  if (why) *why = line;
  return src;
}

}  // namespace ls
