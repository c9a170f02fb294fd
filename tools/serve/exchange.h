// What passes between the HTTP layer (tools/serve/http_server.cpp, Boost.Beast)
// and the routes (tools/serve/routes.cpp), in plain types so the routes
// know nothing of Beast: a request, a whole response, or a response made
// over time on another thread (a generation: SSE frames as they come, or
// one body at the end). The routes' side produces; the connection consumes
// and is woken, on its own executor, when there is something to write.
// defines: HttpRequest, HttpResponse, ResponseStream, Reply
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace ls {

struct HttpRequest {
  std::string method;  // GET, POST, ...
  std::string target;  // the path, query string removed
  std::string body;
  std::string authorization;  // the Authorization header, as sent
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra ones (Retry-After, ...)
};

// A response that another thread writes. sse: the head (200,
// text/event-stream) goes out at once and each push() is a frame; else the
// whole response comes with finish(). Thread-safe.
class ResponseStream {
 public:
  explicit ResponseStream(bool sse) : sse_(sse) {}
  bool sse() const { return sse_; }

  // ---- the producer (a generation's sink; any thread) ----
  void push(std::string frame) {
    std::function<void()> wake;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (done_) return;
      pending_ += frame;
      wake = wake_;
    }
    if (wake) wake();
  }
  // The end: sse, the last frames (e.g. the final chunk and [DONE]); else
  // the whole response.
  void finish(HttpResponse last) {
    std::function<void()> wake;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (done_) return;
      done_ = true;
      if (sse_)
        pending_ += last.body;
      else
        final_ = std::move(last);
      wake = wake_;
    }
    if (wake) wake();
  }
  // What runs when the client leaves before the end (cancel the generation).
  void on_abandon(std::function<void()> f) {
    std::lock_guard<std::mutex> lock(mu_);
    abandon_ = std::move(f);
  }

  // ---- the consumer (the connection) ----
  // Called (any thread, possibly at once) when there is more; it must only
  // post to the connection's executor.
  void set_waker(std::function<void()> f) {
    std::function<void()> now;
    {
      std::lock_guard<std::mutex> lock(mu_);
      wake_ = std::move(f);
      if (!pending_.empty() || done_) now = wake_;
    }
    if (now) now();
  }
  // Takes the frames that came; *done once finish() was called (then, not
  // sse, *last is the response).
  std::string take(bool* done, HttpResponse* last) {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out;
    out.swap(pending_);
    *done = done_;
    if (done_ && !sse_ && last) *last = final_;
    return out;
  }
  // The client left: the producer is told once, and what it sends is dropped.
  void abandon() {
    std::function<void()> f;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (abandoned_) return;
      abandoned_ = true;
      f = std::move(abandon_);
      wake_ = nullptr;
    }
    if (f) f();
  }

 private:
  const bool sse_;
  std::mutex mu_;
  std::string pending_;
  bool done_ = false, abandoned_ = false;
  HttpResponse final_;
  std::function<void()> wake_, abandon_;
};

// What a route answers: at once, or over time.
using Reply = std::variant<HttpResponse, std::shared_ptr<ResponseStream>>;

}  // namespace ls
