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
// the name to the tools' names and the arguments to an object. An "auto" answer is read after the
// fact by parse_tool_call(): a call if the whole answer is such an object, else plain content.
// defines: ParsedToolCall, tool_call_schema(), tool_call_schema_loose(), parse_tool_call(),
// new_tool_call_id()
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/chat.h"

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

// The answer as a tool call: trimmed, one JSON object {"name": one of
// tools, "parameters": object} ("arguments" accepted for "parameters",
// as an object or as a string holding one). nullopt: plain content.
std::optional<ParsedToolCall> parse_tool_call(std::string_view text,
                                              const std::vector<ChatTool>& tools);

// "call_" and 24 random hex digits: unique per call, as OpenAI's ids are.
std::string new_tool_call_id();

}  // namespace ls
