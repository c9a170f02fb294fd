// Tool calls (tools/serve/tool_calls.h): the schema a forced call is decoded
// under (checked with the automaton the sampler uses), the reading of an
// "auto" answer as calls (one or several) or as content, parallel_tool_calls
// false, the call ids, the rendering of a turn of calls read back, and the
// response shapes of calls (tools/serve/responses.h), whole and streamed.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/chat.h"
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

TEST_CASE("tool calls: an answer is one call when it is one object of a given tool") {
  auto calls = parse_tool_calls(
      " \n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}\n", kTools);
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].name == "get_weather");
  CHECK(calls[0].arguments == R"({"city":"Paris"})");
  // "arguments" for "parameters", as an object or a string of JSON.
  calls = parse_tool_calls(R"({"name":"now","arguments":{}})", kTools);
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].arguments == "{}");
  calls = parse_tool_calls(R"({"name":"now","arguments":"{\"a\": [1]}"})", kTools);
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].arguments == R"({"a":[1]})");
  // Plain content: prose, prose around JSON, an unknown tool, arguments
  // that are not an object, a missing name, keys beyond the call's, a cut
  // document, an empty answer or object, a name that is no string.
  for (const char* text :
       {"In the beginning God created the heaven and the earth.",
        R"(Sure: {"name":"now","parameters":{}})", R"({"name":"now","parameters":{}} Done.)",
        R"({"name":"later","parameters":{}})", R"({"name":"now","parameters":[1]})",
        R"({"name":"now","arguments":"not json"})", R"({"parameters":{}})",
        R"({"name":"now","parameters":{},"why":"x"})", R"({"name":"now","parameters":{)", "",
        " \n ", "{}", "[]", "[", R"({"name":7,"parameters":{}})"}) {
    CAPTURE(text);
    CHECK(parse_tool_calls(text, kTools).empty());
  }
  // A call with a brace too many.
  CHECK(parse_tool_calls(R"({"name":"now","parameters":{}}})", kTools).empty());
  CHECK(parse_tool_calls(R"({"name":"now","parameters":{}})", {}).empty());
}

TEST_CASE("tool calls: several calls, one a line, with ';' between, or as a JSON array") {
  const std::string w = R"({"name": "get_weather", "parameters": {"city": "Paris"}})";
  const std::string n = R"({"name": "now", "arguments": "{}"})";
  const std::string r = R"({"name": "get_weather", "parameters": {"city": "Rome", "days": 2}})";
  auto names = [](const std::vector<ParsedToolCall>& calls) {
    std::vector<std::string> v;
    for (const ParsedToolCall& c : calls) v.push_back(c.name);
    return v;
  };
  const std::vector<std::string> two = {"get_weather", "now"};
  const std::vector<std::string> three = {"get_weather", "now", "get_weather"};
  // Two: as model/chat.cpp renders them (one a line), with blank lines and
  // spaces, with a ';' (vLLM's llama3_json), as an array.
  for (const std::string& text :
       {w + "\n" + n, "\n" + w + "\n\n  " + n + " \n", w + " " + n, w + ";" + n, w + "; " + n,
        w + " ;\n" + n, "[" + w + ", " + n + "]", " [\n" + w + ",\n" + n + "\n] "}) {
    CAPTURE(text);
    CHECK(names(parse_tool_calls(text, kTools)) == two);
  }
  for (const std::string& text : {w + "\n" + n + "\n" + r, w + "; " + n + "; " + r,
                                  w + "\n" + n + ";" + r, "[" + w + "," + n + "," + r + "]"}) {
    CAPTURE(text);
    const auto calls = parse_tool_calls(text, kTools);
    REQUIRE(names(calls) == three);
    CHECK(calls[0].arguments == R"({"city":"Paris"})");
    CHECK(calls[1].arguments == "{}");
    CHECK(calls[2].arguments == R"({"city":"Rome","days":2})");
  }
  // One call in an array is one call; the same call twice is two.
  CHECK(names(parse_tool_calls("[" + n + "]", kTools)) == std::vector<std::string>{"now"});
  CHECK(parse_tool_calls(n + "\n" + n, kTools).size() == 2);
}

TEST_CASE("tool calls: strings holding ';', braces, brackets and escapes do not cut a call") {
  // Each string ends or holds what a cut between calls looks for; an
  // escaped quote and backslash before them; \n and \u escapes.
  const std::string a =
      R"({"name": "get_weather", "parameters": {"city": "a;b} {\"name\": \"now\"}]\n[", "q": "\\"}})";
  const std::string b =
      R"({"name": "now", "arguments": "{\"x\": \"};{\\u007d\\\\\", \"y\": [\"]\"]}"})";
  for (const std::string& text : {a + "\n" + b, a + ";" + b, "[" + a + "," + b + "]"}) {
    CAPTURE(text);
    const auto calls = parse_tool_calls(text, kTools);
    REQUIRE(calls.size() == 2);
    CHECK(json::parse(calls[0].arguments) ==
          json({{"city", "a;b} {\"name\": \"now\"}]\n["}, {"q", "\\"}}));
    CHECK(json::parse(calls[1].arguments) == json({{"x", "};{}\\"}, {"y", {"]"}}}));
  }
  // A string that does not close; a call whose closing braces are in a
  // string (it does not close: the next call's brace is no end of it).
  CHECK(parse_tool_calls(R"({"name": "now", "parameters": {"x": "}})", kTools).empty());
  CHECK(parse_tool_calls(R"({"name": "now", "parameters": {"x": "}}"}
{"name": "now", "parameters": {}})",
                         kTools)
            .empty());
}

TEST_CASE("tool calls: any piece that is no call makes the whole answer content") {
  const std::string n = R"({"name": "now", "parameters": {}})";
  for (const std::string& text : {
           n + "\n" + R"({"name": "later", "parameters": {}})",        // an unknown tool second
           n + "\n" + R"({"name": "now", "parameters": []})",          // arguments no object
           n + "\n" + R"({"name": "now", "parameters": {}, "x": 1})",  // a key too many
           n + "\n" + R"({"name": "now", "parameters": {})",           // the second cut short
           n + "\nAnd that is the time.",                              // prose after
           n + "\n" + n + "\nDone.",                                   // prose after two
           n + "\n[" + n + "]",                                        // an array after an object
           n + ";",                                                    // a ';' at the end
           n + ";;" + n,                                               // two ';'
           n + "; ;" + n,                                              // two ';', spaced
           n + ", " + n,                                               // a ',' is no separator
           n + n,                                                      // nothing between
           "[" + n + ", 1]",                                           // an array's piece no call
           "[" + n + ", " + R"({"name": "later", "parameters": {}})" + "]",
           "[" + n + "] " + n,  // an object after an array
           "[[" + n + "]]",     // an array in the array
           "[" + n + ",]",      // not JSON
       }) {
    CAPTURE(text);
    CHECK(parse_tool_calls(text, kTools).empty());
  }
}

TEST_CASE("tool calls: parallel_tool_calls false keeps the first of several; ids are each's own") {
  const std::string text = R"({"name": "get_weather", "parameters": {"city": "Paris"}}
{"name": "now", "parameters": {}})";
  const std::vector<ToolCallOut> all = answer_tool_calls(text, kTools, true);
  REQUIRE(all.size() == 2);
  CHECK(all[0].name == "get_weather");
  CHECK(all[0].arguments == R"({"city":"Paris"})");
  CHECK(all[1].name == "now");
  CHECK(all[0].id != all[1].id);
  CHECK(all[1].id.rfind("call_", 0) == 0);
  const std::vector<ToolCallOut> first = answer_tool_calls(text, kTools, false);
  REQUIRE(first.size() == 1);
  CHECK(first[0].name == "get_weather");
  CHECK(first[0].arguments == R"({"city":"Paris"})");
  // One call either way; content either way (a bad piece is not cut off).
  CHECK(answer_tool_calls(R"({"name": "now", "parameters": {}})", kTools, false).size() == 1);
  CHECK(answer_tool_calls(R"({"name": "now", "parameters": {}} {"name": "x", "parameters": {}})",
                          kTools, false)
            .empty());
  CHECK(answer_tool_calls("It is noon.", kTools, true).empty());
}

TEST_CASE("tool calls: an assistant turn of several calls as rendered reads back as those calls") {
  // model/chat.cpp writes a turn's calls one a line; a model that saw such
  // turns writes them so, and parse_tool_calls() must read back the same.
  ChatMessage turn{"assistant", ""};
  turn.tool_calls = {{"call_1", "get_weather", R"({"city": "Paris", "note": "a;b}\n{"})"},
                     {"call_2", "now", ""},
                     {"call_3", "get_weather", R"( {"city": "Rome", "days": [2, {"x": "]"}]} )"}};
  const std::string text = chat_render(ChatFormat::Llama3, {turn}, false);
  const std::string head = "<|begin_of_text|><|start_header_id|>assistant<|end_header_id|>\n\n";
  const std::string eot = "<|eot_id|>";
  REQUIRE(text.rfind(head, 0) == 0);
  REQUIRE(text.size() >= head.size() + eot.size());
  REQUIRE(text.compare(text.size() - eot.size(), eot.size(), eot) == 0);
  const std::string body = text.substr(head.size(), text.size() - head.size() - eot.size());
  CHECK(body.find('\n') != std::string::npos);  // (one a line)
  const std::vector<ParsedToolCall> back = parse_tool_calls(body, kTools);
  REQUIRE(back.size() == turn.tool_calls.size());
  for (size_t i = 0; i < back.size(); ++i) {
    CAPTURE(i);
    CHECK(back[i].name == turn.tool_calls[i].name);
    const std::string& sent = turn.tool_calls[i].arguments;
    CHECK(json::parse(back[i].arguments) == json::parse(sent.empty() ? "{}" : sent));
  }
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
