// The server's request parser (tools/serve/api_request.h): every field
// checked for its type and range, the first fault named by `param` with a
// 400, sampling fields mapped onto the sampler's settings over the server's
// defaults, and no exception for any input.
#include <doctest/doctest.h>

#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include "model/json_schema_grammar.h"
#include "model/json_schema_nfa.h"
#include "tools/serve/api_request.h"

using namespace ls;

namespace {

SamplerParams defaults() {
  SamplerParams p;
  p.temp = 0.8f;
  p.top_k = 40;
  return p;
}

GenerateRequest ok_completion(const std::string& body) {
  auto r = parse_completion_request(body, defaults());
  if (auto* e = std::get_if<ApiError>(&r)) FAIL("unexpected error: ", e->message);
  return std::get<GenerateRequest>(r);
}

ApiError err_completion(const std::string& body) {
  auto r = parse_completion_request(body, defaults());
  REQUIRE(std::holds_alternative<ApiError>(r));
  return std::get<ApiError>(r);
}

ApiError err_chat(const std::string& body) {
  auto r = parse_chat_request(body, defaults());
  REQUIRE(std::holds_alternative<ApiError>(r));
  return std::get<ApiError>(r);
}

}  // namespace

TEST_CASE("serve request: sampling fields map onto the sampler over the server's defaults") {
  GenerateRequest r = ok_completion(
      R"({"prompt":"In the beginning","temperature":0,"top_p":0.5,"top_k":7,"min_p":0.1,)"
      R"("repeat_penalty":1.1,"repeat_last_n":-1,"seed":42,"max_tokens":16,"stop":["\n","Amen"]})");
  CHECK(r.prompt == "In the beginning");
  CHECK(r.sampling.temp == 0.0f);
  CHECK(r.sampling.top_p == doctest::Approx(0.5));
  CHECK(r.sampling.top_k == 7);
  CHECK(r.sampling.min_p == doctest::Approx(0.1));
  CHECK(r.sampling.repeat_penalty == doctest::Approx(1.1));
  CHECK(r.sampling.repeat_last_n == -1);
  CHECK(r.sampling.seed == 42u);
  CHECK(r.max_tokens == 16);
  REQUIRE(r.stop.size() == 2);
  CHECK(r.stop[1] == "Amen");
  CHECK_FALSE(r.stream);

  GenerateRequest d = ok_completion(R"({"prompt":"x"})");
  CHECK(d.sampling.temp == doctest::Approx(0.8));  // the server's default stays
  CHECK(d.sampling.top_k == 40);
  CHECK(d.sampling.seed == kSamplerRandomSeed);
  CHECK(d.max_tokens == -1);
  CHECK(ok_completion(R"({"prompt":"x","seed":-1})").sampling.seed == kSamplerRandomSeed);
  // Clients' names for the budget, and JavaScript's integral floats.
  CHECK(ok_completion(R"({"prompt":"x","max_completion_tokens":5})").max_tokens == 5);
  CHECK(ok_completion(R"({"prompt":"x","n_predict":6})").max_tokens == 6);
  CHECK(ok_completion(R"({"prompt":"x","max_tokens":7.0})").max_tokens == 7);
  CHECK(ok_completion(R"({"prompt":"x","stop":"\n"})").stop.size() == 1);
  CHECK(ok_completion(R"({"prompt":"x","max_tokens":null,"stop":null})").max_tokens == -1);
}

TEST_CASE("serve request: prompts as text, one-element arrays and token ids") {
  CHECK(ok_completion(R"({"prompt":["one"]})").prompt == "one");
  GenerateRequest ids = ok_completion(R"({"prompt":[1,2,3]})");
  CHECK(ids.prompt_ids == std::vector<int32_t>{1, 2, 3});
  CHECK(err_completion(R"({"prompt":["a","b"]})").message.find("2 prompts") != std::string::npos);
  CHECK(err_completion(R"({"prompt":[1,-2]})").param == "prompt");
  CHECK(err_completion(R"({"prompt":""})").param == "prompt");
  CHECK(err_completion(R"({"prompt":[]})").param == "prompt");
  CHECK(err_completion(R"({})").message == "'prompt' is required");
}

TEST_CASE("serve request: wrong types and ranges are 400s that name the field") {
  struct Case {
    const char* body;
    const char* param;
    const char* says;
  } cases[] = {
      {R"({"prompt":"x","temperature":"hot"})", "temperature", "must be a number (got a string)"},
      {R"({"prompt":"x","temperature":3})", "temperature", "between 0 and 2"},
      {R"({"prompt":"x","top_p":-0.1})", "top_p", "between 0 and 1"},
      {R"({"prompt":"x","top_k":1.5})", "top_k", "must be an integer"},
      {R"({"prompt":"x","max_tokens":0})", "max_tokens", "between 1 and"},
      {R"({"prompt":"x","max_tokens":"many"})", "max_tokens", "an integer (got a string)"},
      // Found by the fuzzer: n_predict 0 passed the range check of -1..
      {R"({"prompt":"x","n_predict":-0})", "n_predict", "-1 (no limit) or at least 1"},
      {R"({"prompt":"x","stream":"yes"})", "stream", "must be a boolean"},
      {R"({"prompt":"x","ignore_eos":1})", "ignore_eos", "must be a boolean"},
      {R"({"prompt":"x","stop":[1]})", "stop[]", "must be a string"},
      {R"({"prompt":"x","stop":[""]})", "stop", "must not be empty"},
      {R"({"prompt":"x","stop":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]})",
       "stop", "at most 16"},
      {R"({"prompt":"x","model":5})", "model", "must be a string"},
      {R"({"prompt":"x","n":17})", "n", "between 1 and 16"},
      {R"({"prompt":"x","n":0})", "n", "between 1 and 16"},
      {R"({"prompt":"x","best_of":2})", "best_of", "not supported"},
      {R"({"prompt":"x","logprobs":true})", "logprobs", "an integer"},
      {R"({"prompt":"x","logprobs":21})", "logprobs", "between 0 and 20"},
      {R"({"prompt":"x","frequency_penalty":2.5})", "frequency_penalty", "between -2 and 2"},
      {R"({"prompt":"x","presence_penalty":"high"})", "presence_penalty", "a number"},
      {R"({"prompt":"x","logit_bias":{"12":101}})", "logit_bias", "between -100 and 100"},
      {R"({"prompt":"x","logit_bias":{"twelve":1}})", "logit_bias", "decimal strings"},
      {R"({"prompt":"x","logit_bias":{"-3":1}})", "logit_bias", "decimal strings"},
      {R"({"prompt":"x","logit_bias":{"99999999999":1}})", "logit_bias", "not a token id"},
      {R"({"prompt":"x","logit_bias":{"12":"up"}})", "logit_bias[12]", "a number"},
      {R"({"prompt":"x","logit_bias":{"12":true}})", "logit_bias[12]", "a number"},
      {R"({"prompt":"x","logit_bias":[[12]]})", "logit_bias[]", "a pair"},
      {R"({"prompt":"x","logit_bias":5})", "logit_bias", "an object of token id to bias"},
      {R"({"prompt":"x","response_format":{"type":"json_schema","json_schema":{}}})",
       "response_format", "needs \"json_schema\": {\"name\": ..., \"schema\""},
      {R"({"prompt":"x","response_format":{"type":"json_schema","json_schema":{"name":"a",)"
       R"x("schema":{"type":"object","properties":{"n":{"type":"string","pattern":"(?=a)"}}}}}})x",
       "response_format",
       "json schema: 'pattern' at /properties/n: lookahead '(?=' at character 1 is not supported"},
      {R"({"prompt":"x","response_format":{"type":"json_schema","json_schema":{"schema":{},)"
       R"("strict":"yes"}}})",
       "response_format", "'strict' is a boolean"},
      {R"({"prompt":"x","response_format":{"type":"xml"}})", "response_format",
       "{\"type\": \"json_schema\""},
      {R"({"prompt":"x","json_schema":{"type":"number","multipleOf":2.5}})", "json_schema",
       "json schema: 'multipleOf' at the top level is 2.5; only whole numbers from 1 to 2^53"},
      {R"({"prompt":"x","json_schema":{},"response_format":{"type":"json_object"}})", "json_schema",
       "both given"},
      {R"({"prompt":"x","response_format":"json"})", "response_format", "an object"},
      {R"({"prompt":"x","stream_options":{"include_usage":1}})", "stream_options.include_usage",
       "a boolean"},
      {R"({"prompt":{"text":"x"}})", "prompt", "a string or an array of token ids"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.body);
    const ApiError e = err_completion(c.body);
    CHECK(e.status == 400);
    CHECK(e.type == "invalid_request_error");
    CHECK(e.param == c.param);
    CHECK(e.message.find(c.says) != std::string::npos);
  }
  // Their no-op values are what clients send by default: accepted.
  ok_completion(
      R"({"prompt":"x","n":1,"logprobs":null,"frequency_penalty":0,"presence_penalty":0.0,"echo":false})");
}

TEST_CASE(
    "serve request: the penalties, logit_bias (OpenAI's and llama-server's forms), JSON mode, "
    "logprobs") {
  GenerateRequest r =
      ok_completion(R"({"prompt":"x","frequency_penalty":0.5,"presence_penalty":-1.25,)"
                    R"("logit_bias":{"12":-100,"7":2.5,"0":0}})");
  CHECK(r.sampling.frequency_penalty == doctest::Approx(0.5));
  CHECK(r.sampling.presence_penalty == doctest::Approx(-1.25));
  REQUIRE(r.sampling.logit_bias.size() == 3);
  auto bias_of = [&](int32_t id) {
    for (const auto& [t, b] : r.sampling.logit_bias)
      if (t == id) return b;
    FAIL("no bias for ", id);
    return 0.0f;
  };
  CHECK(bias_of(12) == kSamplerBan);
  CHECK(bias_of(7) == doctest::Approx(2.5));
  CHECK(bias_of(0) == 0.0f);
  // llama-server's array of pairs; false bans.
  GenerateRequest a = ok_completion(R"({"prompt":"x","logit_bias":[[5,false],[9,-1.5]]})");
  REQUIRE(a.sampling.logit_bias.size() == 2);
  CHECK(a.sampling.logit_bias[0] == std::pair<int32_t, float>(5, kSamplerBan));
  CHECK(a.sampling.logit_bias[1] == std::pair<int32_t, float>(9, -1.5f));
  // A request's bias replaces the server's default one; absent, the default stays.
  SamplerParams d = defaults();
  d.logit_bias = {{3, 1.0f}};
  auto with = parse_completion_request(R"({"prompt":"x","logit_bias":{"4":1}})", d);
  REQUIRE(std::holds_alternative<GenerateRequest>(with));
  CHECK(std::get<GenerateRequest>(with).sampling.logit_bias ==
        std::vector<std::pair<int32_t, float>>{{4, 1.0f}});
  auto without = parse_completion_request(R"({"prompt":"x"})", d);
  REQUIRE(std::holds_alternative<GenerateRequest>(without));
  CHECK(std::get<GenerateRequest>(without).sampling.logit_bias == d.logit_bias);
  // JSON mode: response_format json_object; text (or none) is plain.
  CHECK(ok_completion(R"({"prompt":"x","response_format":{"type":"json_object"}})").json);
  CHECK_FALSE(ok_completion(R"({"prompt":"x","response_format":{"type":"text"}})").json);
  CHECK_FALSE(ok_completion(R"({"prompt":"x"})").json);
  CHECK_FALSE(
      ok_completion(R"({"prompt":"x","response_format":{"type":"json_object"}})").json_schema);
  // Structured outputs: OpenAI's response_format json_schema (chat and
  // completions), and llama-server's top-level json_schema; both compile the
  // schema and set JSON mode.
  for (const GenerateRequest& r :
       {ok_completion(
            R"({"prompt":"x","response_format":{"type":"json_schema","json_schema":)"
            R"({"name":"p","strict":true,"schema":{"type":"object","properties":)"
            R"({"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}}}})"),
        ok_completion(
            R"({"prompt":"x","json_schema":{"type":"object","properties":)"
            R"({"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}})")}) {
    CHECK(r.json);
    REQUIRE(r.json_schema);
    JsonSchemaGrammar g(*r.json_schema);
    CHECK(g.feed("{\"a\":12}"));
    CHECK(g.complete());
    CHECK_FALSE(JsonSchemaGrammar(*r.json_schema).accepts("{\"b\""));
  }
  {
    auto p = parse_chat_request(
        R"({"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema",)"
        R"("json_schema":{"name":"n","schema":{"enum":["yes","no"]}}}})",
        defaults());
    REQUIRE(std::holds_alternative<GenerateRequest>(p));
    const auto& r = std::get<GenerateRequest>(p);
    REQUIRE(r.json_schema);
    CHECK(JsonSchemaGrammar(*r.json_schema).accepts("\"ye"));
    CHECK_FALSE(JsonSchemaGrammar(*r.json_schema).accepts("\"ya"));
  }
  CHECK(err_chat(R"({"messages":[{"role":"user","content":"hi"}],"response_format":)"
                 R"({"type":"json_schema","json_schema":{"schema":{"allOf":[]}}}})")
            .param == "response_format");
  // echo (completions only; not with logprobs).
  CHECK(ok_completion(R"({"prompt":"x","echo":true})").echo);
  CHECK(err_completion(R"({"prompt":"x","echo":true,"logprobs":1})").param == "echo");
  CHECK(err_chat(R"({"messages":[{"role":"user","content":"hi"}],"echo":true})").param == "echo");
  // n choices.
  CHECK(ok_completion(R"({"prompt":"x"})").n == 1);
  CHECK(ok_completion(R"({"prompt":"x","n":3})").n == 3);
  // logprobs: the completion's integer; chat's boolean and top_logprobs.
  CHECK(ok_completion(R"({"prompt":"x"})").logprobs == -1);
  CHECK(ok_completion(R"({"prompt":"x","logprobs":3})").logprobs == 3);
  CHECK(ok_completion(R"({"prompt":"x","logprobs":0})").logprobs == 0);
  auto chat_lp = [](const char* body) {
    auto p = parse_chat_request(body, defaults());
    REQUIRE(std::holds_alternative<GenerateRequest>(p));
    return std::get<GenerateRequest>(p).logprobs;
  };
  CHECK(chat_lp(R"({"messages":[{"role":"user","content":"hi"}]})") == -1);
  CHECK(chat_lp(R"({"messages":[{"role":"user","content":"hi"}],"logprobs":false})") == -1);
  CHECK(chat_lp(R"({"messages":[{"role":"user","content":"hi"}],"logprobs":true})") == 0);
  CHECK(chat_lp(
            R"({"messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":5})") ==
        5);
  CHECK(err_chat(R"({"messages":[{"role":"user","content":"hi"}],"top_logprobs":2})").param ==
        "top_logprobs");
  CHECK(
      err_chat(R"({"messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":21})")
          .param == "top_logprobs");
  // Chat too, and at most kMaxLogitBias entries.
  auto c = parse_chat_request(
      R"({"messages":[{"role":"user","content":"hi"}],"presence_penalty":1,"logit_bias":{"1":1}})",
      defaults());
  REQUIRE(std::holds_alternative<GenerateRequest>(c));
  CHECK(std::get<GenerateRequest>(c).sampling.presence_penalty == 1.0f);
  std::string many = R"({"prompt":"x","logit_bias":{)";
  for (size_t i = 0; i <= kMaxLogitBias; ++i)
    many += (i ? ",\"" : "\"") + std::to_string(i) + "\":1";
  many += "}}";
  CHECK(err_completion(many).message.find("at most 1024") != std::string::npos);
}

TEST_CASE("serve request: malformed JSON and non-objects say so, with the position") {
  for (const char* body :
       {"", "{", R"({"prompt": "x",})", "not json", "\xff\xfe", R"({"prompt":"\ud800"})"}) {
    CAPTURE(body);
    const ApiError e = err_completion(body);
    CHECK(e.status == 400);
    CHECK(e.message.find("not valid JSON") != std::string::npos);
  }
  CHECK(err_completion("[1,2]").message.find("must be a JSON object (got an array)") !=
        std::string::npos);
  CHECK(err_completion("42").message.find("JSON object") != std::string::npos);
}

TEST_CASE("serve request: chat messages are checked one by one") {
  auto r = parse_chat_request(
      R"({"messages":[{"role":"developer","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"Hi"},{"type":"text","text":" there"}]}],"stream":true,"stream_options":{"include_usage":true}})",
      defaults());
  REQUIRE(std::holds_alternative<GenerateRequest>(r));
  const GenerateRequest& q = std::get<GenerateRequest>(r);
  CHECK(q.chat);
  REQUIRE(q.messages.size() == 2);
  CHECK(q.messages[0].role == "system");
  CHECK(q.messages[1].content == "Hi there");
  CHECK(q.stream);
  CHECK(q.include_usage);
  CHECK_FALSE(q.ignore_eos);
  CHECK(std::get<GenerateRequest>(
            parse_chat_request(R"({"messages":[{"role":"user","content":"a"}],"ignore_eos":true})",
                               defaults()))
            .ignore_eos);

  CHECK(err_chat(R"({})").param == "messages");
  CHECK(err_chat(R"({"messages":[]})").message.find("at least one") != std::string::npos);
  CHECK(err_chat(R"({"messages":"hi"})").message.find("must be an array") != std::string::npos);
  CHECK(err_chat(R"({"messages":[{"role":"robot","content":"x"}]})").param == "messages[0].role");
  CHECK(err_chat(R"({"messages":[{"role":"user"}]})").param == "messages[0].content");
  CHECK(
      err_chat(
          R"({"messages":[{"role":"user","content":"a"},{"role":"user","content":[{"type":"image_url"}]}]})")
          .param == "messages[1].content");
  CHECK(err_chat(R"({"messages":[{"role":"user","content":"a"}],"tools":[{"type":"function"}]})")
            .param == "tools[0].function");
}

namespace {

GenerateRequest ok_chat(const std::string& body) {
  auto r = parse_chat_request(body, defaults());
  if (auto* e = std::get_if<ApiError>(&r)) FAIL("unexpected error: ", e->message);
  return std::get<GenerateRequest>(r);
}

// A chat body with these fields after its one message.
std::string with(const std::string& fields) {
  return R"({"messages":[{"role":"user","content":"Weather?"}],)" + fields + "}";
}

constexpr const char* kWeather =
    R"({"type":"function","function":{"name":"get_weather","description":"The weather.",
        "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},
        "strict":true}})";
constexpr const char* kNow = R"({"type":"function","function":{"name":"now"}})";

}  // namespace

TEST_CASE("serve request: tools and tool_choice") {
  const std::string tools = std::string(R"("tools":[)") + kWeather + "," + kNow + "]";
  GenerateRequest q = ok_chat(with(tools));
  REQUIRE(q.tools.size() == 2);
  CHECK(q.tools[0].name == "get_weather");
  CHECK(q.tools[0].description == "The weather.");
  CHECK(nlohmann::json::parse(q.tools[0].parameters)["required"][0] == "city");
  CHECK(q.tools[1].description.empty());
  // No parameters: an object with no keys at all.
  CHECK(nlohmann::json::parse(q.tools[1].parameters) ==
        nlohmann::json::parse(R"({"type":"object","properties":{},"additionalProperties":false})"));
  // auto by default: no constraint.
  CHECK(q.tool_choice == ToolChoice::Auto);
  CHECK_FALSE(q.json);
  CHECK_FALSE(q.json_schema);
  CHECK(ok_chat(with(tools + R"(,"tool_choice":"none","parallel_tool_calls":false)")).tool_choice ==
        ToolChoice::None);
  // parallel_tool_calls: true unless sent false (an auto answer's first call only).
  CHECK(q.parallel_tool_calls);
  CHECK_FALSE(ok_chat(with(tools + R"(,"parallel_tool_calls":false)")).parallel_tool_calls);
  CHECK(ok_chat(with(tools + R"(,"parallel_tool_calls":true)")).parallel_tool_calls);
  CHECK_FALSE(ok_chat(with(tools + R"(,"tool_choice":"none")")).json_schema);

  // required: the call's schema, both tools.
  q = ok_chat(with(tools + R"(,"tool_choice":"required")"));
  CHECK(q.tool_choice == ToolChoice::Required);
  REQUIRE(q.json_schema);
  CHECK(q.json);
  CHECK(JsonSchemaNfa(*q.json_schema).accepts(R"({"name": "now", "parameters": {}})"));
  CHECK(JsonSchemaNfa(*q.json_schema).accepts(R"({"name": "get_weather", "parameters": {"city")"));
  CHECK_FALSE(
      JsonSchemaNfa(*q.json_schema).accepts(R"({"name": "get_weather", "parameters": {"city": 5)"));
  CHECK_FALSE(JsonSchemaNfa(*q.json_schema).accepts(R"({"name": "other")"));
  // A named function: that one only.
  q = ok_chat(with(tools + R"(,"tool_choice":{"type":"function","function":{"name":"now"}})"));
  CHECK(q.tool_choice == ToolChoice::Named);
  CHECK(q.tool_name == "now");
  REQUIRE(q.json_schema);
  CHECK(JsonSchemaNfa(*q.json_schema).accepts(R"({"name": "now", "parameters": {}})"));
  CHECK_FALSE(JsonSchemaNfa(*q.json_schema).accepts(R"({"name": "g)"));
  // More than 16 tools: required still compiles (the loose schema).
  std::string many = R"("tools":[)";
  for (int i = 0; i < 40; ++i)
    many += (i ? "," : "") + std::string(R"({"type":"function","function":{"name":"t)") +
            std::to_string(i) + R"("}})";
  q = ok_chat(with(many + R"(],"tool_choice":"required")"));
  REQUIRE(q.json_schema);
  CHECK(JsonSchemaNfa(*q.json_schema).accepts(R"({"name": "t39", "parameters": {}})"));
  CHECK_FALSE(JsonSchemaNfa(*q.json_schema).accepts(R"({"name": "t40")"));
  // Their no-op values without tools.
  q = ok_chat(with(R"("tools":[],"tool_choice":"auto","parallel_tool_calls":true)"));
  CHECK(q.tools.empty());
  CHECK(q.tool_choice == ToolChoice::None);
  ok_chat(with(R"("tool_choice":"none")"));
}

TEST_CASE("serve request: every refusal of tools names its field") {
  const std::string tools = std::string(R"("tools":[)") + kWeather + "]";
  std::string too_many = R"("tools":[)";
  for (int i = 0; i <= 128; ++i)
    too_many += (i ? "," : "") + std::string(R"({"type":"function","function":{"name":"t)") +
                std::to_string(i) + R"("}})";
  too_many += "]";
  struct Case {
    std::string fields, param, says;
  };
  const std::vector<Case> cases = {
      {R"("tools":{})", "tools", "must be an array"},
      {too_many, "tools", "at most 128"},
      {R"("tools":[7])", "tools[0]", "must be an object"},
      {R"("tools":[{"type":"retrieval"}])", "tools[0].type", "\"function\""},
      {R"("tools":[{"type":"function","function":"f"}])", "tools[0].function", "an object"},
      {R"("tools":[{"type":"function","function":{}}])", "tools[0].function.name", "a string"},
      {R"("tools":[{"type":"function","function":{"name":"a b"}}])", "tools[0].function.name",
       "1 to 64 letters"},
      {R"("tools":[{"type":"function","function":{"name":""}}])", "tools[0].function.name",
       "1 to 64 letters"},
      {R"("tools":[{"type":"function","function":{"name":")" + std::string(65, 'a') + R"("}}])",
       "tools[0].function.name", "1 to 64 letters"},
      {R"("tools":[)" + std::string(kNow) + "," + kNow + "]", "tools[1].function.name",
       "repeats the tool name \"now\""},
      {R"("tools":[{"type":"function","function":{"name":"f","description":3}}])",
       "tools[0].function.description", "a string"},
      {R"("tools":[{"type":"function","function":{"name":"f","strict":"yes"}}])",
       "tools[0].function.strict", "a boolean"},
      {R"("tools":[{"type":"function","function":{"name":"f","parameters":[]}}])",
       "tools[0].function.parameters", "an object"},
      {R"x("tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string","pattern":"a(?!x)"}}}}}])x",
       "tools[0].function.parameters",
       "'pattern' at /properties/a: lookahead '(?!' at character 2 is not supported"},
      {tools + R"(,"tool_choice":"any")", "tool_choice", "\"required\""},
      {tools + R"(,"tool_choice":3)", "tool_choice", "must be"},
      {tools + R"(,"tool_choice":{"type":"function"})", "tool_choice", "must be"},
      {tools + R"(,"tool_choice":{"type":"function","function":{"name":"now"}})", "tool_choice",
       "which 'tools' does not hold"},
      {R"("tool_choice":"required")", "tool_choice", "'tools' gives none"},
      {R"("tool_choice":{"type":"function","function":{"name":"now"}})", "tool_choice",
       "'tools' gives none"},
      {tools + R"(,"parallel_tool_calls":"yes")", "parallel_tool_calls", "a boolean"},
      {tools + R"(,"response_format":{"type":"json_object"})", "response_format",
       "is a tool call or follows the response format"},
      {tools +
           R"(,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"}}})",
       "response_format", "not supported"},
      {tools + R"(,"json_schema":{"type":"object"})", "json_schema", "not supported"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.fields.substr(0, 200));
    const ApiError e = err_chat(with(c.fields));
    CHECK(e.status == 400);
    CHECK(e.param == c.param);
    CHECK_MESSAGE(e.message.find(c.says) != std::string::npos, e.message);
  }
  // Completions have no tools: refused by name, their no-op values accepted.
  CHECK(err_completion(R"({"prompt":"x",)" + tools + "}").param == "tools");
  CHECK(err_completion(R"({"prompt":"x","tool_choice":"required"})").param == "tool_choice");
  ok_completion(R"({"prompt":"x","tools":[],"tool_choice":"none"})");
}

TEST_CASE("serve request: assistant tool calls and tool results in the messages") {
  const GenerateRequest q = ok_chat(
      R"({"messages":[{"role":"user","content":"Weather?"},
          {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",
            "function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]},
          {"role":"tool","tool_call_id":"call_1","content":"18C"}]})");
  REQUIRE(q.messages.size() == 3);
  REQUIRE(q.messages[1].tool_calls.size() == 1);
  CHECK(q.messages[1].tool_calls[0].id == "call_1");
  CHECK(q.messages[1].tool_calls[0].name == "get_weather");
  CHECK(q.messages[1].tool_calls[0].arguments == R"({"city": "Paris"})");
  CHECK(q.messages[1].content.empty());
  CHECK(q.messages[2].role == "tool");
  CHECK(q.messages[2].tool_call_id == "call_1");
  CHECK(q.messages[2].content == "18C");

  auto msg = [](const std::string& m) {
    return R"({"messages":[{"role":"user","content":"a"},)" + m + "]}";
  };
  struct Case {
    std::string m, param;
  };
  const std::vector<Case> cases = {
      {R"({"role":"assistant","tool_calls":{}})", "messages[1].tool_calls"},
      {R"({"role":"assistant","tool_calls":[1]})", "messages[1].tool_calls[0]"},
      {R"({"role":"assistant","tool_calls":[{"type":"x","function":{"name":"f","arguments":"{}"}}]})",
       "messages[1].tool_calls[0].type"},
      {R"({"role":"assistant","tool_calls":[{"id":1,"function":{"name":"f","arguments":"{}"}}]})",
       "messages[1].tool_calls[0].id"},
      {R"({"role":"assistant","tool_calls":[{"id":"c"}]})", "messages[1].tool_calls[0].function"},
      {R"({"role":"assistant","tool_calls":[{"function":{"arguments":"{}"}}]})",
       "messages[1].tool_calls[0].function.name"},
      {R"({"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":{}}}]})",
       "messages[1].tool_calls[0].function.arguments"},
      {R"({"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{nope"}}]})",
       "messages[1].tool_calls[0].function.arguments"},
      {R"({"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"[1]"}}]})",
       "messages[1].tool_calls[0].function.arguments"},
      {R"({"role":"assistant","content":null})", "messages[1].content"},
      {R"({"role":"assistant","content":null,"tool_calls":[]})", "messages[1].content"},
      {R"({"role":"tool","content":"x"})", "messages[1].tool_call_id"},
      {R"({"role":"tool","tool_call_id":5,"content":"x"})", "messages[1].tool_call_id"},
      {R"({"role":"tool","tool_call_id":"c"})", "messages[1].content"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.m);
    const ApiError e = err_chat(msg(c.m));
    CHECK(e.status == 400);
    CHECK(e.param == c.param);
  }
}

TEST_CASE("serve request: tokenize and detokenize bodies") {
  auto t = parse_tokenize_request(R"({"content":"In the beginning","add_special":true})");
  REQUIRE(std::holds_alternative<TokenizeRequest>(t));
  CHECK(std::get<TokenizeRequest>(t).add_special);
  CHECK(std::get<ApiError>(parse_tokenize_request(R"({"content":3})")).param == "content");
  auto d = parse_detokenize_request(R"({"tokens":[5,6]})");
  REQUIRE(std::holds_alternative<DetokenizeRequest>(d));
  CHECK(std::get<DetokenizeRequest>(d).tokens.size() == 2);
  CHECK(std::get<ApiError>(parse_detokenize_request(R"({"tokens":["a"]})")).param == "tokens[]");
  CHECK(std::get<ApiError>(parse_detokenize_request(R"({"tokens":[4294967296]})")).param ==
        "tokens");
}

TEST_CASE("serve request: every prefix of a valid body parses or fails cleanly") {
  const std::string body =
      R"({"messages":[{"role":"user","content":"Hello \u00e9"}],"temperature":0.5,"stop":["x"],"max_tokens":3})";
  for (size_t n = 0; n <= body.size(); ++n) {
    auto r = parse_chat_request(std::string_view(body).substr(0, n), defaults());
    CHECK((n == body.size()) == std::holds_alternative<GenerateRequest>(r));
  }
}

// The fuzz target's habit in small: every value of a body with tools and
// tool messages replaced by each JSON type in turn parses or fails with an
// ApiError, never an exception (nlohmann throws on a wrong access).
TEST_CASE("serve request: any value anywhere in a tools body fails cleanly") {
  const nlohmann::json body =
      nlohmann::json::parse(R"({"messages":[{"role":"user","content":"Weather?"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",
        "function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
      {"role":"tool","tool_call_id":"call_1","content":"18C"}],
    "tools":[{"type":"function","function":{"name":"get_weather","description":"The weather.",
        "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},
        "strict":true}},{"type":"function","function":{"name":"now"}}],
    "tool_choice":{"type":"function","function":{"name":"now"}},"parallel_tool_calls":false})");
  CHECK(std::holds_alternative<GenerateRequest>(parse_chat_request(body.dump(), defaults())));
  const nlohmann::json flat = body.flatten();
  const std::vector<nlohmann::json> values = {
      nullptr,          1, -1.5, "x", "", true, nlohmann::json::array(), nlohmann::json::object(),
      {{"name", "now"}}};
  size_t tried = 0;
  for (auto it = flat.begin(); it != flat.end(); ++it) {
    // Each leaf, and each container above it, replaced.
    for (nlohmann::json::json_pointer ptr(it.key()); !ptr.empty(); ptr = ptr.parent_pointer()) {
      for (const nlohmann::json& v : values) {
        nlohmann::json b = body;
        b[ptr] = v;
        CAPTURE(ptr.to_string());
        CAPTURE(v.dump());
        CHECK_NOTHROW((void)parse_chat_request(b.dump(), defaults()));
        ++tried;
      }
    }
  }
  CHECK(tried > 500);
}
