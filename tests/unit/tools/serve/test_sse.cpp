// What the server writes: SSE frames as OpenAI streams them, response and
// chunk bodies in OpenAI's shapes, error bodies, the Prometheus text, and
// the hand-over of a response made on another thread.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "tools/serve/api_error.h"
#include "tools/serve/exchange.h"
#include "tools/serve/metrics.h"
#include "tools/serve/responses.h"
#include "tools/serve/sse.h"

using namespace ls;
using json = nlohmann::json;

TEST_CASE("serve sse: a frame is one data line and a blank line; [DONE] ends the stream") {
  CHECK(sse_frame(R"({"a":1})") == "data: {\"a\":1}\n\n");
  CHECK(kSseDone == "data: [DONE]\n\n");
  // A chunk's JSON holds no raw newline, whatever the text: a frame is never split.
  ResponseMeta m{true, "chatcmpl-1", "kjv", 1700000000};
  const std::string c = chat_chunk(m, "line one\nline two\r\n\n");
  CHECK(c.find('\n') == std::string::npos);
  const std::string f = sse_frame(c);
  CHECK(f.find("\n\n") == f.size() - 2);
  CHECK(json::parse(c)["choices"][0]["delta"]["content"] == "line one\nline two\r\n\n");
}

TEST_CASE("serve sse: chunk and body shapes are OpenAI's") {
  ResponseMeta chat{true, "chatcmpl-7", "kjv", 1700000000};
  json role = json::parse(chat_role_chunk(chat));
  CHECK(role["object"] == "chat.completion.chunk");
  CHECK(role["choices"][0]["delta"]["role"] == "assistant");
  CHECK(role["choices"][0]["finish_reason"].is_null());
  json last = json::parse(chat_chunk(chat, "", "stop"));
  CHECK(last["choices"][0]["delta"] == json::object());
  CHECK(last["choices"][0]["finish_reason"] == "stop");
  json usage = json::parse(usage_chunk(chat, Usage{5, 3, 2}));
  CHECK(usage["choices"].empty());
  CHECK(usage["usage"]["total_tokens"] == 8);
  // OpenAI's shape for the prompt tokens taken from a cache.
  CHECK(usage["usage"]["prompt_tokens_details"]["cached_tokens"] == 2);

  ResponseMeta cmpl{false, "cmpl-8", "kjv", 1700000000};
  json body = json::parse(completion_body(cmpl, " God", "length", Usage{4, 1}));
  CHECK(body["object"] == "text_completion");
  CHECK(body["choices"][0]["text"] == " God");
  CHECK(body["choices"][0]["finish_reason"] == "length");
  CHECK(body["usage"]["prompt_tokens"] == 4);
  json cb = json::parse(chat_body(chat, "Amen", "stop", Usage{2, 2}));
  CHECK(cb["object"] == "chat.completion");
  CHECK(cb["choices"][0]["message"]["content"] == "Amen");
  // Bytes that are not UTF-8 (a byte-level token alone) do not throw.
  CHECK(json::parse(completion_chunk(cmpl, "\xe2\x82"))["choices"][0]["text"] == "\xef\xbf\xbd");
  json models = json::parse(models_body("kjv", 1, 1024, 4096, 4));
  CHECK(models["data"][0]["id"] == "kjv");
  CHECK(models["data"][0]["meta"]["n_ctx"] == 1024);
}

TEST_CASE("serve sse: error bodies carry message, type, param and code") {
  json e = json::parse(api_error_body(
      ApiError{401, "invalid API key", "authentication_error", {}, "invalid_api_key"}));
  CHECK(e["error"]["message"] == "invalid API key");
  CHECK(e["error"]["type"] == "authentication_error");
  CHECK(e["error"]["param"].is_null());
  CHECK(e["error"]["code"] == "invalid_api_key");
  json b = json::parse(api_error_body(bad_request("'top_k' must be an integer", "top_k")));
  CHECK(b["error"]["param"] == "top_k");
  CHECK(b["error"]["code"].is_null());
}

TEST_CASE(
    "serve sse: a response stream hands frames over, wakes its reader, and tells the producer when "
    "abandoned") {
  auto rs = std::make_shared<ResponseStream>(true);
  int wakes = 0, cancels = 0;
  rs->push(sse_frame("1"));  // before the reader is there
  rs->set_waker([&] { ++wakes; });
  CHECK(wakes == 1);  // what came before is announced at once
  rs->push(sse_frame("2"));
  CHECK(wakes == 2);
  bool done = true;
  CHECK(rs->take(&done, nullptr) == "data: 1\n\ndata: 2\n\n");
  CHECK_FALSE(done);
  rs->on_abandon([&] { ++cancels; });
  rs->abandon();
  rs->abandon();
  CHECK(cancels == 1);
  rs->push(sse_frame("3"));  // after the reader left: nobody is woken
  CHECK(wakes == 2);

  auto whole = std::make_shared<ResponseStream>(false);
  HttpResponse r;
  r.status = 200;
  r.body = "{}";
  whole->finish(r);
  HttpResponse got;
  CHECK(whole->take(&done, &got).empty());
  CHECK(done);
  CHECK(got.body == "{}");
}

TEST_CASE("serve metrics: the Prometheus text names every series with HELP and TYPE") {
  HttpCounters http;
  http.count("/v1/completions", 200);
  http.count("/v1/completions", 200);
  http.count("other", 404);
  http.connections = 3;
  GenStats g;
  g.requests = 5;
  g.finished[static_cast<int>(FinishReason::Cancelled)] = 2;
  g.kv = KvUsage{7, 64, 5};
  g.prompt_tokens = 40;
  g.prompt_tokens_cached = 30;
  g.in_flight = 2;
  g.waiting = 1;
  const std::string t = metrics_text(&g, http);
  CHECK(t.find("# TYPE layerstream_requests_total counter\nlayerstream_requests_total 5\n") !=
        std::string::npos);
  CHECK(t.find("layerstream_requests_finished_total{reason=\"cancelled\"} 2\n") !=
        std::string::npos);
  CHECK(t.find("layerstream_kv_blocks_used 7\n") != std::string::npos);
  CHECK(t.find("layerstream_kv_blocks_total 64\n") != std::string::npos);
  CHECK(t.find("layerstream_kv_blocks_cached 5\n") != std::string::npos);
  CHECK(t.find("layerstream_prompt_tokens_cached_total 30\n") != std::string::npos);
  CHECK(t.find("layerstream_requests_waiting 1\n") != std::string::npos);
  CHECK(t.find("layerstream_tokens_per_second") != std::string::npos);
  CHECK(t.find("layerstream_http_requests_total{path=\"/v1/completions\",code=\"200\"} 2\n") !=
        std::string::npos);
  CHECK(t.find("layerstream_http_connections 3\n") != std::string::npos);
  // Loading: no generation series yet, ready 0.
  const std::string l = metrics_text(nullptr, http);
  CHECK(l.find("layerstream_ready 0\n") != std::string::npos);
  CHECK(l.find("layerstream_requests_total") == std::string::npos);
}
