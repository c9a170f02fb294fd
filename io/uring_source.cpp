// The io_uring block source. One ring of queue_depth entries; each in-flight
// chunk owns a slot whose index is the SQE's user_data. submit() fills free
// slots from the book and submits; wait() reaps CQEs, hands each result to the
// book (which decides: done, retry, continue a partial read, or fail), refills
// and submits again. The file is registered (IOSQE_FIXED_FILE) and reads into
// registered buffers use IORING_OP_READ_FIXED, so the kernel neither looks up
// the fd nor pins the pages per read.
// defines: UringSource, open_uring_source
#include "io/uring_source.h"

#include <liburing.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "io/chunk_book.h"

namespace ls {
namespace {

using Clock = std::chrono::steady_clock;

Error uring_error(const char* call, int err) {
  return make_error("%s: %s (%s)", call, std::strerror(err), errno_name(err));
}

class UringSource final : public BlockSource {
 public:
  UringSource(std::string path, OpenedFile f, bool direct, uint32_t qd, uint64_t chunk)
      : path_(path),
        fd_(f.fd),
        direct_(direct),
        size_(f.size),
        qd_(qd),
        book_(std::move(path), "io_uring", direct ? 4096 : 1, chunk, f.size) {}

  ~UringSource() override {
    if (ring_ok_) {
      drain();
      io_uring_queue_exit(&ring_);
    }
    ::close(fd_);
  }

  // Ring setup, file registration and a test read of the first block.
  Status init() {
    const int r = io_uring_queue_init(qd_, &ring_, 0);
    if (r < 0) return uring_error("io_uring_queue_init", -r);
    ring_ok_ = true;
    fixed_file_ = io_uring_register_files(&ring_, &fd_, 1) == 0;
    slots_.resize(qd_);
    for (uint32_t i = qd_; i-- > 0;) free_.push_back(i);
    if (size_ == 0) return ok();
    const uint64_t n = direct_ ? 4096 : std::min<uint64_t>(size_, 4096);
    void* buf = std::aligned_alloc(4096, 4096);
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    io_uring_prep_read(sqe, fixed_file_ ? 0 : fd_, buf, n, 0);
    if (fixed_file_) sqe->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data64(sqe, kTestRead);
    Status st;
    bool landed = false;  // the read is over, the buffer may go
    int s;
    do s = io_uring_submit(&ring_);
    while (s == -EINTR);
    if (s < 0) {
      st = uring_error("io_uring_submit", -s);
      landed = true;
    } else {
      io_uring_cqe* cqe = nullptr;
      __kernel_timespec ts{5, 0};
      do s = io_uring_wait_cqe_timeout(&ring_, &cqe, &ts);
      while (s == -EINTR);
      if (s < 0) {
        st = uring_error("io_uring test read (waited 5 s for the first block)", -s);
      } else {
        if (cqe->res < 0) st = uring_error("io_uring test read of the first block", -cqe->res);
        io_uring_cqe_seen(&ring_, cqe);
        landed = true;
      }
    }
    // A read still in the kernel may write into buf later: leak its 4 KiB then.
    if (landed) std::free(buf);
    return st;
  }

  const char* name() const override { return "io_uring"; }
  bool direct() const override { return direct_; }
  uint32_t alignment() const override { return direct_ ? 4096 : 1; }
  uint64_t size() const override { return size_; }
  uint32_t queue_depth() const override { return qd_; }
  uint64_t chunk_bytes() const override { return book_.chunk_bytes(); }

  Status register_buffers(std::span<const std::span<uint8_t>> bufs) override {
    if (in_flight()) return make_error("io_uring: register_buffers with reads in flight");
    if (!bufs_.empty()) {
      io_uring_unregister_buffers(&ring_);
      bufs_.clear();
    }
    std::vector<iovec> iov;
    uint64_t total = 0;
    for (const auto& b : bufs) {
      if (reinterpret_cast<uintptr_t>(b.data()) % alignment())
        return make_error("io_uring: staging buffer %p is not %u-byte aligned", (void*)b.data(),
                          alignment());
      iov.push_back({b.data(), b.size()});
      total += b.size();
    }
    if (iov.empty()) return ok();
    const int r = io_uring_register_buffers(&ring_, iov.data(), static_cast<unsigned>(iov.size()));
    if (r < 0)
      return make_error("io_uring_register_buffers (%zu buffers, %s): %s (%s)%s", iov.size(),
                        format_bytes(total).c_str(), std::strerror(-r), errno_name(-r),
                        r == -ENOMEM ? ": raise the locked-memory limit (ulimit -l) or run with "
                                       "CAP_IPC_LOCK"
                                     : "");
    bufs_.assign(bufs.begin(), bufs.end());
    return ok();
  }

  Status submit(std::span<const ReadRequest> reqs) override {
    LS_TRY(book_.add(reqs));
    return pump();
  }

  Status wait(size_t min, int timeout_ms, std::vector<ReadCompletion>& out) override {
    const auto deadline = Clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0));
    size_t got = 0;
    LS_TRY(pump());
    for (;;) {
      auto& d = book_.done();
      got += d.size();
      std::move(d.begin(), d.end(), std::back_inserter(out));
      d.clear();
      if (got >= std::min(min, got + book_.open_requests())) return ok();
      int64_t left_ns = -1;
      if (timeout_ms >= 0) {
        left_ns =
            std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - Clock::now()).count();
        if (left_ns <= 0) return ok();  // timed out: the caller counts what came
      }
      if (free_.size() == qd_) {
        // Nothing in the kernel, yet requests are open: the last submit was
        // refused (EAGAIN/EBUSY). Back off a little and submit again.
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        LS_TRY(pump());
        continue;
      }
      io_uring_cqe* cqe = nullptr;
      int r;
      if (left_ns < 0) {
        r = io_uring_wait_cqe(&ring_, &cqe);
      } else {
        __kernel_timespec ts{left_ns / 1000000000, left_ns % 1000000000};
        r = io_uring_wait_cqe_timeout(&ring_, &cqe, &ts);
      }
      if (r < 0 && r != -ETIME && r != -EINTR && r != -EAGAIN)
        return uring_error("io_uring_wait_cqe", -r);
      reap();
      LS_TRY(pump());
    }
  }

  size_t in_flight() const override { return book_.open_requests() + book_.done().size(); }

 private:
  static constexpr uint64_t kTestRead = ~uint64_t{0};

  int buffer_index(const uint8_t* p, uint64_t n) const {
    for (size_t i = 0; i < bufs_.size(); ++i)
      if (p >= bufs_[i].data() && p + n <= bufs_[i].data() + bufs_[i].size())
        return static_cast<int>(i);
    return -1;
  }

  void prep(uint32_t slot) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);  // never null: slots <= SQ entries
    const Chunk& c = slots_[slot];
    const int fd = fixed_file_ ? 0 : fd_;
    const int bi = buffer_index(c.dst, c.bytes);
    if (bi >= 0)
      io_uring_prep_read_fixed(sqe, fd, c.dst, static_cast<unsigned>(c.bytes), c.offset, bi);
    else
      io_uring_prep_read(sqe, fd, c.dst, static_cast<unsigned>(c.bytes), c.offset);
    if (fixed_file_) sqe->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data64(sqe, slot);
  }

  // Fill free slots from the book, then submit what is queued.
  Status pump() {
    while (!free_.empty() && book_.has_pending()) {
      const uint32_t slot = free_.back();
      free_.pop_back();
      book_.next_chunk(&slots_[slot]);
      prep(slot);
    }
    while (io_uring_sq_ready(&ring_) > 0) {
      const int r = io_uring_submit(&ring_);
      if (r == -EINTR) continue;
      if (r == -EAGAIN || r == -EBUSY) break;  // try again on the next wait()
      if (r < 0) return uring_error("io_uring_submit", -r);
      if (r == 0) break;
    }
    return ok();
  }

  // Every CQE that is ready: a result for the book; a retry goes straight back.
  void reap() {
    io_uring_cqe* cqe;
    while (io_uring_peek_cqe(&ring_, &cqe) == 0) {
      const uint64_t slot = io_uring_cqe_get_data64(cqe);
      const int res = cqe->res;
      io_uring_cqe_seen(&ring_, cqe);
      if (slot == kTestRead) continue;
      if (book_.finish(slots_[slot], res))
        prep(static_cast<uint32_t>(slot));
      else
        free_.push_back(static_cast<uint32_t>(slot));
    }
  }

  // Before the ring goes: let the kernel finish every read into our buffers.
  void drain() {
    const auto give_up = Clock::now() + std::chrono::seconds(10);
    while (free_.size() < qd_ && Clock::now() < give_up) {
      io_uring_submit(&ring_);
      io_uring_cqe* cqe = nullptr;
      __kernel_timespec ts{0, 100000000};
      io_uring_wait_cqe_timeout(&ring_, &cqe, &ts);
      io_uring_cqe* c;
      while (io_uring_peek_cqe(&ring_, &c) == 0) {
        const uint64_t slot = io_uring_cqe_get_data64(c);
        io_uring_cqe_seen(&ring_, c);
        if (slot != kTestRead) free_.push_back(static_cast<uint32_t>(slot));
      }
    }
  }

  std::string path_;
  int fd_;
  bool direct_;
  uint64_t size_;
  uint32_t qd_;
  ChunkBook book_;
  io_uring ring_{};
  bool ring_ok_ = false;
  bool fixed_file_ = false;
  std::vector<Chunk> slots_;              // (qd) in-flight chunks, by slot
  std::vector<uint32_t> free_;            // free slots
  std::vector<std::span<uint8_t>> bufs_;  // registered, by buffer index
};

}  // namespace

Expected<std::unique_ptr<BlockSource>> open_uring_source(const std::string& path, bool direct,
                                                         uint32_t queue_depth,
                                                         uint64_t chunk_bytes) {
  auto f = open_for_read(path, direct);
  if (!f) return f.error();
  auto s = std::make_unique<UringSource>(path, *f, direct, std::max<uint32_t>(queue_depth, 1),
                                         chunk_bytes);
  LS_TRY(s->init());
  return std::unique_ptr<BlockSource>(std::move(s));
}

}  // namespace ls
