// Tool calls (tools/serve/tool_calls.h): the schema a forced call is decoded
// under (checked with the automaton the sampler uses), the reading of an
// "auto" answer as a call or as content, the call ids, and the response
// shapes of calls (tools/serve/responses.h), whole and streamed.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/json_schema.h"
#include "model/json_schema_nfa.h"
#include "tools/serve/responses.h"
#include "tools/serve/tool_calls.h"

using namespace ls;
using json = nlohmann::json;

namespace {

const std::vector<ChatTool> kTools = {
    {"get_weather", "",
     R"({"type":"object","properties":{"city":{"type":"string","maxLength":8},"days":{"type":"integer","minimum":1}},"required":["city"],"additionalProperties":false})"},
    {"now", "", R"({"type":"object","properties":{},"additionalProperties":false})"}};

// Whether the whole text is a document of the schema.
bool keeps_to(const json& schema, const std::string& text) {
  auto c = compile_json_schema(schema);
  REQUIRE(c);
  JsonSchemaNfa g(**c);  // the sampler's automaton (anyOf branches followed as a set)
  return g.feed(text) && g.complete();
}

}  // namespace

TEST_CASE("tool calls: the forced call's schema holds the name and that tool's arguments") {
  const json any = tool_call_schema(kTools, nullptr);
  REQUIRE(any.contains("anyOf"));
  CHECK(any["anyOf"].size() == 2);
  CHECK(keeps_to(any, R"({"name": "get_weather", "parameters": {"city": "Paris"}})"));
  CHECK(keeps_to(any, R"({"parameters": {"city": "Rome", "days": 3}, "name": "get_weather"})"));
  CHECK(keeps_to(any, R"({"name":"now","parameters":{}})"));
  // Another tool's arguments, an unknown name, a missing key, an extra key.
  CHECK_FALSE(keeps_to(any, R"({"name": "now", "parameters": {"city": "Paris"}})"));
  CHECK_FALSE(keeps_to(any, R"({"name": "get_weathe", "parameters": {"city": "Paris"}})"));
  CHECK_FALSE(keeps_to(any, R"({"name": "get_weather", "parameters": {}})"));
  CHECK_FALSE(keeps_to(any, R"({"name": "get_weather"})"));
  CHECK_FALSE(keeps_to(any, R"({"name": "now", "parameters": {}, "x": 1})"));
  CHECK_FALSE(keeps_to(any, R"({"name": "get_weather", "parameters": {"city": "Amsterdam!"}})"));
  CHECK_FALSE(keeps_to(any, R"({"name": "get_weather", "parameters": {"city": "a", "days": 0}})"));

  // A named tool: that one only, no anyOf.
  const std::string now = "now";
  const json one = tool_call_schema(kTools, &now);
  CHECK_FALSE(one.contains("anyOf"));
  CHECK(one["properties"]["name"] == json({{"const", "now"}}));
  CHECK(keeps_to(one, R"({"name": "now", "parameters": {}})"));
  CHECK_FALSE(keeps_to(one, R"({"name": "get_weather", "parameters": {"city": "Paris"}})"));
}

TEST_CASE("tool calls: an answer is a call only when it is one object of a given tool") {
  auto call = parse_tool_call(
      " \n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}\n", kTools);
  REQUIRE(call);
  CHECK(call->name == "get_weather");
  CHECK(call->arguments == R"({"city":"Paris"})");
  // "arguments" for "parameters", as an object or a string of JSON.
  call = parse_tool_call(R"({"name":"now","arguments":{}})", kTools);
  REQUIRE(call);
  CHECK(call->arguments == "{}");
  call = parse_tool_call(R"({"name":"now","arguments":"{\"a\": [1]}"})", kTools);
  REQUIRE(call);
  CHECK(call->arguments == R"({"a":[1]})");
  // Plain content: prose, prose around JSON, an unknown tool, arguments
  // that are not an object, a missing name, keys beyond the call's, two
  // objects, a cut document, an array.
  for (const char* text :
       {"In the beginning God created the heaven and the earth.",
        R"(Sure: {"name":"now","parameters":{}})", R"({"name":"later","parameters":{}})",
        R"({"name":"now","parameters":[1]})", R"({"name":"now","arguments":"not json"})",
        R"({"parameters":{}})", R"({"name":"now","parameters":{},"why":"x"})",
        R"({"name":"now","parameters":{}} {"name":"now","parameters":{}})",
        R"({"name":"now","parameters":{)", R"([{"name":"now","parameters":{}}])", "", "{}",
        R"({"name":7,"parameters":{}})"}) {
    CAPTURE(text);
    CHECK_FALSE(parse_tool_call(text, kTools));
  }
  CHECK_FALSE(parse_tool_call(R"({"name":"now","parameters":{}})", {}));
}

TEST_CASE("tool calls: ids are call_ and 24 hex digits, each its own") {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = new_tool_call_id();
    REQUIRE(id.size() == 29);
    CHECK(id.rfind("call_", 0) == 0);
    CHECK(id.find_first_not_of("0123456789abcdef", 5) == std::string::npos);
    seen.insert(id);
  }
  CHECK(seen.size() == 1000);
}

TEST_CASE("tool calls: a call's message and stream chunks have OpenAI's shapes") {
  ResponseMeta m;
  m.chat = true;
  m.id = "chatcmpl-1";
  m.model = "x";
  const ToolCallOut call{"call_abc", "get_weather", R"({"city":"Paris"})"};
  const json whole =
      json::parse(chat_body(m, {ChoiceOut{"ignored", "tool_calls", {}, {call}}}, {}));
  const json& msg = whole["choices"][0]["message"];
  CHECK(msg["role"] == "assistant");
  CHECK(msg["content"].is_null());
  REQUIRE(msg["tool_calls"].size() == 1);
  CHECK(msg["tool_calls"][0] == json::parse(R"({"id":"call_abc","type":"function",
        "function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}})"));
  CHECK(whole["choices"][0]["finish_reason"] == "tool_calls");
  // Without a call: the text as content, as before.
  const json text = json::parse(chat_body(m, {ChoiceOut{"Hi", "stop", {}}}, {}));
  CHECK(text["choices"][0]["message"] == json({{"role", "assistant"}, {"content", "Hi"}}));

  const std::vector<std::string> chunks = chat_tool_call_chunks(m, {call});
  REQUIRE(chunks.size() == 2);
  const json a = json::parse(chunks[0]), b = json::parse(chunks[1]);
  CHECK(a["object"] == "chat.completion.chunk");
  CHECK(a["choices"][0]["delta"]["tool_calls"][0] ==
        json::parse(R"({"index":0,"id":"call_abc","type":"function",
                       "function":{"name":"get_weather","arguments":""}})"));
  CHECK(a["choices"][0]["finish_reason"].is_null());
  CHECK(b["choices"][0]["delta"]["tool_calls"][0] ==
        json::parse(R"({"index":0,"function":{"arguments":"{\"city\":\"Paris\"}"}})"));
  CHECK(chat_tool_call_chunks(m, {}).empty());
}

TEST_CASE("tool calls: two calls' message lists both; streamed, each call has its index") {
  ResponseMeta m;
  m.chat = true;
  m.id = "chatcmpl-2";
  m.model = "x";
  m.index = 1;  // the second choice (n = 2): the choice's index is not the calls'
  const std::vector<ToolCallOut> calls = {{"call_a", "get_weather", R"({"city":"Paris"})"},
                                          {"call_b", "now", "{}"}};
  const json whole = json::parse(chat_body(
      m, {ChoiceOut{"Hi", "stop", {}}, ChoiceOut{"ignored", "tool_calls", {}, calls}}, {}));
  CHECK(whole["choices"][0]["message"] == json({{"role", "assistant"}, {"content", "Hi"}}));
  const json& msg = whole["choices"][1]["message"];
  CHECK(msg["content"].is_null());
  CHECK(msg["tool_calls"] == json::parse(R"([
        {"id":"call_a","type":"function",
         "function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
        {"id":"call_b","type":"function","function":{"name":"now","arguments":"{}"}}])"));
  CHECK(whole["choices"][1]["finish_reason"] == "tool_calls");

  // Streamed: call 0's two deltas, then call 1's, each with its index; the
  // choice's index stays the choice's.
  const std::vector<std::string> chunks = chat_tool_call_chunks(m, calls);
  REQUIRE(chunks.size() == 4);
  std::vector<json> deltas;
  for (const std::string& c : chunks) {
    const json j = json::parse(c);
    CHECK(j["choices"][0]["index"] == 1);
    CHECK(j["choices"][0]["finish_reason"].is_null());
    REQUIRE(j["choices"][0]["delta"]["tool_calls"].size() == 1);
    deltas.push_back(j["choices"][0]["delta"]["tool_calls"][0]);
  }
  CHECK(deltas[0] == json::parse(R"({"index":0,"id":"call_a","type":"function",
                                    "function":{"name":"get_weather","arguments":""}})"));
  CHECK(deltas[1] == json::parse(R"({"index":0,"function":{"arguments":"{\"city\":\"Paris\"}"}})"));
  CHECK(deltas[2] == json::parse(R"({"index":1,"id":"call_b","type":"function",
                                    "function":{"name":"now","arguments":""}})"));
  CHECK(deltas[3] == json::parse(R"({"index":1,"function":{"arguments":"{}"}})"));
  // The last chunk: no delta, finish_reason "tool_calls".
  const json last = json::parse(chat_chunk(m, "", "tool_calls"));
  CHECK(last["choices"][0]["delta"] == json::object());
  CHECK(last["choices"][0]["finish_reason"] == "tool_calls");
}

TEST_CASE("tool calls: past 16 tools the loose schema keeps the name and an object") {
  std::vector<ChatTool> many;
  for (int i = 0; i < 20; ++i)
    many.push_back({"t" + std::to_string(i), "", R"({"type":"object","properties":{}})"});
  // The exact union is more than the automaton follows at once: refused.
  CHECK_FALSE(compile_json_schema(tool_call_schema(many, nullptr)));
  const json loose = tool_call_schema_loose(many);
  CHECK(keeps_to(loose, R"({"name": "t19", "parameters": {"any": [1]}})"));
  CHECK_FALSE(keeps_to(loose, R"({"name": "t20", "parameters": {}})"));
  CHECK_FALSE(keeps_to(loose, R"({"name": "t1", "parameters": []})"));
}
