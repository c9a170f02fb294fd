#include "tools/serve/responses.h"

#include <nlohmann/json.hpp>

namespace ls {
namespace {

using json = nlohmann::json;

// Generated text may hold bytes that are not UTF-8 (a byte-level token on
// its own): they become U+FFFD rather than an exception.
std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json head(const ResponseMeta& m, const char* object) {
  json j;
  j["id"] = m.id;
  j["object"] = object;
  j["created"] = m.created;
  j["model"] = m.model;
  return j;
}

json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

json reason(std::string_view r) {
  return r.empty() ? json(nullptr) : json(std::string(r));
}

}  // namespace

std::string completion_body(const ResponseMeta& m, std::string_view text,
                            std::string_view finish_reason, const Usage& u) {
  json j = head(m, "text_completion");
  j["choices"] = json::array({{{"text", std::string(text)},
                               {"index", 0},
                               {"logprobs", nullptr},
                               {"finish_reason", reason(finish_reason)}}});
  j["usage"] = usage_json(u);
  return dump(j);
}

std::string chat_body(const ResponseMeta& m, std::string_view text, std::string_view finish_reason,
                      const Usage& u) {
  json j = head(m, "chat.completion");
  j["choices"] = json::array({{{"index", 0},
                               {"message", {{"role", "assistant"}, {"content", std::string(text)}}},
                               {"logprobs", nullptr},
                               {"finish_reason", reason(finish_reason)}}});
  j["usage"] = usage_json(u);
  return dump(j);
}

std::string completion_chunk(const ResponseMeta& m, std::string_view text,
                             std::string_view finish_reason) {
  json j = head(m, "text_completion");
  j["choices"] = json::array({{{"text", std::string(text)},
                               {"index", 0},
                               {"logprobs", nullptr},
                               {"finish_reason", reason(finish_reason)}}});
  return dump(j);
}

std::string chat_role_chunk(const ResponseMeta& m) {
  json j = head(m, "chat.completion.chunk");
  j["choices"] = json::array({{{"index", 0},
                               {"delta", {{"role", "assistant"}, {"content", ""}}},
                               {"logprobs", nullptr},
                               {"finish_reason", nullptr}}});
  return dump(j);
}

std::string chat_chunk(const ResponseMeta& m, std::string_view text,
                       std::string_view finish_reason) {
  json j = head(m, "chat.completion.chunk");
  json delta = json::object();
  if (!text.empty() || finish_reason.empty()) delta["content"] = std::string(text);
  j["choices"] = json::array({{{"index", 0},
                               {"delta", delta},
                               {"logprobs", nullptr},
                               {"finish_reason", reason(finish_reason)}}});
  return dump(j);
}

std::string usage_chunk(const ResponseMeta& m, const Usage& u) {
  json j = head(m, m.chat ? "chat.completion.chunk" : "text_completion");
  j["choices"] = json::array();
  j["usage"] = usage_json(u);
  return dump(j);
}

std::string models_body(std::string_view id, int64_t created, uint32_t n_ctx, uint32_t n_vocab,
                        uint32_t n_parallel) {
  json m = {{"id", std::string(id)},
            {"object", "model"},
            {"created", created},
            {"owned_by", "layerstream"},
            {"meta", {{"n_ctx", n_ctx}, {"n_vocab", n_vocab}, {"n_parallel", n_parallel}}}};
  return dump({{"object", "list"}, {"data", json::array({m})}});
}

}  // namespace ls
