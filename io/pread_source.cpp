// The pread block source: queue_depth worker threads, each taking the next
// chunk from the shared book, doing one pread(2), and handing the result back.
// defines: PreadSource, open_pread_source
#include "io/pread_source.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "io/chunk_book.h"

namespace ls {
namespace {

class PreadSource final : public BlockSource {
 public:
  PreadSource(std::string path, OpenedFile f, bool direct, uint32_t qd, uint64_t chunk)
      : fd_(f.fd),
        direct_(direct),
        size_(f.size),
        qd_(qd),
        book_(std::move(path), "pread", direct ? 4096 : 1, chunk, f.size) {
    const uint32_t n = std::min<uint32_t>(qd, 64);
    for (uint32_t i = 0; i < n; ++i) threads_.emplace_back([this] { worker(); });
  }
  ~PreadSource() override {
    {
      std::lock_guard lk(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : threads_) t.join();  // a pread in progress finishes first
    ::close(fd_);
  }

  const char* name() const override { return "pread"; }
  bool direct() const override { return direct_; }
  uint32_t alignment() const override { return direct_ ? 4096 : 1; }
  uint64_t size() const override { return size_; }
  uint32_t queue_depth() const override { return std::min<uint32_t>(qd_, 64); }
  uint64_t chunk_bytes() const override { return book_.chunk_bytes(); }

  Status register_buffers(std::span<const std::span<uint8_t>> bufs) override {
    for (const auto& b : bufs)
      if (reinterpret_cast<uintptr_t>(b.data()) % alignment())
        return make_error("pread source: staging buffer %p is not %u-byte aligned", (void*)b.data(),
                          alignment());
    return ok();  // nothing to register for pread
  }

  Status submit(std::span<const ReadRequest> reqs) override {
    {
      std::lock_guard lk(mu_);
      LS_TRY(book_.add(reqs));
      if (!book_.done().empty()) done_cv_.notify_all();
    }
    work_cv_.notify_all();
    return ok();
  }

  Status wait(size_t min, int timeout_ms, std::vector<ReadCompletion>& out) override {
    std::unique_lock lk(mu_);
    auto enough = [&] {
      const size_t have = book_.done().size();
      return have >= std::min(min, have + book_.open_requests());
    };
    if (timeout_ms < 0)
      done_cv_.wait(lk, enough);
    else
      done_cv_.wait_for(lk, std::chrono::milliseconds(timeout_ms), enough);
    auto& d = book_.done();
    std::move(d.begin(), d.end(), std::back_inserter(out));
    d.clear();
    return ok();
  }

  size_t in_flight() const override {
    std::lock_guard lk(mu_);
    return book_.open_requests() + book_.done().size();
  }

 private:
  void worker() {
    std::unique_lock lk(mu_);
    for (;;) {
      work_cv_.wait(lk, [&] { return stop_ || book_.has_pending(); });
      if (stop_) return;
      Chunk c;
      book_.next_chunk(&c);
      int64_t res;
      do {
        lk.unlock();
        const ssize_t n = ::pread(fd_, c.dst, c.bytes, static_cast<off_t>(c.offset));
        res = n < 0 ? -errno : n;
        lk.lock();
      } while (book_.finish(c, res));
      if (!book_.done().empty()) done_cv_.notify_all();
    }
  }

  int fd_;
  bool direct_;
  uint64_t size_;
  uint32_t qd_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  ChunkBook book_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace

Expected<std::unique_ptr<BlockSource>> open_pread_source(const std::string& path, bool direct,
                                                         uint32_t queue_depth,
                                                         uint64_t chunk_bytes) {
  auto f = open_for_read(path, direct);
  if (!f) return f.error();
  return std::unique_ptr<BlockSource>(
      new PreadSource(path, *f, direct, std::max<uint32_t>(queue_depth, 1), chunk_bytes));
}

}  // namespace ls
