// Tool calls: see tool_calls.h.
// defines: tool_call_schema(), tool_call_schema_loose(), parse_tool_call(), new_tool_call_id()
#include "tools/serve/tool_calls.h"

#include <cstdint>
#include <mutex>
#include <random>

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

std::string_view trim(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
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

std::optional<ParsedToolCall> parse_tool_call(std::string_view text,
                                              const std::vector<ChatTool>& tools) {
  const std::string_view t = trim(text);
  if (t.empty() || t.front() != '{') return std::nullopt;  // the cheap answer for prose
  const json j = json::parse(t.begin(), t.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
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
