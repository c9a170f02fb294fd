// The request → chunk → completion bookkeeping shared by every block source.
// defines: ChunkBook, open_for_read
#include "io/chunk_book.h"

#include <fcntl.h>
#include <linux/fs.h>  // defines: BLKGETSIZE64
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ls {

Expected<OpenedFile> open_for_read(const std::string& path, bool direct) {
  const int flags = O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0);
  int fd;
  do fd = ::open(path.c_str(), flags);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    const int e = errno;
    return make_error("cannot open %s%s: %s (%s)", path.c_str(), direct ? " with O_DIRECT" : "",
                      std::strerror(e), errno_name(e));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return make_error("cannot stat %s: %s (%s)", path.c_str(), std::strerror(e), errno_name(e));
  }
  OpenedFile f{fd, static_cast<uint64_t>(st.st_size)};
  if (S_ISBLK(st.st_mode)) {
    uint64_t n = 0;
    if (::ioctl(fd, BLKGETSIZE64, &n) == 0) f.size = n;
  } else if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error("%s is not a regular file or a block device", path.c_str());
  }
  return f;
}

ChunkBook::ChunkBook(std::string path, const char* via, uint32_t alignment, uint64_t chunk_bytes,
                     uint64_t file_size)
    : path_(std::move(path)),
      via_(via),
      align_(alignment ? alignment : 1),
      chunk_(std::max<uint64_t>(align_, chunk_bytes / align_ * align_)),
      size_(file_size) {}

Status ChunkBook::add(std::span<const ReadRequest> reqs) {
  for (const ReadRequest& r : reqs) {
    if (r.bytes > size_ || r.offset > size_ - r.bytes)
      return make_error(
          "read of %s at offset %llu (%llu bytes) via %s: past the end of the file "
          "(%llu bytes)",
          path_.c_str(), (unsigned long long)r.offset, (unsigned long long)r.bytes, via_,
          (unsigned long long)size_);
    if (r.bytes && !r.dst)
      return make_error("read of %s at offset %llu via %s: no destination buffer", path_.c_str(),
                        (unsigned long long)r.offset, via_);
    if (reinterpret_cast<uintptr_t>(r.dst) % align_)
      return make_error("read of %s at offset %llu via %s: buffer %p is not %u-byte aligned",
                        path_.c_str(), (unsigned long long)r.offset, via_, (void*)r.dst, align_);
  }
  for (const ReadRequest& r : reqs) {
    const ReadPlan plan = plan_read(r.offset, r.bytes, align_);
    if (plan.aligned_bytes == 0) {  // nothing to read: done at once
      done_.push_back({r.tag, ok(), 0, plan.lead});
      continue;
    }
    uint32_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      slot = static_cast<uint32_t>(reqs_.size());
      reqs_.emplace_back();
    }
    Req& q = reqs_[slot];
    q = Req{};
    q.r = r;
    q.plan = plan;
    q.live = true;
    pending_.push_back(slot);
    ++open_;
  }
  return ok();
}

bool ChunkBook::next_chunk(Chunk* c) {
  if (pending_.empty()) return false;
  const uint32_t slot = pending_.front();
  Req& q = reqs_[slot];
  c->req = slot;
  c->offset = q.plan.aligned_offset + q.cursor;
  c->bytes = std::min(chunk_, q.plan.aligned_bytes - q.cursor);
  c->dst = q.r.dst + q.cursor;
  c->retries = 0;
  q.cursor += c->bytes;
  ++q.outstanding;
  if (q.cursor == q.plan.aligned_bytes) pending_.pop_front();
  return true;
}

bool ChunkBook::finish(Chunk& c, int64_t res) {
  Req& q = reqs_[c.req];
  const uint64_t want_end = q.r.offset + q.r.bytes;
  if (res == -EINTR || res == -EAGAIN) {
    if (++c.retries < kMaxRetries) return true;
    fail(q, read_error(path_, via_, c.offset, c.bytes, static_cast<int>(-res)));
  } else if (res < 0) {
    fail(q, read_error(path_, via_, c.offset, c.bytes, static_cast<int>(-res)));
  } else if (static_cast<uint64_t>(res) < c.bytes) {
    // Short: fine if the file ends after the wanted bytes (the aligned
    // over-read's tail); a partial aligned read is continued; anything else
    // means the file ends before the wanted bytes (truncated while running).
    const uint64_t got_end = c.offset + static_cast<uint64_t>(res);
    if (got_end < want_end) {
      if (res > 0 && static_cast<uint64_t>(res) % align_ == 0) {
        c.offset += res;
        c.dst += res;
        c.bytes -= res;
        c.retries = 0;
        return true;
      }
      fail(q, short_read_error(path_, via_, q.r.offset, q.r.bytes, got_end));
    }
  }
  --q.outstanding;
  maybe_complete(c.req);
  return false;
}

void ChunkBook::fail(Req& q, Error e) {
  if (q.failed) return;
  q.failed = true;
  q.err = std::move(e);
  if (q.cursor != q.plan.aligned_bytes) {  // drop the chunks not issued yet
    q.cursor = q.plan.aligned_bytes;
    const uint32_t slot = static_cast<uint32_t>(&q - reqs_.data());
    pending_.erase(std::find(pending_.begin(), pending_.end(), slot));
  }
}

void ChunkBook::maybe_complete(uint32_t slot) {
  Req& q = reqs_[slot];
  if (q.outstanding || q.cursor != q.plan.aligned_bytes) return;
  if (q.failed)
    done_.push_back({q.r.tag, Status(std::move(q.err)), 0, q.plan.lead});
  else
    done_.push_back({q.r.tag, ok(), q.r.bytes, q.plan.lead});
  q.live = false;
  free_.push_back(slot);
  --open_;
}

}  // namespace ls
