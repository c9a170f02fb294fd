// Fault injection for tests and stress runs: a BlockSource that decorates
// another and, deterministically by seed, fails the Nth request with an errno,
// turns the Mth into a short read, and holds each completion back for a random
// number of microseconds (which also reorders them). The errors read exactly
// as the real sources' do (read_error, short_read_error), marked [injected].
// defines: FaultOptions, FaultySource
#pragma once

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

#include "io/block_source.h"

namespace ls {

struct FaultOptions {
  uint64_t seed = 1;
  int64_t fail_request = -1;  // 0-based index among submitted requests; -1: none
  int fail_errno = EIO;
  int64_t short_request = -1;  // this request ends in a short read; -1: none
  uint32_t min_delay_us = 0;   // each completion is held back for a time drawn
  uint32_t max_delay_us = 0;   // uniformly from [min_delay_us, max_delay_us]
};

class FaultySource final : public BlockSource {
 public:
  FaultySource(std::unique_ptr<BlockSource> inner, std::string path, FaultOptions o);

  const char* name() const override { return inner_->name(); }
  bool direct() const override { return inner_->direct(); }
  uint32_t alignment() const override { return inner_->alignment(); }
  uint64_t size() const override { return inner_->size(); }
  uint32_t queue_depth() const override { return inner_->queue_depth(); }
  uint64_t chunk_bytes() const override { return inner_->chunk_bytes(); }
  Status register_buffers(std::span<const std::span<uint8_t>> bufs) override {
    return inner_->register_buffers(bufs);
  }
  Status submit(std::span<const ReadRequest> reqs) override;
  Status wait(size_t min, int timeout_ms, std::vector<ReadCompletion>& out) override;
  size_t in_flight() const override { return inner_->in_flight() + held_.size(); }

 private:
  using Clock = std::chrono::steady_clock;
  struct Sent {
    uint64_t tag, offset, bytes, index;
  };
  struct Held {
    Clock::time_point release;
    ReadCompletion c;
  };
  void take(ReadCompletion c);  // from the inner source: inject, then hold

  std::unique_ptr<BlockSource> inner_;
  std::string path_;
  FaultOptions o_;
  std::mt19937_64 rng_;
  uint64_t next_ = 0;  // requests submitted so far; also the inner tag
  std::unordered_map<uint64_t, Sent> sent_;
  std::vector<Held> held_;
};

}  // namespace ls
