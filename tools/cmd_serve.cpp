// layerstream serve: an OpenAI-compatible HTTP server (llama-server's flag
// names), the chat page at /, on the same engine as decode: every engine
// flag of decode applies, --parallel is the sequences decoded at once.
// The server itself is tools/serve/ (server.h first).
#include <memory>

#include "tools/commands.h"
#include "tools/engine_flags.h"
#include "tools/sampling_flags.h"
#include "tools/serve/server.h"

namespace ls {
namespace {

struct ServeArgs {
  ServeOptions o;
  EngineFlagText text;
  SamplingFlagText sampling_text;
  std::string max_body = "4MiB", max_header = "16KiB";
};

int run_serve_command(ServeArgs& a) {
  if (Status st = finish_engine_flags(a.o.engine, a.text); !st.ok())
    return fail(st.error().message);
  if (Status st = finish_sampling_flags(a.o.settings.sampling, a.sampling_text); !st.ok())
    return fail(st.error().message);
  auto body = parse_bytes(a.max_body);
  if (!body || *body == 0)
    return fail("--max-body must be a size such as 4MiB (got '" + a.max_body + "')");
  auto header = parse_bytes(a.max_header);
  if (!header || *header < 1024 || *header > (1u << 30))
    return fail("--max-header must be a size from 1KiB to 1GiB (got '" + a.max_header + "')");
  a.o.http.max_body = *body;
  a.o.http.max_header = static_cast<uint32_t>(*header);
  if (a.o.settings.n_predict == 0 || a.o.settings.n_predict < -1)
    return fail("-n must be -1 (until the context is full) or at least 1");
  return run_serve(a.o);
}

}  // namespace

Command add_serve(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "serve", "An OpenAI-compatible HTTP server (completions, chat, streaming) and a chat page");
  auto a = std::make_shared<ServeArgs>();
  ServeOptions& o = a->o;
  o.engine.n_seq = 4;  // a server runs several requests at once by default
  add_engine_flags(sub, o.engine, a->text);
  o.settings.sampling.temp = 0.8f;
  sub->add_option("--host", o.http.host, "Address to listen on")->capture_default_str();
  sub->add_option("--port", o.http.port, "Port to listen on (0: any free one, printed)")
      ->capture_default_str()
      // Checked before the conversion, whose own message is only "Could not convert".
      ->check(CLI::Range(0, 65535));
  sub->add_option("--api-key", o.settings.api_key,
                  "Require 'Authorization: Bearer KEY' (all but GET / and /health)");
  sub->add_option("-a,--alias", o.settings.model_id,
                  "The model's id in /v1/models and requests (default: the file name without "
                  ".gguf)");
  sub->add_option("-n,--n-predict", o.settings.n_predict,
                  "max_tokens of a request that gives none (-1: until the context is full)")
      ->capture_default_str();
  add_sampling_flags(sub, o.settings.sampling, a->sampling_text, "Default ");
  sub->add_option("--max-queue", o.max_queue,
                  "Requests that may wait beyond --parallel; more get 429")
      ->capture_default_str();
  sub->add_option("--max-body", a->max_body, "Largest request body (413 past it)")
      ->capture_default_str();
  sub->add_option("--max-header", a->max_header, "Largest request head (431 past it)")
      ->capture_default_str();
  sub->add_option("--max-connections", o.http.max_connections,
                  "Client connections open at once (503 past it)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 100000u));
  sub->add_option("--read-timeout", o.http.read_timeout_s,
                  "Seconds a whole request may take to arrive (slow clients are cut off)")
      ->capture_default_str()
      ->check(CLI::Range(1, 86400));
  sub->add_option("--idle-timeout", o.http.idle_timeout_s,
                  "Seconds a kept-alive connection may wait for its next request")
      ->capture_default_str()
      ->check(CLI::Range(1, 86400));
  sub->add_option("--write-timeout", o.http.write_timeout_s,
                  "Seconds one write to a client may take (a client that stops reading is "
                  "dropped and its generation cancelled)")
      ->capture_default_str()
      ->check(CLI::Range(1, 86400));
  sub->add_option("--drain-timeout", o.drain_timeout_s,
                  "On SIGTERM: seconds the requests in flight may still run before they are "
                  "cancelled")
      ->capture_default_str()
      ->check(CLI::Range(0, 86400));
  return [a] { return run_serve_command(*a); };
}

}  // namespace ls
