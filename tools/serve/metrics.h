// GET /metrics: the server's counters in Prometheus' text format (0.0.4):
// generation requests by how they ended, tokens in and out, tokens/s, the
// queue, the key/value blocks in use, and HTTP requests by path and status.
// A client that disconnects shows as a cancelled request, its sequence and
// blocks gone from the gauges at the next scrape.
// defines: HttpCounters, metrics_text()
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "actors/generator.h"

namespace ls {

// What the HTTP layer counts (any thread).
class HttpCounters {
 public:
  // One answered request; path: a route of the server, else "other".
  void count(const std::string& path, int status) {
    std::lock_guard<std::mutex> lock(mu_);
    ++by_route_[{path, status}];
  }
  std::map<std::pair<std::string, int>, uint64_t> snapshot() const {
    std::lock_guard<std::mutex> lock(mu_);
    return by_route_;
  }
  std::atomic<uint32_t> connections{0};          // open now
  std::atomic<uint64_t> connections_refused{0};  // past --max-connections
  std::atomic<uint64_t> timeouts{0};             // read, idle or write timeouts
  std::atomic<uint64_t> disconnects{0};          // clients gone before their response ended

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> by_route_;
};

// The exposition text. `gen` null: the model is still loading (no
// generation metrics yet).
std::string metrics_text(const GenStats* gen, const HttpCounters& http);

}  // namespace ls
