// defines: FaultySource
#include "io/faulty_source.h"

#include <algorithm>
#include <thread>

namespace ls {

FaultySource::FaultySource(std::unique_ptr<BlockSource> inner, std::string path, FaultOptions o)
    : inner_(std::move(inner)), path_(std::move(path)), o_(o), rng_(o.seed) {}

Status FaultySource::submit(std::span<const ReadRequest> reqs) {
  // The inner source sees our sequence numbers as tags, so that "request N"
  // means the Nth submitted, whatever tags the caller uses.
  std::vector<ReadRequest> mine(reqs.begin(), reqs.end());
  for (size_t i = 0; i < mine.size(); ++i) mine[i].tag = next_ + i;
  LS_TRY(inner_->submit(mine));
  for (const ReadRequest& r : reqs) {
    sent_[next_] = {r.tag, r.offset, r.bytes, next_};
    ++next_;
  }
  return ok();
}

void FaultySource::take(ReadCompletion c) {
  auto it = sent_.find(c.tag);
  const Sent s = it->second;
  sent_.erase(it);
  c.tag = s.tag;
  const std::string label = path_;
  const char* via = inner_->name();
  if (static_cast<int64_t>(s.index) == o_.fail_request && c.status.ok()) {
    Error e = read_error(label, via, s.offset, s.bytes, o_.fail_errno);
    e.message += " [injected]";
    c.status = Status(std::move(e));
    c.bytes = 0;
  } else if (static_cast<int64_t>(s.index) == o_.short_request && c.status.ok()) {
    Error e = short_read_error(label, via, s.offset, s.bytes, s.offset + s.bytes / 2);
    e.message += " [injected]";
    c.status = Status(std::move(e));
    c.bytes = 0;
  }
  uint64_t delay = o_.min_delay_us;
  if (o_.max_delay_us > o_.min_delay_us)
    delay += rng_() % (uint64_t{o_.max_delay_us} - o_.min_delay_us + 1);
  held_.push_back({Clock::now() + std::chrono::microseconds(delay), std::move(c)});
}

Status FaultySource::wait(size_t min, int timeout_ms, std::vector<ReadCompletion>& out) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0));
  size_t got = 0;
  std::vector<ReadCompletion> fresh;
  for (;;) {
    // Release what is due, in release order (so delays reorder completions).
    const auto now = Clock::now();
    std::stable_sort(held_.begin(), held_.end(),
                     [](const Held& a, const Held& b) { return a.release < b.release; });
    size_t due = 0;
    while (due < held_.size() && held_[due].release <= now) ++due;
    for (size_t i = 0; i < due; ++i) out.push_back(std::move(held_[i].c));
    held_.erase(held_.begin(), held_.begin() + due);
    got += due;
    if (got >= std::min(min, got + in_flight())) return ok();
    if (timeout_ms >= 0 && now >= deadline) return ok();
    // Block on the inner source, but not past the next release or the deadline.
    auto until = held_.empty() ? Clock::time_point::max() : held_.front().release;
    if (timeout_ms >= 0) until = std::min(until, deadline);
    int ms = -1;  // no limit
    if (until != Clock::time_point::max())
      ms = std::max<int>(
          0, static_cast<int>(
                 std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now()).count()));
    if (inner_->in_flight() == 0) {
      if (until != Clock::time_point::max()) std::this_thread::sleep_until(until);
      continue;
    }
    fresh.clear();
    LS_TRY(inner_->wait(1, ms, fresh));
    for (auto& c : fresh) take(std::move(c));
  }
}

}  // namespace ls
