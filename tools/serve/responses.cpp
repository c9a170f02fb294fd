#include "tools/serve/responses.h"

#include <cmath>
#include <limits>

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

// -inf (a token the model gave no chance) is not JSON: OpenAI's clients get
// the most negative float instead.
json logprob_json(float v) {
  return std::isfinite(v) ? json(v) : json(-std::numeric_limits<float>::max());
}

json bytes_json(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(int(c));
  return b;
}

json chat_logprobs(const LogprobsPiece& lp) {
  if (!lp.entries) return nullptr;
  json content = json::array();
  for (const LogprobEntry& e : *lp.entries) {
    json top = json::array();
    for (const auto& [t, v] : e.top)
      top.push_back({{"token", t}, {"logprob", logprob_json(v)}, {"bytes", bytes_json(t)}});
    content.push_back({{"token", e.token},
                       {"logprob", logprob_json(e.logprob)},
                       {"bytes", bytes_json(e.token)},
                       {"top_logprobs", top}});
  }
  return {{"content", content}};
}

json completion_logprobs(const LogprobsPiece& lp) {
  if (!lp.entries) return nullptr;
  json tokens = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
  size_t at = lp.offset;
  for (const LogprobEntry& e : *lp.entries) {
    tokens.push_back(e.token);
    lps.push_back(logprob_json(e.logprob));
    json top = json::object();
    for (const auto& [t, v] : e.top)
      if (!top.contains(t)) top[t] = logprob_json(v);  // two tokens of one text: the likelier
    tops.push_back(top);
    offsets.push_back(at);
    at += e.token.size();
  }
  return {{"tokens", tokens},
          {"token_logprobs", lps},
          {"top_logprobs", tops},
          {"text_offset", offsets}};
}

// A whole answer's message: its text, or the tool calls it makes.
json chat_message(const ChoiceOut& c) {
  if (c.tool_calls.empty()) return {{"role", "assistant"}, {"content", c.text}};
  json calls = json::array();
  for (const ToolCallOut& t : c.tool_calls)
    calls.push_back({{"id", t.id},
                     {"type", "function"},
                     {"function", {{"name", t.name}, {"arguments", t.arguments}}}});
  return {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", std::move(calls)}};
}

json tool_delta_chunk(const ResponseMeta& m, json call) {
  json j = head(m, "chat.completion.chunk");
  j["choices"] = json::array({{{"index", m.index},
                               {"delta", {{"tool_calls", json::array({std::move(call)})}}},
                               {"logprobs", nullptr},
                               {"finish_reason", nullptr}}});
  return j;
}

}  // namespace

std::string completion_body(const ResponseMeta& m, const std::vector<ChoiceOut>& choices,
                            const Usage& u) {
  json j = head(m, "text_completion");
  j["choices"] = json::array();
  for (size_t i = 0; i < choices.size(); ++i)
    j["choices"].push_back({{"text", choices[i].text},
                            {"index", i},
                            {"logprobs", completion_logprobs(choices[i].lp)},
                            {"finish_reason", reason(choices[i].finish_reason)}});
  j["usage"] = usage_json(u);
  return dump(j);
}

std::string chat_body(const ResponseMeta& m, const std::vector<ChoiceOut>& choices,
                      const Usage& u) {
  json j = head(m, "chat.completion");
  j["choices"] = json::array();
  for (size_t i = 0; i < choices.size(); ++i)
    j["choices"].push_back({{"index", i},
                            {"message", chat_message(choices[i])},
                            {"logprobs", chat_logprobs(choices[i].lp)},
                            {"finish_reason", reason(choices[i].finish_reason)}});
  j["usage"] = usage_json(u);
  return dump(j);
}

std::string completion_chunk(const ResponseMeta& m, std::string_view text,
                             std::string_view finish_reason, const LogprobsPiece& lp) {
  json j = head(m, "text_completion");
  j["choices"] = json::array({{{"text", std::string(text)},
                               {"index", m.index},
                               {"logprobs", completion_logprobs(lp)},
                               {"finish_reason", reason(finish_reason)}}});
  return dump(j);
}

std::string chat_role_chunk(const ResponseMeta& m) {
  json j = head(m, "chat.completion.chunk");
  j["choices"] = json::array({{{"index", m.index},
                               {"delta", {{"role", "assistant"}, {"content", ""}}},
                               {"logprobs", nullptr},
                               {"finish_reason", nullptr}}});
  return dump(j);
}

std::string chat_chunk(const ResponseMeta& m, std::string_view text, std::string_view finish_reason,
                       const LogprobsPiece& lp) {
  json j = head(m, "chat.completion.chunk");
  json delta = json::object();
  if (!text.empty() || finish_reason.empty()) delta["content"] = std::string(text);
  j["choices"] = json::array({{{"index", m.index},
                               {"delta", delta},
                               {"logprobs", chat_logprobs(lp)},
                               {"finish_reason", reason(finish_reason)}}});
  return dump(j);
}

std::vector<std::string> chat_tool_call_chunks(const ResponseMeta& m,
                                               const std::vector<ToolCallOut>& calls) {
  std::vector<std::string> chunks;
  for (size_t i = 0; i < calls.size(); ++i) {
    const ToolCallOut& call = calls[i];
    chunks.push_back(
        dump(tool_delta_chunk(m, {{"index", i},
                                  {"id", call.id},
                                  {"type", "function"},
                                  {"function", {{"name", call.name}, {"arguments", ""}}}})));
    chunks.push_back(
        dump(tool_delta_chunk(m, {{"index", i}, {"function", {{"arguments", call.arguments}}}})));
  }
  return chunks;
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
