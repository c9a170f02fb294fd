// `layerstream serve` as a function: listen first (GET /health says 503
// while the model loads, as llama-server does), open the engine, serve
// until SIGINT or SIGTERM, then drain: stop accepting, let the requests in
// flight finish for up to --drain-timeout seconds, cancel the rest (their
// streams end with an error event and [DONE]), close, stop the engine, and
// exit 0. A second signal cancels at once.
// defines: ServeOptions, run_serve()
#pragma once

#include "actors/engine.h"
#include "tools/serve/http_server.h"
#include "tools/serve/routes.h"

namespace ls {

struct ServeOptions {
  EngineOptions engine;
  HttpLimits http;
  ServeSettings settings;    // model_id empty: the model file's name without .gguf
  uint32_t max_queue = 64;   // requests waiting beyond --parallel; more get 429
  int drain_timeout_s = 30;  // SIGTERM: how long requests in flight may still run
};

// Returns the process's exit code (0 after a drain; 1 on an error, said on stderr).
int run_serve(ServeOptions& o);

}  // namespace ls
