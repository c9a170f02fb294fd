// The bookkeeping every block source shares: requests in, aligned chunks out,
// chunk results back, one completion per request. A source only moves bytes
// (io_uring SQEs, pread calls, later NVMe commands); what a short read means,
// when to retry and when a request is done is decided here, once.
// Not thread-safe: a source that uses threads (pread) holds a lock around it.
// defines: Chunk, ChunkBook, open_for_read
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include "io/block_source.h"

namespace ls {

// A piece of one request's aligned range, read with one call/command.
struct Chunk {
  uint32_t req = 0;     // slot in the book
  uint64_t offset = 0;  // file offset (aligned)
  uint64_t bytes = 0;   // length (aligned except where it ends at a buffered file's end)
  uint8_t* dst = nullptr;
  uint32_t retries = 0;  // EINTR/EAGAIN retries so far
};

// open(2) for reading (O_DIRECT when asked, O_CLOEXEC always) and the bytes
// readable: st_size, or BLKGETSIZE64 for a block device. The caller owns the fd.
struct OpenedFile {
  int fd = -1;
  uint64_t size = 0;
};
Expected<OpenedFile> open_for_read(const std::string& path, bool direct);

class ChunkBook {
 public:
  ChunkBook(std::string path, const char* via, uint32_t alignment, uint64_t chunk_bytes,
            uint64_t file_size);

  // Validate every request, then take them all (or none).
  Status add(std::span<const ReadRequest> reqs);
  // The next chunk to issue; false when nothing is waiting.
  bool next_chunk(Chunk* c);
  bool has_pending() const { return !pending_.empty(); }
  // A chunk came back with `res` bytes read (>= 0) or -errno. Returns true when
  // the chunk must be issued again (c now describes what is left to read);
  // otherwise the chunk is finished and, if it was its request's last, the
  // request's completion joins done().
  bool finish(Chunk& c, int64_t res);
  // Completions ready to hand out; the source moves them into wait()'s out.
  std::vector<ReadCompletion>& done() { return done_; }
  const std::vector<ReadCompletion>& done() const { return done_; }
  // Requests taken and not completed yet (not counting done()).
  size_t open_requests() const { return open_; }
  uint64_t chunk_bytes() const { return chunk_; }

  static constexpr uint32_t kMaxRetries = 1000;  // EAGAIN forever is a broken device

 private:
  struct Req {
    ReadRequest r{};
    ReadPlan plan{};
    uint64_t cursor = 0;  // bytes of the aligned range issued so far
    uint32_t outstanding = 0;
    bool failed = false;
    Error err;
    bool live = false;
  };
  void fail(Req& q, Error e);
  void maybe_complete(uint32_t slot);

  std::string path_;
  const char* via_;
  uint32_t align_;
  uint64_t chunk_;
  uint64_t size_;
  std::vector<Req> reqs_;
  std::vector<uint32_t> free_;
  std::deque<uint32_t> pending_;  // requests with chunks not issued yet, in order
  std::vector<ReadCompletion> done_;
  size_t open_ = 0;
};

}  // namespace ls
