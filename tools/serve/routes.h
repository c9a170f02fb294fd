// The server's endpoints, on the serving core (actors/generator.h): each
// request in, an HttpResponse or a ResponseStream out. Knows the OpenAI API
// and the model, nothing of sockets (the HTTP layer is
// tools/serve/http_server.cpp).
//
//   GET  /                      the chat page (no key needed)
//   GET  /health                200 {"status":"ok"}; 503 while the model loads (no key needed)
//   GET  /v1/models             the served model
//   GET  /metrics               Prometheus text
//   POST /v1/completions        prompt -> text; stream: SSE
//   POST /v1/chat/completions   messages -> reply; stream: SSE
//   POST /tokenize, /detokenize text <-> token ids (llama-server's shapes)
// (/models, /completions and /chat/completions too, as llama-server has.)
// defines: ServeSettings, Routes
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "actors/generator.h"
#include "model/chat.h"
#include "model/sampler.h"
#include "tools/serve/exchange.h"
#include "tools/serve/metrics.h"

namespace ls {

struct ServeSettings {
  std::string model_id;    // what /v1/models lists and requests may name (--alias)
  std::string model_file;  // -m as given: requests may name it too
  std::string api_key;     // empty: none needed
  SamplerParams sampling;  // the defaults a request overrides (--temp, --top-k, ...)
  int32_t n_predict = -1;  // max_tokens when a request gives none (-1: until the context is full)
};

class Routes {
 public:
  Routes(ServeSettings s, HttpCounters& http);
  // The model is loaded: generation requests are served from now on.
  void set_ready(Generator* g);
  // SIGTERM: new generation requests get 503; ones cancelled now end with
  // an error saying the server is shutting down.
  void set_draining() { draining_.store(true); }
  Reply handle(const HttpRequest& r);
  // The route a request counts under in /metrics (known paths, else "other").
  static std::string route_label(const std::string& target);

 private:
  Reply generate(const HttpRequest& r, bool chat);
  HttpResponse tokenize(const HttpRequest& r);
  HttpResponse detokenize(const HttpRequest& r);
  bool authorized(const HttpRequest& r) const;

  const ServeSettings s_;
  HttpCounters& http_;
  std::atomic<Generator*> gen_{nullptr};
  std::atomic<bool> draining_{false};
  std::atomic<uint64_t> next_id_{1};
  ChatFormat chat_format_ = ChatFormat::Llama3;  // set before gen_ (set_ready)
  int64_t created_ = 0;                          // when the model was ready (Unix seconds)
};

}  // namespace ls
