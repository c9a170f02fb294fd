// Boost.Beast over Boost.Asio, with C++20 coroutines (asio::awaitable):
// each connection is one coroutine that reads a request, answers it, and
// loops while the client keeps the connection alive. Everything here runs
// on the one I/O thread, so a connection's state needs no lock; the only
// way in from another thread is a stream's waker, which posts.
#include "tools/serve/http_server.h"

// Boost 1.74's awaitable.hpp uses std::exchange without including <utility>.
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <chrono>
#include <list>
#include <mutex>
#include <thread>

#include "tools/serve/api_error.h"
#include "tools/serve/routes.h"

namespace ls {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using beast::error_code;
using std::chrono::seconds;

// The way from other threads into the I/O thread: a stream's waker posts
// through it, and stop() closes it before the io_context goes away.
struct IoGate {
  std::mutex mu;
  net::io_context* io = nullptr;
  template <typename F>
  void post(F&& f) {
    std::lock_guard<std::mutex> lock(mu);
    if (io) net::post(*io, std::forward<F>(f));
  }
};

}  // namespace

class Connection;

struct HttpServer::Impl {
  HttpLimits lim;
  Handler handler;
  HttpCounters& counters;
  std::function<void(int)> on_signal;
  net::io_context io{1};
  tcp::acceptor acceptor{io};
  net::signal_set signals{io};
  std::shared_ptr<IoGate> gate = std::make_shared<IoGate>();
  std::list<std::weak_ptr<Connection>> conns;  // I/O thread only
  bool draining = false;                       // I/O thread only
  std::thread thread;
  bool stopped = false;

  Impl(const HttpLimits& l, Handler h, HttpCounters& c, std::function<void(int)> s)
      : lim(l), handler(std::move(h)), counters(c), on_signal(std::move(s)) {}
  net::awaitable<void> accept_loop();
  net::awaitable<void> refuse(tcp::socket sock);
  void wait_signal();
};

// One client connection: requests in, responses out, in order.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(HttpServer::Impl& srv, tcp::socket sock)
      : srv_(srv), stream_(std::move(sock)), wake_(stream_.get_executor()) {
    srv_.counters.connections.fetch_add(1);
  }
  ~Connection() { srv_.counters.connections.fetch_sub(1); }
  // `self` keeps the connection alive for the coroutine's life: a coroutine
  // starts suspended, after its spawner has let go of it.
  net::awaitable<void> run(std::shared_ptr<Connection> self);
  // drain(): a connection waiting for its next request closes now.
  void close_if_idle() {
    if (idle_) stream_.cancel();
  }

 private:
  net::awaitable<void> write(const HttpResponse& r, unsigned version, bool keep);
  net::awaitable<bool> serve_stream(std::shared_ptr<ResponseStream> rs, unsigned version,
                                    bool keep);
  net::awaitable<void> watch(std::shared_ptr<Connection> self, std::shared_ptr<ResponseStream> rs,
                             uint64_t epoch);
  net::awaitable<void> linger();
  bool keep_alive(bool asked) const { return asked && !srv_.draining; }

  HttpServer::Impl& srv_;
  beast::tcp_stream stream_;
  beast::flat_buffer buf_;
  net::steady_timer wake_;  // a stream's waker cancels it: something to write
  bool idle_ = false;
  bool gone_ = false;   // the client left while a response was being made
  uint64_t epoch_ = 0;  // the response being made; the watcher's own
};

namespace {

constexpr auto kAwait = net::use_awaitable;
inline auto redirect(error_code& ec) {
  return net::redirect_error(net::use_awaitable, ec);
}

HttpResponse refusal(const ApiError& e) {
  HttpResponse r;
  r.status = e.status;
  r.body = api_error_body(e);
  return r;
}

std::string target_path(beast::string_view t) {
  const size_t q = t.find('?');
  return std::string(t.substr(0, q == beast::string_view::npos ? t.size() : q));
}

}  // namespace

net::awaitable<void> Connection::write(const HttpResponse& r, unsigned version, bool keep) {
  http::response<http::string_body> res{static_cast<http::status>(r.status), version};
  res.set(http::field::server, "layerstream");
  res.set(http::field::content_type, r.content_type);
  for (const auto& [k, v] : r.headers) res.set(k, v);
  res.keep_alive(keep);
  res.body() = r.body;
  res.prepare_payload();
  error_code ec;
  stream_.expires_after(seconds(srv_.lim.write_timeout_s));
  co_await http::async_write(stream_, res, redirect(ec));
  stream_.expires_never();
  if (ec == beast::error::timeout) srv_.counters.timeouts.fetch_add(1);
  if (ec) gone_ = true;
}

// After refusing a request whose body was not read (413, 431, 400), the
// rest of it is read and dropped for a moment before the close: a close
// with unread bytes sends a reset, which can destroy the refusal before the
// client has read it.
net::awaitable<void> Connection::linger() {
  error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  stream_.expires_after(seconds(1));
  char sink[16384];
  while (!ec) co_await stream_.async_read_some(net::buffer(sink), redirect(ec));
}

// The disconnect watcher: while a response is made, a readable socket with
// nothing to read is a client that left (EOF or reset); bytes to read are
// its next request (pipelining), and watching stops.
net::awaitable<void> Connection::watch(std::shared_ptr<Connection> self,
                                       std::shared_ptr<ResponseStream> rs, uint64_t epoch) {
  (void)self;
  error_code ec;
  co_await stream_.socket().async_wait(tcp::socket::wait_read, redirect(ec));
  if (epoch != epoch_ || ec == net::error::operation_aborted) co_return;
  error_code ec2;
  if (ec || stream_.socket().available(ec2) == 0 || ec2) {
    gone_ = true;
    srv_.counters.disconnects.fetch_add(1);
    rs->abandon();
    wake_.cancel();
  }
}

// A response made over time. SSE: the head at once (chunked), then each
// frame as it comes; else the whole response at the end. Returns false when
// the client is gone.
net::awaitable<bool> Connection::serve_stream(std::shared_ptr<ResponseStream> rs, unsigned version,
                                              bool keep) {
  const uint64_t epoch = ++epoch_;
  std::weak_ptr<Connection> weak = weak_from_this();
  std::shared_ptr<IoGate> gate = srv_.gate;
  rs->set_waker([weak, gate] {
    gate->post([weak] {
      if (auto c = weak.lock()) c->wake_.cancel();
    });
  });
  net::co_spawn(stream_.get_executor(), watch(shared_from_this(), rs, epoch), net::detached);
  error_code ec;
  http::response<http::empty_body> head{http::status::ok, version};
  http::response_serializer<http::empty_body> head_sr{head};
  if (rs->sse()) {
    head.set(http::field::server, "layerstream");
    head.set(http::field::content_type, "text/event-stream");
    head.set(http::field::cache_control, "no-cache");
    head.keep_alive(keep);
    head.chunked(true);
    stream_.expires_after(seconds(srv_.lim.write_timeout_s));
    co_await http::async_write_header(stream_, head_sr, redirect(ec));
    stream_.expires_never();
  }
  HttpResponse last;
  bool done = false;
  while (!ec && !gone_) {
    std::string data = rs->take(&done, &last);
    if (!data.empty() && rs->sse()) {
      stream_.expires_after(seconds(srv_.lim.write_timeout_s));
      co_await net::async_write(stream_, http::make_chunk(net::buffer(data)), redirect(ec));
      stream_.expires_never();
      continue;  // more may have come while writing
    }
    if (done) break;
    wake_.expires_at(net::steady_timer::time_point::max());
    error_code wait_ec;
    co_await wake_.async_wait(redirect(wait_ec));  // cancelled: more to take, or gone
  }
  ++epoch_;  // the watcher's wait, if still pending, now means nothing
  error_code ignored;
  stream_.socket().cancel(ignored);
  rs->set_waker(nullptr);
  if (ec || gone_) {
    if (ec == beast::error::timeout) srv_.counters.timeouts.fetch_add(1);
    if (ec && !gone_) srv_.counters.disconnects.fetch_add(1);
    rs->abandon();
    co_return false;
  }
  if (rs->sse()) {
    stream_.expires_after(seconds(srv_.lim.write_timeout_s));
    co_await net::async_write(stream_, http::make_chunk_last(), redirect(ec));
    stream_.expires_never();
    co_return !ec;
  }
  co_await write(last, version, keep);
  co_return !gone_;
}

net::awaitable<void> Connection::run(std::shared_ptr<Connection> self) {
  (void)self;
  const HttpLimits& lim = srv_.lim;
  for (;;) {
    if (srv_.draining) break;
    error_code ec;
    // Between requests: wait for the next one's first bytes (the idle timeout).
    if (buf_.size() == 0) {
      idle_ = true;
      stream_.expires_after(seconds(lim.idle_timeout_s));
      const size_t n = co_await stream_.async_read_some(buf_.prepare(4096), redirect(ec));
      idle_ = false;
      if (ec) {
        if (ec == beast::error::timeout) srv_.counters.timeouts.fetch_add(1);
        break;
      }
      buf_.commit(n);
    }
    // The whole request, header and body, within the read timeout.
    http::request_parser<http::string_body> parser;
    parser.header_limit(lim.max_header);
    parser.body_limit(lim.max_body);
    stream_.expires_after(seconds(lim.read_timeout_s));
    co_await http::async_read_header(stream_, buf_, parser, redirect(ec));
    if (!ec) {
      // curl and others wait for "100 Continue" before a large body.
      auto& h = parser.get();
      if (beast::iequals(h[http::field::expect], "100-continue")) {
        http::response<http::empty_body> cont{http::status::continue_, h.version()};
        co_await http::async_write(stream_, cont, redirect(ec));
      }
      if (!ec) co_await http::async_read(stream_, buf_, parser, redirect(ec));
    }
    stream_.expires_never();
    if (ec) {
      if (ec == beast::error::timeout) {
        srv_.counters.timeouts.fetch_add(1);  // the stream is closed: no answer
        break;
      }
      if (ec == http::error::end_of_stream || ec == net::error::eof ||
          ec == net::error::connection_reset || ec == net::error::operation_aborted)
        break;
      ApiError e;
      if (ec == http::error::body_limit) {
        // The header's field, not parser.content_length(): that asserts the
        // header is done, and a Content-Length past the limit fails it
        // before it is (Beast's debug builds abort there).
        const std::string len(parser.get()[http::field::content_length]);
        e = ApiError{413,
                     "the request body is " +
                         (len.empty() ? std::string("too large") : len + " bytes") +
                         "; this server takes at most " + std::to_string(lim.max_body) +
                         " bytes (--max-body)",
                     "invalid_request_error",
                     {},
                     "body_too_large"};
      } else if (ec == http::error::header_limit) {
        e = ApiError{431,
                     "the request's headers are larger than " + std::to_string(lim.max_header) +
                         " bytes (--max-header)",
                     "invalid_request_error",
                     {},
                     {}};
      } else {
        e = bad_request("malformed HTTP request: " + ec.message());
      }
      srv_.counters.count("other", e.status);
      co_await write(refusal(e), 11, false);
      co_await linger();
      break;
    }
    auto& req = parser.get();
    HttpRequest hr;
    hr.method = std::string(req.method_string());
    hr.target = target_path(req.target());
    hr.authorization = std::string(req[http::field::authorization]);
    hr.body = std::move(req.body());
    const unsigned version = req.version();
    const bool keep_asked = req.keep_alive();
    Reply reply = srv_.handler(hr);
    const std::string route = Routes::route_label(hr.target);
    if (auto* r = std::get_if<HttpResponse>(&reply)) {
      srv_.counters.count(route, r->status);
      co_await write(*r, version, keep_alive(keep_asked));
    } else {
      auto rs = std::get<std::shared_ptr<ResponseStream>>(std::move(reply));
      const bool ok = co_await serve_stream(rs, version, keep_alive(keep_asked));
      // A stream's status is 200 (SSE) or its final response's.
      bool done = false;
      HttpResponse last;
      (void)rs->take(&done, &last);
      srv_.counters.count(route, rs->sse() ? 200 : ok ? last.status : 499);
      if (!ok) break;
    }
    if (gone_ || !keep_alive(keep_asked)) break;
  }
  error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
  stream_.close();
}

net::awaitable<void> HttpServer::Impl::refuse(tcp::socket sock) {
  beast::tcp_stream s(std::move(sock));
  HttpResponse r =
      refusal(server_error(503,
                           "too many connections: " + std::to_string(lim.max_connections) +
                               " are open (--max-connections); try again later",
                           "unavailable_error"));
  http::response<http::string_body> res{http::status::service_unavailable, 11};
  res.set(http::field::content_type, r.content_type);
  res.set(http::field::retry_after, "1");
  res.keep_alive(false);
  res.body() = r.body;
  res.prepare_payload();
  error_code ec;
  s.expires_after(seconds(2));
  co_await http::async_write(s, res, redirect(ec));
  s.socket().shutdown(tcp::socket::shutdown_both, ec);
}

net::awaitable<void> HttpServer::Impl::accept_loop() {
  for (;;) {
    error_code ec;
    tcp::socket sock = co_await acceptor.async_accept(redirect(ec));
    if (ec) {
      if (!acceptor.is_open() || ec == net::error::operation_aborted) co_return;
      continue;  // a client that left before the accept, or out of descriptors for now
    }
    if (counters.connections.load() >= lim.max_connections) {
      counters.connections_refused.fetch_add(1);
      net::co_spawn(io, refuse(std::move(sock)), net::detached);
      continue;
    }
    auto c = std::make_shared<Connection>(*this, std::move(sock));
    conns.remove_if([](const std::weak_ptr<Connection>& w) { return w.expired(); });
    conns.push_back(c);
    net::co_spawn(io, c->run(c), net::detached);
  }
}

void HttpServer::Impl::wait_signal() {
  signals.async_wait([this](const error_code& ec, int sig) {
    if (ec) return;
    if (on_signal) on_signal(sig);
    wait_signal();  // a second signal too (the caller may stop harder)
  });
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Expected<std::unique_ptr<HttpServer>> HttpServer::start(const HttpLimits& lim, Handler handler,
                                                        HttpCounters& counters,
                                                        std::function<void(int)> on_signal) {
  auto impl = std::make_unique<Impl>(lim, std::move(handler), counters, std::move(on_signal));
  error_code ec;
  const auto addr = net::ip::make_address(lim.host, ec);
  if (ec)
    return make_error("--host '%s' is not an IP address (%s)", lim.host.c_str(),
                      ec.message().c_str());
  const tcp::endpoint ep(addr, lim.port);
  impl->acceptor.open(ep.protocol(), ec);
  if (!ec) impl->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(ep, ec);
  if (!ec) impl->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec)
    return make_error("cannot listen on %s:%u: %s", lim.host.c_str(), lim.port,
                      ec.message().c_str());
  impl->signals.add(SIGINT, ec);
  impl->signals.add(SIGTERM, ec);
  impl->wait_signal();
  impl->gate->io = &impl->io;
  Impl* p = impl.get();
  net::co_spawn(p->io, p->accept_loop(), net::detached);
  p->thread = std::thread([p] { p->io.run(); });
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

uint16_t HttpServer::port() const {
  error_code ec;
  return impl_->acceptor.local_endpoint(ec).port();
}

void HttpServer::drain() {
  Impl* p = impl_.get();
  p->gate->post([p] {
    p->draining = true;
    error_code ec;
    p->acceptor.close(ec);
    for (auto& w : p->conns)
      if (auto c = w.lock()) c->close_if_idle();
  });
}

bool HttpServer::wait_closed(int ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (impl_->counters.connections.load() > 0) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

void HttpServer::stop() {
  Impl* p = impl_.get();
  if (p->stopped) return;
  p->stopped = true;
  {
    std::lock_guard<std::mutex> lock(p->gate->mu);
    net::post(p->io, [p] {
      error_code ec;
      p->acceptor.close(ec);
      p->signals.cancel(ec);
      p->io.stop();
    });
    p->gate->io = nullptr;
  }
  if (p->thread.joinable()) p->thread.join();
}

HttpServer::~HttpServer() {
  stop();
}

}  // namespace ls
