#include "tools/serve/metrics.h"

#include <cstdio>

namespace ls {
namespace {

// One metric: its HELP and TYPE lines, then the samples appended by the caller.
void head(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

void sample(std::string& out, const char* name, double v, const std::string& labels = {}) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  out += name;
  if (!labels.empty()) out += "{" + labels + "}";
  out += ' ';
  out += buf;
  out += '\n';
}

void one(std::string& out, const char* name, const char* type, const char* help, double v) {
  head(out, name, type, help);
  sample(out, name, v);
}

}  // namespace

std::string metrics_text(const GenStats* g, const HttpCounters& http) {
  std::string out;
  one(out, "layerstream_ready", "gauge", "1 once the model is loaded.", g ? 1 : 0);
  if (g) {
    one(out, "layerstream_requests_total", "counter", "Generation requests started.",
        static_cast<double>(g->requests));
    head(out, "layerstream_requests_finished_total", "counter",
         "Generation requests ended, by reason (cancelled: the client left, or the drain).");
    for (int r = 0; r < 4; ++r)
      sample(out, "layerstream_requests_finished_total", static_cast<double>(g->finished[r]),
             std::string("reason=\"") + finish_reason_name(static_cast<FinishReason>(r)) + "\"");
    one(out, "layerstream_requests_refused_busy_total", "counter",
        "Requests refused with 429: the queue was full.", static_cast<double>(g->refused_busy));
    one(out, "layerstream_prompt_tokens_total", "counter", "Prompt tokens of started requests.",
        static_cast<double>(g->prompt_tokens));
    one(out, "layerstream_prompt_tokens_cached_total", "counter",
        "Of those, tokens taken from a prompt cache instead of computed.",
        static_cast<double>(g->prompt_tokens_cached));
    one(out, "layerstream_tokens_generated_total", "counter", "Tokens sampled.",
        static_cast<double>(g->completion_tokens));
    one(out, "layerstream_tokens_per_second", "gauge",
        "Tokens sampled per second, over the last 7 whole seconds.", g->tokens_per_second);
    one(out, "layerstream_requests_in_flight", "gauge",
        "Generation requests started and not ended (queued, prefilling or decoding).",
        g->in_flight);
    one(out, "layerstream_requests_waiting", "gauge",
        "Requests in flight without a token yet: the queue (and prompts being read).", g->waiting);
    one(out, "layerstream_kv_blocks_used", "gauge",
        "Paged key/value cache blocks held by sequences.", g->kv.used);
    one(out, "layerstream_kv_blocks_cached", "gauge",
        "Paged key/value cache blocks held by finished requests' prompt caches (given up when "
        "a sequence needs them).",
        g->kv.cached);
    one(out, "layerstream_kv_blocks_total", "gauge", "Paged key/value cache blocks in the pool.",
        g->kv.total);
    one(out, "layerstream_parallel", "gauge", "Sequences decoded at once at most (--parallel).",
        g->n_seq);
    one(out, "layerstream_context_tokens", "gauge", "Positions per sequence (-c).", g->n_ctx);
  }
  head(out, "layerstream_http_requests_total", "counter",
       "HTTP requests answered, by route and status.");
  for (const auto& [key, n] : http.snapshot())
    sample(out, "layerstream_http_requests_total", static_cast<double>(n),
           "path=\"" + key.first + "\",code=\"" + std::to_string(key.second) + "\"");
  one(out, "layerstream_http_connections", "gauge", "Client connections open.",
      http.connections.load());
  one(out, "layerstream_http_connections_refused_total", "counter",
      "Connections refused past --max-connections.",
      static_cast<double>(http.connections_refused.load()));
  one(out, "layerstream_http_timeouts_total", "counter",
      "Connections closed by the read, idle or write timeout.",
      static_cast<double>(http.timeouts.load()));
  one(out, "layerstream_http_disconnects_total", "counter",
      "Clients that left before their response ended.",
      static_cast<double>(http.disconnects.load()));
  return out;
}

}  // namespace ls
