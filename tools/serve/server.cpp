#include "tools/serve/server.h"

#include <csignal>
#include <condition_variable>
#include <cstdio>
#include <atomic>
#include <chrono>
#include <mutex>

#include "actors/generator.h"
#include "model/default_model.h"

namespace ls {
namespace {

// "models/llama-8b.q4_k_m.gguf" -> "llama-8b.q4_k_m".
std::string model_id_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.size() > 5 && base.compare(base.size() - 5, 5, ".gguf") == 0)
    base.resize(base.size() - 5);
  return base;
}

}  // namespace

int run_serve(ServeOptions& o) {
  if (o.engine.model.empty()) {
    auto p = default_model_path();
    if (!p) {
      std::fprintf(stderr, "error: %s\n", p.error().message.c_str());
      return 1;
    }
    o.engine.model = *p;
  }
  if (o.settings.model_id.empty()) o.settings.model_id = model_id_of(o.engine.model);
  o.settings.model_file = o.engine.model;
  // The server drains on a signal before it stops the run.
  o.engine.handle_signals = false;

  HttpCounters counters;
  Routes routes(o.settings, counters);
  std::mutex mu;
  std::condition_variable cv;
  int signals = 0, last_signal = 0;
  std::atomic<Generator*> live_gen{nullptr};
  auto http = HttpServer::start(
      o.http, [&routes](const HttpRequest& r) { return routes.handle(r); }, counters,
      [&](int sig) {
        int n;
        {
          std::lock_guard<std::mutex> lock(mu);
          n = ++signals;
          if (n == 1) last_signal = sig;
        }
        cv.notify_all();
        // A second signal: do not wait for the requests in flight.
        if (n > 1)
          if (Generator* g = live_gen.load()) g->cancel_all();
      });
  if (!http) {
    std::fprintf(stderr, "error: %s\n", http.error().message.c_str());
    return 1;
  }
  HttpServer& server = **http;
  std::fprintf(stderr, "layerstream: listening on http://%s:%u (loading %s)\n", o.http.host.c_str(),
               server.port(), o.engine.model.c_str());

  auto er = Engine::open(o.engine);
  if (!er) {
    std::fprintf(stderr, "error: %s\n", er.error().message.c_str());
    server.stop();
    return 1;
  }
  Engine& engine = **er;
  const uint32_t n_vocab = engine.model().config().n_vocab;
  if (const int64_t id = logit_bias_outside(o.settings.sampling, static_cast<int32_t>(n_vocab));
      id >= 0) {
    std::fprintf(stderr, "error: --logit-bias: token id %lld is outside the vocabulary (0..%u)\n",
                 static_cast<long long>(id), n_vocab - 1);
    server.stop();
    return 1;
  }
  int code = 0;
  {
    Generator gen(engine, Generator::Options{o.max_queue});
    live_gen.store(&gen);
    routes.set_ready(&gen);
    std::fprintf(stderr,
                 "layerstream: ready: model '%s', %u sequences at once (--parallel), context %u, "
                 "up to %u more queued; load %.2f s\n",
                 o.settings.model_id.c_str(), engine.pipeline().n_seq(), engine.pipeline().n_ctx(),
                 o.max_queue, engine.load_seconds());
    {
      std::unique_lock<std::mutex> lock(mu);
      while (signals == 0 && !engine.control().stopped())
        cv.wait_for(lock, std::chrono::milliseconds(200));
    }
    if (engine.control().stopped() && signals == 0) {
      const auto err = engine.control().error();
      std::fprintf(stderr, "error: the engine stopped: %s\n",
                   err ? err->message.c_str() : "(no reason given)");
      code = 1;
    }
    // Drain: nothing new is accepted; what runs may finish, within the bound.
    routes.set_draining();
    server.drain();
    const uint32_t n = gen.in_flight();
    std::fprintf(stderr, "layerstream: %s: draining %u request%s (at most %d s)\n",
                 last_signal == SIGINT    ? "SIGINT"
                 : last_signal == SIGTERM ? "SIGTERM"
                                          : "stop",
                 n, n == 1 ? "" : "s", o.drain_timeout_s);
    if (!gen.wait_idle(o.drain_timeout_s * 1000)) {
      std::fprintf(stderr, "layerstream: cancelling %u request%s still running\n", gen.in_flight(),
                   gen.in_flight() == 1 ? "" : "s");
      gen.cancel_all();
      (void)gen.wait_idle(5000);
    }
    // Their last frames go out before the connections close.
    (void)server.wait_closed(2000);
    server.stop();
    live_gen.store(nullptr);
  }
  Status fin = engine.finish();
  if (!fin.ok() && code == 0) {
    std::fprintf(stderr, "error: %s\n", fin.error().message.c_str());
    code = 1;
  }
  if (code == 0) std::fprintf(stderr, "layerstream: drained; exiting\n");
  return code;
}

}  // namespace ls
