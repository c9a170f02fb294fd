// Tool calls: see tool_calls.h.
// defines: tool_call_schema(), tool_call_schema_loose(), parse_tool_calls(),
// answer_tool_calls(), new_tool_call_id()
#include "tools/serve/tool_calls.h"

#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <utility>

namespace ls {

using json = nlohmann::json;

namespace {

json one_call(const ChatTool& t) {
  json params = json::parse(t.parameters, nullptr, /*allow_exceptions=*/false);
  if (params.is_discarded()) params = json::object();  // (the parser checked it)
  return {{"type", "object"},
          {"properties", {{"name", {{"const", t.name}}}, {"parameters", std::move(params)}}},
          {"required", {"name", "parameters"}},
          {"additionalProperties", false}};
}

// JSON's whitespace.
bool space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

size_t skip_space(std::string_view s, size_t at) {
  while (at < s.size() && space(s[at])) ++at;
  return at;
}

// One past the close of the JSON object or array that opens at s[at], or
// npos when it does not close: brackets counted outside strings, strings
// skipped with their escapes. nlohmann's parser tells no position (a
// non-strict parse stops after the first value but does not say where), so
// the pieces are cut here and each is then parsed by it: text this cuts
// wrongly is not JSON, and that parse refuses it. (model/json_grammar.h
// would tell where a value ends, but it holds whitespace to what JSON
// writers put, and an auto answer was written unconstrained.)
size_t json_value_end(std::string_view s, size_t at) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = at; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped byte (of \uXXXX, the 'u': the hex digits are no quote)
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// One parsed value as a call: {"name": one of tools, "parameters": object}.
std::optional<ParsedToolCall> read_call(const json& j, const std::vector<ChatTool>& tools) {
  if (!j.is_object()) return std::nullopt;
  auto name = j.find("name");
  if (name == j.end() || !name->is_string()) return std::nullopt;
  const std::string n = name->get<std::string>();
  bool known = false;
  for (const ChatTool& tool : tools) known = known || tool.name == n;
  if (!known) return std::nullopt;
  // Llama 3.1 writes "parameters"; other habits write "arguments", some as
  // a string of JSON (OpenAI's own shape).
  auto args = j.find("parameters");
  if (args == j.end()) args = j.find("arguments");
  if (args == j.end()) return std::nullopt;
  json obj = *args;
  if (obj.is_string()) {
    const std::string s = obj.get<std::string>();
    obj = json::parse(s, nullptr, /*allow_exceptions=*/false);
  }
  if (obj.is_discarded() || !obj.is_object()) return std::nullopt;
  // Keys other than the name and the arguments: not the call's shape.
  if (j.size() != 2) return std::nullopt;
  return ParsedToolCall{n, obj.dump(-1, ' ', false, json::error_handler_t::replace)};
}

}  // namespace

json tool_call_schema(const std::vector<ChatTool>& tools, const std::string* only) {
  json branches = json::array();
  for (const ChatTool& t : tools)
    if (!only || t.name == *only) branches.push_back(one_call(t));
  if (branches.size() == 1) return branches[0];
  return {{"anyOf", std::move(branches)}};
}

json tool_call_schema_loose(const std::vector<ChatTool>& tools) {
  json names = json::array();
  for (const ChatTool& t : tools) names.push_back(t.name);
  return {{"type", "object"},
          {"properties",
           {{"name", {{"enum", std::move(names)}}}, {"parameters", {{"type", "object"}}}}},
          {"required", {"name", "parameters"}},
          {"additionalProperties", false}};
}

std::vector<ParsedToolCall> parse_tool_calls(std::string_view text,
                                             const std::vector<ChatTool>& tools) {
  const std::string_view t = trim(text);
  if (t.empty() || !tool_calls_may_start(t.front())) return {};  // the cheap answer for prose
  std::vector<ParsedToolCall> calls;
  auto add = [&](const json& j) {
    auto c = read_call(j, tools);
    if (c) calls.push_back(std::move(*c));
    return c.has_value();
  };
  if (t.front() == '[') {  // a JSON array of calls (none: content)
    const json a = json::parse(t.begin(), t.end(), nullptr, /*allow_exceptions=*/false);
    if (a.is_discarded()) return {};
    for (const json& j : a)
      if (!add(j)) return {};
    return calls;
  }
  // Objects, each cut at its close and parsed, with whitespace and/or one
  // ';' between (vLLM's llama3_json reads "{...}; {...}").
  for (size_t at = 0;;) {
    const size_t end = json_value_end(t, at);
    if (end == std::string_view::npos) return {};
    const json j = json::parse(t.begin() + at, t.begin() + end, nullptr, false);
    if (j.is_discarded() || !add(j)) return {};
    if (end == t.size()) return calls;  // (t is trimmed: nothing after the last)
    size_t next = skip_space(t, end);
    if (next < t.size() && t[next] == ';') next = skip_space(t, next + 1);
    // No separator ("}{"), a ';' at the end, or anything but a call next: content.
    if (next == end || next == t.size() || t[next] != '{') return {};
    at = next;
  }
}

std::vector<ToolCallOut> answer_tool_calls(std::string_view text,
                                           const std::vector<ChatTool>& tools, bool parallel) {
  std::vector<ParsedToolCall> parsed = parse_tool_calls(text, tools);
  // parallel_tool_calls false: OpenAI then makes at most one call, so an
  // answer that holds several gives its first (the rest is dropped).
  if (!parallel && parsed.size() > 1) parsed.resize(1);
  std::vector<ToolCallOut> out;
  out.reserve(parsed.size());
  for (ParsedToolCall& p : parsed)
    out.push_back(ToolCallOut{new_tool_call_id(), std::move(p.name), std::move(p.arguments)});
  return out;
}

std::string new_tool_call_id() {
  // One generator for the process, seeded once: ids unique across
  // requests and restarts (2^96 of them; a collision is not a concern).
  static std::mutex mu;
  static std::mt19937_64 rng{std::random_device{}() ^
                             (static_cast<uint64_t>(std::random_device{}()) << 32)};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = "call_";
  std::lock_guard<std::mutex> lock(mu);
  for (int w = 0; w < 2; ++w) {
    const uint64_t r = rng();
    for (int i = 0; i < (w == 0 ? 16 : 8); ++i) id += kHex[(r >> (4 * i)) & 15];
  }
  return id;
}

}  // namespace ls
