// The HTTP layer of `layerstream serve`: Boost.Beast on Boost.Asio, one I/O
// thread (the work is the engine's; the I/O of a few hundred streams is
// light), a coroutine per connection. It reads requests under limits,
// hands them to a handler (tools/serve/routes.h) and writes what comes
// back: a response, or a stream whose frames arrive from the engine's
// thread. It owns the faults of the wire:
//
//   - header and body size (431, 413: refused from the header, before the
//     body is read), the number of connections (503 past it);
//   - a whole request must arrive within the read timeout (a slow-loris
//     client is cut off), a kept-alive connection may idle for the idle
//     timeout, a write must finish within the write timeout (a client that
//     stops reading is dropped and its generation cancelled);
//   - a client that disconnects while its response is made is noticed at
//     once (the socket turns readable with nothing to read), not at the
//     next write, and the stream's producer is told (the generation is
//     cancelled, its sequence freed at the next step);
//   - SIGINT/SIGTERM are delivered to the caller's callback, on the I/O
//     thread; drain() stops accepting and closes idle connections, busy
//     ones close once their response has ended.
// defines: HttpLimits, HttpServer
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "runtime/status.h"
#include "tools/serve/exchange.h"
#include "tools/serve/metrics.h"

namespace ls {

struct HttpLimits {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;             // 0: any free port (port() says which)
  uint64_t max_body = 4ull << 20;   // bytes of a request body
  uint32_t max_header = 16u << 10;  // bytes of a request's start line and headers
  uint32_t max_connections = 256;   // open at once; more get 503
  int read_timeout_s = 30;          // a whole request, from its first byte
  int idle_timeout_s = 60;          // a kept-alive connection between requests
  int write_timeout_s = 60;         // one write to a client
};

class HttpServer {
 public:
  using Handler = std::function<Reply(const HttpRequest&)>;
  // Binds host:port and starts the I/O thread. on_signal(sig) runs on it for
  // each SIGINT or SIGTERM. Errors: the address, the bind (port in use).
  static Expected<std::unique_ptr<HttpServer>> start(const HttpLimits& lim, Handler handler,
                                                     HttpCounters& counters,
                                                     std::function<void(int)> on_signal);
  ~HttpServer();  // stop()
  uint16_t port() const;
  // Stop accepting; idle connections close now, the others after their response.
  void drain();
  // Wait until no connection is open, at most ms; true if none is.
  bool wait_closed(int ms);
  // Close everything and join the I/O thread. Streams still being written
  // to are dropped: drain and let the generations end first.
  void stop();

  struct Impl;  // opaque: Beast stays in http_server.cpp

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ls
