// Block sources: how the reader actor gets a layer's byte ranges from the
// GGUF file into pinned staging buffers. One interface, several transports:
// io_uring with O_DIRECT and registered buffers (the default), pread from a
// few threads (the fallback, also for file systems that refuse O_DIRECT), and
// later a userspace NVMe driver over VFIO.
//
// The contract, for every source:
//   - submit() never blocks: it validates the requests (all or none are
//     taken), splits each into chunks of `chunk_bytes` and keeps at most
//     `queue_depth` chunks in flight; the rest wait inside the source and are
//     issued as earlier chunks complete (during wait()).
//   - A request completes exactly once, when all of its chunks are done. After
//     its completion the source no longer touches its buffer, even when it
//     failed (in-flight chunks are reaped before the failure is reported).
//   - Aligned over-read: a request for [offset, offset+bytes) reads the
//     aligned superset plan_read() gives into dst; the wanted bytes start at
//     dst + lead. dst must hold plan.aligned_bytes.
//   - Errors are values that name the file, the offset and the errno: a read
//     error (cqe->res < 0, pread -1), a short read that ends before the wanted
//     bytes (file truncated while running). EINTR/EAGAIN are retried.
//   - One thread drives a source (the reader actor owns it).
// defines: ReadRequest, ReadCompletion, ReadPlan, plan_read, BlockSource,
//          SourceOptions, open_block_source, read_error, short_read_error,
//          errno_name, format_bytes
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/status.h"

namespace ls {

// One read: the wanted byte range of the file, the buffer it goes to, and a tag
// the caller chooses (a layer and buffer id, say) that comes back on completion.
struct ReadRequest {
  uint64_t offset;  // file offset of the wanted bytes (any alignment)
  uint64_t bytes;   // wanted bytes; offset + bytes <= size()
  uint8_t* dst;     // alignment()-aligned, room for plan_read(...).aligned_bytes
  uint64_t tag;
};

struct ReadCompletion {
  uint64_t tag;
  Status status;   // an error names the file, the offset and the errno
  uint64_t bytes;  // wanted bytes now in the buffer: the request's bytes, 0 on error
  uint64_t lead;   // the wanted bytes start at dst + lead
};

// Aligned over-read: [aligned_offset, aligned_offset + aligned_bytes) is the
// smallest alignment-aligned range that covers [offset, offset + bytes).
struct ReadPlan {
  uint64_t aligned_offset;
  uint64_t aligned_bytes;
  uint64_t lead;  // offset - aligned_offset
};
ReadPlan plan_read(uint64_t offset, uint64_t bytes, uint32_t alignment);

class BlockSource {
 public:
  virtual ~BlockSource() = default;
  virtual const char* name() const = 0;    // "io_uring", "pread", later "vfio"
  virtual bool direct() const = 0;         // reads bypass the page cache (O_DIRECT)
  virtual uint32_t alignment() const = 0;  // offset/size/address alignment: 4096 direct, 1 buffered
  virtual uint64_t size() const = 0;       // bytes readable (the file size at open)
  virtual uint32_t queue_depth() const = 0;  // chunks in flight at most
  virtual uint64_t chunk_bytes() const = 0;  // a request is read in chunks of this size
  // Register the staging buffers once (io_uring fixed buffers; VFIO DMA
  // mapping later). Each must be alignment()-aligned. Reads into memory
  // outside them still work where the transport allows it (io_uring, pread).
  virtual Status register_buffers(std::span<const std::span<uint8_t>> bufs) = 0;
  // Take reads; never blocks. An invalid request (past the end of the file,
  // misaligned dst) fails the whole call and none is taken.
  virtual Status submit(std::span<const ReadRequest> reqs) = 0;
  // Wait for at least `min` completions (fewer if fewer are in flight), or
  // until timeout_ms passes (< 0: no limit; 0: poll), appending them to out.
  // A timeout is not an error: the caller counts what came. The Status is an
  // error only when the source itself broke; per-read errors are in out.
  virtual Status wait(size_t min, int timeout_ms, std::vector<ReadCompletion>& out) = 0;
  // Requests taken and not yet handed out by wait().
  virtual size_t in_flight() const = 0;
};

struct SourceOptions {
  // "auto": io_uring + O_DIRECT when the kernel and file system allow it, else
  // pread + O_DIRECT, else buffered pread. "uring", "pread" (O_DIRECT) and
  // "buffered" (pread through the page cache) force one, an error if impossible.
  // "vfio": a userspace NVMe driver reading the model's copy on a raw
  // namespace (io/vfio_source.h); never picked by auto.
  std::string kind = "auto";
  uint32_t queue_depth = 32;
  uint64_t chunk_bytes = 1 << 20;  // rounded up to the alignment; at most 1 GiB
  bool log = true;                 // the one stderr line saying which source and why
  // "vfio": the controller (PCI address) and the LBA the model was written at.
  std::string nvme;
  uint64_t nvme_lba = 0;
};

// Opens path and picks the source. `why`, when given, receives the log line.
Expected<std::unique_ptr<BlockSource>> open_block_source(const std::string& path,
                                                         const SourceOptions& o,
                                                         std::string* why = nullptr);

// Shared error texts, so that every source (and the fault injector) says the same.
// "read of F at offset O (N bytes) via S: Input/output error (EIO)"
Error read_error(const std::string& path, const char* via, uint64_t offset, uint64_t bytes,
                 int err);
// "read of F at offset O (N bytes) via S: short read, the file ends at byte E ..."
Error short_read_error(const std::string& path, const char* via, uint64_t offset, uint64_t bytes,
                       uint64_t eof_at);
const char* errno_name(int err);       // "EIO"; "errno N" for unknown ones
std::string format_bytes(uint64_t n);  // "1 MiB", "4 KiB", "1000 B"

}  // namespace ls
