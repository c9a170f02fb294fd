// Tool calls in and out of the model's text (Llama 3.1's JSON convention,
// model/chat.h): the schema a forced call keeps to, and the reading of an
// answer as a call.
//
// A forced call (tool_choice "required" or a named function) is decoded
// under tool_call_schema(): one object {"name": NAME, "parameters": ARGS}
// with ARGS the tool's parameters schema; for several tools an anyOf of one
// such object per tool, so the arguments keep to the schema of the tool
// named. The schema automaton follows at most 16 branches at once
// (model/json_schema_nfa.h): past 16 tools, tool_call_schema_loose() keeps
// the name to the tools' names and the arguments to an object. A forced
// answer is one call: OpenAI's "required" asks for at least one, and one
// is valid. An "auto" answer is read after the fact by parse_tool_calls():
// calls if the whole answer is one such object, several of them (one a
// line, as model/chat.cpp renders an assistant turn of several calls, or
// with a ';' between, or a JSON array of them), else plain content.
// defines: ParsedToolCall, tool_call_schema(), tool_call_schema_loose(),
// tool_calls_may_start(), parse_tool_calls(), answer_tool_calls(), new_tool_call_id()
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/chat.h"
#include "tools/serve/responses.h"

namespace ls {

struct ParsedToolCall {
  std::string name;
  std::string arguments;  // the parameters object as compact JSON text
};

// The schema of one call of `tools` (each tool's parameters already checked
// to be a JSON schema's text), or of the tool named `only` when given.
nlohmann::json tool_call_schema(const std::vector<ChatTool>& tools, const std::string* only);
// {"name": one of the tools' names, "parameters": any object}.
nlohmann::json tool_call_schema_loose(const std::vector<ChatTool>& tools);

// Whether an answer whose first byte past whitespace is `c` may be tool
// calls ('{' or '['): a stream holds such an answer back until its end.
inline bool tool_calls_may_start(char c) {
  return c == '{' || c == '[';
}

// The answer as tool calls, in its order. Trimmed, it is entirely
//   one call                    {"name": N, "parameters": {...}}
//   several calls               {...}\n{...}   {...}; {...}   (whitespace and/or one ';' between)
//   a JSON array of calls       [{...}, {...}]
// with each call exactly the keys "name" (one of `tools`) and "parameters"
// ("arguments" accepted for it, as an object or as a string holding one).
// Empty: plain content, as is an answer with any piece that is no call
// (never half a list) and an empty array.
std::vector<ParsedToolCall> parse_tool_calls(std::string_view text,
                                             const std::vector<ChatTool>& tools);

// The calls an answer makes, each with its own new_tool_call_id(): those
// of parse_tool_calls(), or only its first when `parallel` is false (the
// request's parallel_tool_calls). Empty: plain content.
std::vector<ToolCallOut> answer_tool_calls(std::string_view text,
                                           const std::vector<ChatTool>& tools, bool parallel);

// "call_" and 24 random hex digits: unique per call, as OpenAI's ids are.
std::string new_tool_call_id();

}  // namespace ls
