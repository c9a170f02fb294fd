// libFuzzer target for the server's request parser (tools/serve/api_request.h),
// the part of `layerstream serve` that reads untrusted bytes. Each input goes
// through all four parsers (completion, chat, tokenize, detokenize); none may
// crash, hang or leak, and what they return keeps the parser's promises: an
// error is a 400 with a message, whose body is valid JSON; a request's
// fields are in their documented ranges (stop strings counted, non-empty and
// bounded; sampling values in range; token ids not negative; roles known).
// The same bytes go through JSON mode's automaton, whose every complete
// document nlohmann must accept as an object, and through the reading of a
// model's answer as tool calls (tools/serve/tool_calls.h), whose every call
// names a given tool and carries an object.
// Run with scripts/fuzz.sh; seeds in tests/fuzz/corpus_api_request.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/json_grammar.h"
#include "tools/serve/api_request.h"
#include "tools/serve/tool_calls.h"

namespace {

void fail(const char* why) {
  std::fprintf(stderr, "fuzz_api_request: %s\n", why);
  __builtin_trap();
}

void check_error(const ls::ApiError& e) {
  if (e.status != 400) fail("an error that is not a 400");
  if (e.message.empty()) fail("an error without a message");
  if (!nlohmann::json::accept(ls::api_error_body(e))) fail("an error body that is not JSON");
}

void check_generate(const ls::Parsed<ls::GenerateRequest>& p) {
  if (auto* e = std::get_if<ls::ApiError>(&p)) return check_error(*e);
  const ls::GenerateRequest& r = std::get<ls::GenerateRequest>(p);
  if (r.stop.size() > ls::kMaxStop) fail("too many stop strings");
  for (const std::string& s : r.stop)
    if (s.empty() || s.size() > ls::kMaxStopBytes) fail("a stop string out of bounds");
  if (r.max_tokens == 0 || r.max_tokens < -1) fail("max_tokens out of range");
  if (!(r.sampling.temp >= 0 && r.sampling.temp <= 2)) fail("temperature out of range");
  if (!(r.sampling.top_p >= 0 && r.sampling.top_p <= 1)) fail("top_p out of range");
  if (!(r.sampling.min_p >= 0 && r.sampling.min_p <= 1)) fail("min_p out of range");
  if (r.sampling.top_k < 0 || r.sampling.repeat_last_n < -1) fail("an integer out of range");
  if (!(r.sampling.frequency_penalty >= -2 && r.sampling.frequency_penalty <= 2) ||
      !(r.sampling.presence_penalty >= -2 && r.sampling.presence_penalty <= 2))
    fail("a penalty out of range");
  if (r.sampling.logit_bias.size() > ls::kMaxLogitBias) fail("too many logit_bias entries");
  if (r.logprobs < -1 || r.logprobs > ls::kMaxTopLogprobs) fail("logprobs out of range");
  for (const auto& [id, bias] : r.sampling.logit_bias)
    if (id < 0 || !(bias >= -100 && bias <= 100)) fail("a logit_bias entry out of range");
  for (int32_t id : r.prompt_ids)
    if (id < 0) fail("a negative token id");
  if (r.chat) {
    if (r.messages.empty()) fail("a chat without messages");
    for (const ls::ChatMessage& m : r.messages) {
      if (m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool")
        fail("an unknown role");
      if (!m.tool_calls.empty() && m.role != "assistant") fail("tool calls outside an assistant");
      for (const ls::ChatToolCall& c : m.tool_calls)
        if (!nlohmann::json::accept(c.arguments)) fail("tool call arguments that are not JSON");
    }
    // Tools: bounded, named as OpenAI names them, each its own; a forced
    // call has its schema, a named one names a given tool.
    if (r.tools.size() > ls::kMaxTools) fail("too many tools");
    for (size_t i = 0; i < r.tools.size(); ++i) {
      const std::string& n = r.tools[i].name;
      if (n.empty() || n.size() > 64 ||
          n.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") !=
              std::string::npos)
        fail("a tool name out of bounds");
      for (size_t j = 0; j < i; ++j)
        if (r.tools[j].name == n) fail("two tools of one name");
      if (!nlohmann::json::accept(r.tools[i].parameters)) fail("tool parameters that are not JSON");
    }
    const bool forced =
        r.tool_choice == ls::ToolChoice::Required || r.tool_choice == ls::ToolChoice::Named;
    if (forced && (!r.json_schema || r.tools.empty()))
      fail("a forced tool call without its schema");
    if (r.tool_choice != ls::ToolChoice::None && r.tools.empty())
      fail("a tool choice without tools");
    if (r.tool_choice == ls::ToolChoice::Named) {
      bool given = false;
      for (const ls::ChatTool& t : r.tools) given = given || t.name == r.tool_name;
      if (!given) fail("a named tool choice that names no tool");
    }
  } else if (r.prompt.empty() && r.prompt_ids.empty()) {
    fail("a completion without a prompt");
  }
}

}  // namespace

// JSON mode's automaton (model/json_grammar.h) on the same bytes: what it
// reads to the end of a document, a strict parser must accept as an object
// (it may refuse more: its limits).
void check_json_grammar(std::string_view body) {
  ls::JsonGrammar g(true);
  if (!g.feed(body) || !g.complete()) return;
  if (!nlohmann::json::accept(body)) fail("the JSON automaton accepted what nlohmann refuses");
  if (!nlohmann::json::parse(body).is_object()) fail("the JSON automaton accepted a non-object");
}

// The bytes as a model's answer with two tools: no calls (content), or
// calls that each name one of them and carry an object.
void check_tool_calls(std::string_view answer) {
  static const std::vector<ls::ChatTool> tools = {{"now", "", "{}"}, {"get_weather", "", "{}"}};
  for (const ls::ParsedToolCall& c : ls::parse_tool_calls(answer, tools)) {
    if (c.name != "now" && c.name != "get_weather") fail("a tool call of no given tool");
    if (!nlohmann::json::accept(c.arguments) || !nlohmann::json::parse(c.arguments).is_object())
      fail("tool call arguments that are no JSON object");
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  check_json_grammar(body);
  check_tool_calls(body);
  const ls::SamplerParams defaults;
  check_generate(ls::parse_completion_request(body, defaults));
  check_generate(ls::parse_chat_request(body, defaults));
  auto t = ls::parse_tokenize_request(body);
  if (auto* e = std::get_if<ls::ApiError>(&t)) check_error(*e);
  auto d = ls::parse_detokenize_request(body);
  if (auto* e = std::get_if<ls::ApiError>(&d)) {
    check_error(*e);
  } else {
    for (int32_t id : std::get<ls::DetokenizeRequest>(d).tokens)
      if (id < 0) fail("a negative token id to detokenize");
  }
  return 0;
}
