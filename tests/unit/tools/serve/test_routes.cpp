// The server's routes before the model is loaded (no engine needed): the
// health check says 503 as llama-server does, the page is served, the API
// key is asked for before anything else, unknown paths and methods are
// named, and a generation request waits for the model with a 503.
#include <doctest/doctest.h>

#include <string>
#include <variant>

#include "tools/serve/routes.h"

using namespace ls;

namespace {

HttpResponse answer(Routes& r, const char* method, const char* target, std::string auth = {},
                    std::string body = {}) {
  HttpRequest q;
  q.method = method;
  q.target = target;
  q.authorization = std::move(auth);
  q.body = std::move(body);
  Reply reply = r.handle(q);
  REQUIRE(std::holds_alternative<HttpResponse>(reply));
  return std::get<HttpResponse>(reply);
}

}  // namespace

TEST_CASE("serve routes: while the model loads, /health and the API say 503, the page is up") {
  HttpCounters http;
  ServeSettings s;
  s.model_id = "kjv";
  Routes r(s, http);
  HttpResponse h = answer(r, "GET", "/health");
  CHECK(h.status == 503);
  CHECK(h.body.find("Loading model") != std::string::npos);
  CHECK(answer(r, "POST", "/v1/completions", {}, R"({"prompt":"x"})").status == 503);
  CHECK(answer(r, "GET", "/v1/models").status == 503);
  HttpResponse page = answer(r, "GET", "/");
  CHECK(page.status == 200);
  CHECK(page.content_type.find("text/html") == 0);
  CHECK(page.body.find("/v1/chat/completions") != std::string::npos);
  CHECK(page.body.find("http://") == std::string::npos);  // nothing fetched from elsewhere
  CHECK(page.body.find("https://") == std::string::npos);
  HttpResponse m = answer(r, "GET", "/metrics");
  CHECK(m.status == 200);
  CHECK(m.body.find("layerstream_ready 0") != std::string::npos);
  CHECK(answer(r, "DELETE", "/health").status == 405);
  HttpResponse nf = answer(r, "GET", "/v2/nothing");
  CHECK(nf.status == 404);
  CHECK(nf.body.find("GET /v2/nothing") != std::string::npos);
  CHECK(Routes::route_label("/v1/completions") == "/v1/completions");
  CHECK(Routes::route_label("/etc/passwd") == "other");
}

TEST_CASE("serve routes: with --api-key, every API path wants the key; / and /health do not") {
  HttpCounters http;
  ServeSettings s;
  s.api_key = "sekrit";
  Routes r(s, http);
  HttpResponse no = answer(r, "GET", "/v1/models");
  CHECK(no.status == 401);
  CHECK(no.body.find("invalid_api_key") != std::string::npos);
  CHECK(no.body.find("Authorization: Bearer") != std::string::npos);
  CHECK(answer(r, "GET", "/v1/models", "Bearer wrong").status == 401);
  CHECK(answer(r, "GET", "/v1/models", "Bearer sekri").status == 401);
  CHECK(answer(r, "GET", "/v1/models", "sekrit").status == 401);
  CHECK(answer(r, "GET", "/metrics", "Bearer sekrit").status == 200);
  CHECK(answer(r, "GET", "/v1/models", "Bearer sekrit").status == 503);  // past the key: loading
  CHECK(answer(r, "GET", "/health").status == 503);
  CHECK(answer(r, "GET", "/").status == 200);
}
