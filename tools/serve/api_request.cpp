#include "tools/serve/api_request.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "tools/serve/tool_calls.h"

namespace ls {
namespace {

using json = nlohmann::json;

// The JSON type as the error message names it.
const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    case json::value_t::number_float:
      return "a number";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "an integer";
    default:
      return "an unknown type";
  }
}

ApiError wrong_type(const std::string& field, const char* want, const json& got) {
  return bad_request("'" + field + "' must be " + want + " (got " + type_name(got) + ")", field);
}

// Reads the fields of one request object; the first error is kept and every
// later getter does nothing, so a parser reads as a list of fields.
class Fields {
 public:
  explicit Fields(const json& o) : o_(o) {}
  const std::optional<ApiError>& error() const { return err_; }
  void fail(ApiError e) {
    if (!err_) err_ = std::move(e);
  }
  // The value of a field present and not null, else nullptr.
  const json* get(const char* name) const {
    if (err_) return nullptr;
    auto it = o_.find(name);
    if (it == o_.end() || it->is_null()) return nullptr;
    return &*it;
  }
  void boolean(const char* name, bool& out) {
    if (const json* v = get(name)) {
      if (!v->is_boolean()) return fail(wrong_type(name, "a boolean", *v));
      out = v->get<bool>();
    }
  }
  // A number within [lo, hi].
  void number(const char* name, float& out, double lo, double hi) {
    if (const json* v = get(name)) {
      if (!v->is_number()) return fail(wrong_type(name, "a number", *v));
      const double d = v->get<double>();
      if (!std::isfinite(d) || d < lo || d > hi)
        return fail(bad_request("'" + std::string(name) + "' must be between " + fmt(lo) + " and " +
                                    fmt(hi) + " (got " + fmt(d) + ")",
                                name));
      out = static_cast<float>(d);
    }
  }
  // An integer within [lo, hi].
  void integer(const char* name, int64_t& out, int64_t lo, int64_t hi) {
    if (const json* v = get(name)) {
      // 1.0 is an integer to JavaScript, whose clients send it so.
      if (v->is_number_float()) {
        const double d = v->get<double>();
        if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9e15)
          return fail(wrong_type(name, "an integer", *v));
        out = static_cast<int64_t>(d);
      } else if (v->is_number_unsigned()) {
        const uint64_t u = v->get<uint64_t>();
        out = u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                  ? std::numeric_limits<int64_t>::max()
                  : static_cast<int64_t>(u);
      } else if (v->is_number_integer()) {
        out = v->get<int64_t>();
      } else {
        return fail(wrong_type(name, "an integer", *v));
      }
      if (out < lo || out > hi)
        return fail(bad_request("'" + std::string(name) + "' must be between " +
                                    std::to_string(lo) + " and " + std::to_string(hi) + " (got " +
                                    std::to_string(out) + ")",
                                name));
    }
  }
  // A field the engine does not do: absent, null, or its no-op value.
  void only(const char* name, const json& noop, const char* why) {
    if (const json* v = get(name))
      if (*v != noop)
        fail(bad_request("'" + std::string(name) + "' is not supported: " + why, name));
  }

 private:
  static std::string fmt(double d) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", d);
    return buf;
  }
  const json& o_;
  std::optional<ApiError> err_;
};

// logit_bias, OpenAI's object {"token id": bias} (bias -100..100; -100
// bans) or llama-server's array [[id, bias or false], ...] (false bans);
// the ids' range against the vocabulary is the server's check (it knows
// the model). At most kMaxLogitBias entries.
std::optional<ApiError> read_logit_bias(const json& v,
                                        std::vector<std::pair<int32_t, float>>& out) {
  constexpr const char* kField = "logit_bias";
  auto entry = [&](const std::string& what, int64_t id, const json& b) -> std::optional<ApiError> {
    if (id < 0 || id > std::numeric_limits<int32_t>::max())
      return bad_request("'logit_bias' holds token id " + what + ", not a token id", kField);
    float bias = kSamplerBan;
    if (b.is_boolean() && !b.get<bool>()) {
      bias = kSamplerBan;
    } else if (b.is_number()) {
      const double d = b.get<double>();
      if (!std::isfinite(d) || d < -100.0 || d > 100.0)
        return bad_request("'logit_bias' values must be between -100 and 100 (token " + what +
                               " has " + b.dump() + ")",
                           kField);
      bias = static_cast<float>(d);
    } else {
      return wrong_type("logit_bias[" + what + "]", "a number (or false: a ban)", b);
    }
    out.emplace_back(static_cast<int32_t>(id), bias);
    return std::nullopt;
  };
  if (!v.is_object() && !v.is_array())
    return wrong_type(kField, "an object of token id to bias", v);
  if (v.size() > kMaxLogitBias)
    return bad_request("'logit_bias' holds at most " + std::to_string(kMaxLogitBias) +
                           " tokens (got " + std::to_string(v.size()) + ")",
                       kField);
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string& key = it.key();
      char* end = nullptr;
      errno = 0;
      const long long id = key.empty() ? -1 : std::strtoll(key.c_str(), &end, 10);
      if (key.empty() || errno != 0 || *end != '\0' ||
          !std::isdigit(static_cast<unsigned char>(key[0])))
        return bad_request("'logit_bias' keys are token ids as decimal strings (got \"" +
                               key.substr(0, 32) + "\")",
                           kField);
      if (auto e = entry(key, id, it.value())) return e;
    }
    return std::nullopt;
  }
  for (const json& p : v) {
    if (!p.is_array() || p.size() != 2 || !(p[0].is_number_integer() || p[0].is_number_unsigned()))
      return wrong_type("logit_bias[]", "a pair [token id, bias]", p);
    const int64_t id =
        p[0].is_number_unsigned() && p[0].get<uint64_t>() > (1ull << 31) ? -1 : p[0].get<int64_t>();
    if (auto e = entry(p[0].dump(), id, p[1])) return e;
  }
  return std::nullopt;
}

// The body as one JSON object, or the error that says why not.
std::variant<json, ApiError> parse_object(std::string_view body) {
  json j = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    // Parse again with exceptions for the position (bounded: the body
    // already failed once, and exceptions stay inside this function).
    std::string where;
    try {
      const json again = json::parse(body.begin(), body.end());
      (void)again;
    } catch (const json::parse_error& e) {
      where = std::string(": ") + e.what();
    } catch (...) {
    }
    return bad_request("the request body is not valid JSON" + where);
  }
  if (!j.is_object())
    return bad_request(std::string("the request body must be a JSON object (got ") + type_name(j) +
                       ")");
  return j;
}

// Sampling and the common fields of both generate endpoints.
void read_generate_fields(Fields& f, GenerateRequest& r) {
  if (const json* m = f.get("model")) {
    if (!m->is_string()) return f.fail(wrong_type("model", "a string", *m));
    r.model = m->get<std::string>();
  }
  f.boolean("stream", r.stream);
  f.boolean("ignore_eos", r.ignore_eos);
  f.boolean("cache_prompt", r.cache_prompt);
  if (const json* so = f.get("stream_options")) {
    if (!so->is_object()) return f.fail(wrong_type("stream_options", "an object", *so));
    auto it = so->find("include_usage");
    if (it != so->end() && !it->is_null()) {
      if (!it->is_boolean())
        return f.fail(wrong_type("stream_options.include_usage", "a boolean", *it));
      r.include_usage = it->get<bool>();
    }
  }
  f.number("temperature", r.sampling.temp, 0.0, 2.0);
  f.number("top_p", r.sampling.top_p, 0.0, 1.0);
  f.number("min_p", r.sampling.min_p, 0.0, 1.0);
  int64_t v = r.sampling.top_k;
  f.integer("top_k", v, 0, 1 << 20);
  r.sampling.top_k = static_cast<int32_t>(v);
  f.number("repeat_penalty", r.sampling.repeat_penalty, 0.0, 10.0);
  f.number("frequency_penalty", r.sampling.frequency_penalty, -2.0, 2.0);
  f.number("presence_penalty", r.sampling.presence_penalty, -2.0, 2.0);
  v = r.sampling.repeat_last_n;
  f.integer("repeat_last_n", v, -1, 1 << 20);
  r.sampling.repeat_last_n = static_cast<int32_t>(v);
  // seed: any integer; -1 (llama-server's) or absent: a random one.
  if (f.get("seed")) {
    int64_t seed = 0;
    f.integer("seed", seed, std::numeric_limits<int64_t>::min(),
              std::numeric_limits<int64_t>::max());
    r.sampling.seed = seed == -1 ? kSamplerRandomSeed : static_cast<uint64_t>(seed);
  }
  // max_tokens (OpenAI), max_completion_tokens (its newer name for chat), n_predict (llama-server).
  for (const char* name : {"max_tokens", "max_completion_tokens", "n_predict"}) {
    if (!f.get(name)) continue;
    int64_t n = -1;
    const bool llama = name[0] == 'n';  // llama-server's n_predict takes -1: no limit
    f.integer(name, n, llama ? -1 : 1, 1 << 30);
    if (llama && n == 0 && !f.error())
      return f.fail(bad_request("'n_predict' must be -1 (no limit) or at least 1 (got 0)", name));
    r.max_tokens = static_cast<int32_t>(n);
  }
  if (const json* s = f.get("stop")) {
    std::vector<std::string> stops;
    if (s->is_string()) {
      stops.push_back(s->get<std::string>());
    } else if (s->is_array()) {
      if (s->size() > kMaxStop)
        return f.fail(bad_request("'stop' holds at most " + std::to_string(kMaxStop) +
                                      " strings (got " + std::to_string(s->size()) + ")",
                                  "stop"));
      for (const json& e : *s) {
        if (!e.is_string()) return f.fail(wrong_type("stop[]", "a string", e));
        stops.push_back(e.get<std::string>());
      }
    } else {
      return f.fail(wrong_type("stop", "a string or an array of strings", *s));
    }
    for (const std::string& st : stops) {
      if (st.empty()) return f.fail(bad_request("'stop' strings must not be empty", "stop"));
      if (st.size() > kMaxStopBytes)
        return f.fail(bad_request("'stop' strings are at most " + std::to_string(kMaxStopBytes) +
                                      " bytes (got " + std::to_string(st.size()) + ")",
                                  "stop"));
    }
    r.stop = std::move(stops);
  }
  // What OpenAI defines and the engine does not do: refused when asked for.
  int64_t n_choices = 1;
  f.integer("n", n_choices, 1, kMaxChoices);
  r.n = static_cast<int>(n_choices);
  f.only("best_of", json(1), "one choice per request");
  // logprobs: chat's boolean with top_logprobs (0-20), the completion's
  // integer (the alternatives a token, 0-20; OpenAI's own limit is 5).
  if (r.chat) {
    bool want = false;
    f.boolean("logprobs", want);
    int64_t top = -1;
    if (f.get("top_logprobs")) f.integer("top_logprobs", top, 0, kMaxTopLogprobs);
    if (want)
      r.logprobs = static_cast<int32_t>(std::max<int64_t>(top, 0));
    else if (top > 0)
      f.fail(bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs"));
  } else if (f.get("logprobs")) {
    int64_t n = 0;
    f.integer("logprobs", n, 0, kMaxTopLogprobs);
    r.logprobs = static_cast<int32_t>(n);
  }
  // echo (completions): the prompt's text before the answer's; its tokens'
  // log probabilities would need the prompt's logits, which are not kept.
  if (!r.chat) {
    f.boolean("echo", r.echo);
    if (r.echo && r.logprobs >= 0)
      f.fail(
          bad_request("'echo' with 'logprobs' is not supported: the prompt's tokens have no "
                      "log probabilities here",
                      "echo"));
  } else {
    f.only("echo", json(false), "a chat answer does not echo its messages");
  }
  f.only("suffix", json(""), "no insertion");
  if (const json* lb = f.get("logit_bias")) {  // the request's replaces the server's
    r.sampling.logit_bias.clear();
    if (auto e = read_logit_bias(*lb, r.sampling.logit_bias)) return f.fail(std::move(*e));
  }
  // Chat reads tools after these fields (read_tools); a completion has no
  // messages to call them from.
  if (!r.chat) {
    if (const json* t = f.get("tools"))
      if (!(t->is_array() && t->empty()))
        f.fail(
            bad_request("'tools' is not supported on /v1/completions: tool calls are chat's "
                        "(/v1/chat/completions)",
                        "tools"));
    f.only("tool_choice", json("none"), "tool calls are chat's (/v1/chat/completions)");
  }
  if (const json* rf = f.get("response_format")) {
    if (!rf->is_object()) return f.fail(wrong_type("response_format", "an object", *rf));
    auto it = rf->find("type");
    if (it != rf->end() && *it == json("json_object")) {
      r.json = true;
    } else if (it != rf->end() && *it == json("json_schema")) {
      // OpenAI's structured outputs: {"type": "json_schema", "json_schema":
      // {"name": ..., "schema": {...}, "strict": ...}}. The schema is always
      // kept to (what strict asks), so strict is only checked for its type.
      auto js = rf->find("json_schema");
      if (js == rf->end() || !js->is_object() || !js->contains("schema"))
        return f.fail(bad_request(
            "'response_format' of type \"json_schema\" needs \"json_schema\": {\"name\": ..., "
            "\"schema\": {...}}",
            "response_format"));
      auto strict = js->find("strict");
      if (strict != js->end() && !strict->is_boolean() && !strict->is_null())
        return f.fail(wrong_type("response_format", "an object whose 'strict' is a boolean", *rf));
      auto c = compile_json_schema(js->at("schema"));
      if (!c) return f.fail(bad_request(c.error().message, "response_format"));
      r.json = true;
      r.json_schema = std::move(*c);
    } else if (it == rf->end() || *it != json("text")) {
      f.fail(
          bad_request("'response_format' must be {\"type\": \"text\"}, {\"type\": "
                      "\"json_object\"} (JSON mode) or {\"type\": \"json_schema\", "
                      "\"json_schema\": {\"name\": ..., \"schema\": {...}}}",
                      "response_format"));
    }
  }
  // llama-server's top-level json_schema: the schema itself.
  if (const json* js = f.get("json_schema")) {
    if (r.json)
      return f.fail(bad_request("'json_schema' and a JSON 'response_format' both given; send one",
                                "json_schema"));
    auto c = compile_json_schema(*js);
    if (!c) return f.fail(bad_request(c.error().message, "json_schema"));
    r.json = true;
    r.json_schema = std::move(*c);
  }
}

// A function name as OpenAI takes it: ^[a-zA-Z0-9_-]{1,64}$.
bool tool_name_ok(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  for (unsigned char c : n)
    if (!std::isalnum(c) && c != '_' && c != '-') return false;
  return true;
}

// tools, tool_choice and parallel_tool_calls (chat), after the common
// fields (a JSON response_format is known by then).
void read_tools(Fields& f, GenerateRequest& r) {
  if (const json* t = f.get("tools")) {
    if (!t->is_array()) return f.fail(wrong_type("tools", "an array of tools", *t));
    if (t->size() > kMaxTools)
      return f.fail(bad_request("'tools' holds at most " + std::to_string(kMaxTools) +
                                    " tools (got " + std::to_string(t->size()) + ")",
                                "tools"));
    for (size_t i = 0; i < t->size(); ++i) {
      const json& tool = (*t)[i];
      const std::string at = "tools[" + std::to_string(i) + "]";
      if (!tool.is_object()) return f.fail(wrong_type(at, "an object", tool));
      auto type = tool.find("type");
      if (type == tool.end() || *type != json("function"))
        return f.fail(bad_request("'" + at + ".type' must be \"function\" (the only kind of tool)",
                                  at + ".type"));
      auto fn = tool.find("function");
      if (fn == tool.end() || !fn->is_object())
        return f.fail(
            wrong_type(at + ".function", "an object", fn == tool.end() ? json(nullptr) : *fn));
      ChatTool ct;
      auto name = fn->find("name");
      if (name == fn->end() || !name->is_string())
        return f.fail(
            bad_request("'" + at + ".function.name' must be a string", at + ".function.name"));
      ct.name = name->get<std::string>();
      if (!tool_name_ok(ct.name))
        return f.fail(bad_request("'" + at +
                                      ".function.name' must be 1 to 64 letters, digits, '_' or "
                                      "'-' (got \"" +
                                      ct.name.substr(0, 80) + "\")",
                                  at + ".function.name"));
      for (const ChatTool& before : r.tools)
        if (before.name == ct.name)
          return f.fail(bad_request("'" + at + ".function.name' repeats the tool name \"" +
                                        ct.name + "\": each tool's name is its own",
                                    at + ".function.name"));
      auto desc = fn->find("description");
      if (desc != fn->end() && !desc->is_null()) {
        if (!desc->is_string())
          return f.fail(wrong_type(at + ".function.description", "a string", *desc));
        ct.description = desc->get<std::string>();
      }
      auto strict = fn->find("strict");
      if (strict != fn->end() && !strict->is_null() && !strict->is_boolean())
        return f.fail(wrong_type(at + ".function.strict", "a boolean", *strict));
      // parameters: a JSON schema (absent: no arguments, so a forced call
      // writes {} rather than keys of its own). A forced call keeps to it
      // whether strict or not, so it must be one we can follow.
      json params = {
          {"type", "object"}, {"properties", json::object()}, {"additionalProperties", false}};
      auto p = fn->find("parameters");
      if (p != fn->end() && !p->is_null()) {
        if (!p->is_object())
          return f.fail(wrong_type(at + ".function.parameters", "an object (a JSON schema)", *p));
        params = *p;
      }
      if (auto c = compile_json_schema(params); !c)
        return f.fail(bad_request("'" + at + ".function.parameters': " + c.error().message,
                                  at + ".function.parameters"));
      ct.parameters = params.dump();
      r.tools.push_back(std::move(ct));
    }
  }
  r.tool_choice = r.tools.empty() ? ToolChoice::None : ToolChoice::Auto;
  if (const json* c = f.get("tool_choice")) {
    constexpr const char* kWant =
        "\"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": "
        "{\"name\": ...}}";
    if (c->is_string()) {
      const std::string s = c->get<std::string>();
      if (s == "none")
        r.tool_choice = ToolChoice::None;
      else if (s == "auto")
        r.tool_choice = r.tools.empty() ? ToolChoice::None : ToolChoice::Auto;
      else if (s == "required")
        r.tool_choice = ToolChoice::Required;
      else
        return f.fail(bad_request(
            "'tool_choice' must be " + std::string(kWant) + " (got \"" + s.substr(0, 40) + "\")",
            "tool_choice"));
    } else if (c->is_object()) {
      auto type = c->find("type");
      auto fn = c->find("function");
      // (Iterators of the two objects never compare: nlohmann throws.)
      const json* name = nullptr;
      if (fn != c->end() && fn->is_object())
        if (auto n = fn->find("name"); n != fn->end() && n->is_string()) name = &*n;
      if (type == c->end() || *type != json("function") || !name)
        return f.fail(bad_request("'tool_choice' must be " + std::string(kWant), "tool_choice"));
      r.tool_choice = ToolChoice::Named;
      r.tool_name = name->get<std::string>();
      bool given = false;
      for (const ChatTool& t : r.tools) given = given || t.name == r.tool_name;
      if (!given && !r.tools.empty())
        return f.fail(bad_request("'tool_choice' names the function \"" +
                                      r.tool_name.substr(0, 80) + "\", which 'tools' does not hold",
                                  "tool_choice"));
    } else {
      return f.fail(wrong_type("tool_choice", kWant, *c));
    }
    if (r.tools.empty() && r.tool_choice != ToolChoice::None)
      return f.fail(
          bad_request("'tool_choice' asks for a tool call, but 'tools' gives none", "tool_choice"));
  }
  // An auto answer may make several calls; false keeps its first
  // (tools/serve/tool_calls.h's answer_tool_calls()).
  f.boolean("parallel_tool_calls", r.parallel_tool_calls);
  if (f.error() || r.tools.empty()) return;
  if (r.json)
    return f.fail(bad_request(
        "'tools' with a JSON 'response_format' (or 'json_schema') is not supported: an answer "
        "is a tool call or follows the response format; send one",
        f.get("json_schema") ? "json_schema" : "response_format"));
  if (r.tool_choice != ToolChoice::Required && r.tool_choice != ToolChoice::Named) return;
  // A forced call: decoded under the call's schema, compiled once here.
  // The schema is of one call, so a forced answer is one call whatever
  // parallel_tool_calls says: a valid answer to both ("required" asks for
  // at least one call, a named function for a call of it), though OpenAI's
  // may hold several.
  const std::string* only = r.tool_choice == ToolChoice::Named ? &r.tool_name : nullptr;
  auto c = compile_json_schema(tool_call_schema(r.tools, only));
  // More tools than the automaton follows at once (16): the name is kept
  // to the tools' names, the arguments to an object.
  if (!c && !only) c = compile_json_schema(tool_call_schema_loose(r.tools));
  if (!c)
    return f.fail(
        bad_request("the tools' call schema cannot be followed: " + c.error().message, "tools"));
  r.json = true;
  r.json_schema = std::move(*c);
}

// Token ids from a JSON array (range checks against the vocabulary are the
// server's: it knows the model).
std::optional<ApiError> read_ids(const json& a, const char* field, std::vector<int32_t>& out) {
  for (const json& e : a) {
    if (!e.is_number_integer() && !e.is_number_unsigned())
      return wrong_type(std::string(field) + "[]", "an integer token id", e);
    const int64_t id =
        e.is_number_unsigned() && e.get<uint64_t>() > (1ull << 31) ? (1ll << 31) : e.get<int64_t>();
    if (id < 0 || id > std::numeric_limits<int32_t>::max())
      return bad_request("'" + std::string(field) + "' holds token id " + std::to_string(id) +
                             ", outside 0.." + std::to_string(std::numeric_limits<int32_t>::max()),
                         field);
    out.push_back(static_cast<int32_t>(id));
  }
  return std::nullopt;
}

// An assistant message's tool_calls: [{"id", "type": "function",
// "function": {"name", "arguments": JSON text}}].
std::optional<ApiError> read_tool_calls(const json& m, const std::string& at,
                                        std::vector<ChatToolCall>& out) {
  auto tc = m.find("tool_calls");
  if (tc == m.end() || tc->is_null()) return std::nullopt;
  if (!tc->is_array()) return wrong_type(at + ".tool_calls", "an array", *tc);
  for (size_t j = 0; j < tc->size(); ++j) {
    const json& c = (*tc)[j];
    const std::string cat = at + ".tool_calls[" + std::to_string(j) + "]";
    if (!c.is_object()) return wrong_type(cat, "an object", c);
    auto type = c.find("type");
    if (type != c.end() && !type->is_null() && *type != json("function"))
      return bad_request("'" + cat + ".type' must be \"function\"", cat + ".type");
    ChatToolCall call;
    auto id = c.find("id");
    if (id != c.end() && !id->is_null()) {
      if (!id->is_string()) return wrong_type(cat + ".id", "a string", *id);
      call.id = id->get<std::string>();
    }
    auto fn = c.find("function");
    if (fn == c.end() || !fn->is_object())
      return bad_request("'" + cat + ".function' must be an object {\"name\", \"arguments\"}",
                         cat + ".function");
    auto name = fn->find("name");
    if (name == fn->end() || !name->is_string())
      return bad_request("'" + cat + ".function.name' must be a string", cat + ".function.name");
    call.name = name->get<std::string>();
    // The arguments go into the prompt as they are: they must be JSON.
    auto args = fn->find("arguments");
    if (args == fn->end() || !args->is_string())
      return bad_request("'" + cat + ".function.arguments' must be a string of JSON",
                         cat + ".function.arguments");
    call.arguments = args->get<std::string>();
    const json parsed = json::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded() || !parsed.is_object())
      return bad_request("'" + cat + ".function.arguments' must hold a JSON object",
                         cat + ".function.arguments");
    out.push_back(std::move(call));
  }
  return std::nullopt;
}

}  // namespace

Parsed<GenerateRequest> parse_completion_request(std::string_view body,
                                                 const SamplerParams& defaults) {
  auto pj = parse_object(body);
  if (auto* e = std::get_if<ApiError>(&pj)) return *e;
  const json& j = std::get<json>(pj);
  GenerateRequest r;
  r.sampling = defaults;
  Fields f(j);
  const json* p = f.get("prompt");
  if (!p && !f.error()) return bad_request("'prompt' is required", "prompt");
  if (p) {
    // A string; an array of one string; an array of token ids.
    if (p->is_string()) {
      r.prompt = p->get<std::string>();
    } else if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) {
      r.prompt = (*p)[0].get<std::string>();
    } else if (p->is_array() && !p->empty() && (*p)[0].is_string()) {
      return bad_request("'prompt' holds " + std::to_string(p->size()) +
                             " prompts; this server takes one per request",
                         "prompt");
    } else if (p->is_array() && !p->empty() && (*p)[0].is_array()) {
      return bad_request("'prompt' as arrays of token arrays: one prompt per request", "prompt");
    } else if (p->is_array()) {
      if (auto e = read_ids(*p, "prompt", r.prompt_ids)) return *e;
      if (r.prompt_ids.empty()) return bad_request("'prompt' must not be empty", "prompt");
    } else {
      return wrong_type("prompt", "a string or an array of token ids", *p);
    }
    if (!p->is_array() && r.prompt.empty())
      return bad_request("'prompt' must not be empty", "prompt");
  }
  read_generate_fields(f, r);
  if (f.error()) return *f.error();
  return r;
}

Parsed<GenerateRequest> parse_chat_request(std::string_view body, const SamplerParams& defaults) {
  auto pj = parse_object(body);
  if (auto* e = std::get_if<ApiError>(&pj)) return *e;
  const json& j = std::get<json>(pj);
  GenerateRequest r;
  r.chat = true;
  r.sampling = defaults;
  Fields f(j);
  const json* ms = f.get("messages");
  if (!ms) return bad_request("'messages' is required", "messages");
  if (!ms->is_array()) return wrong_type("messages", "an array", *ms);
  if (ms->empty()) return bad_request("'messages' must hold at least one message", "messages");
  for (size_t i = 0; i < ms->size(); ++i) {
    const json& m = (*ms)[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return wrong_type(at, "an object", m);
    auto role = m.find("role");
    if (role == m.end() || !role->is_string())
      return bad_request("'" + at + ".role' must be a string", at + ".role");
    ChatMessage cm;
    cm.role = role->get<std::string>();
    if (cm.role == "developer") cm.role = "system";  // OpenAI's newer name for it
    if (cm.role != "system" && cm.role != "user" && cm.role != "assistant" && cm.role != "tool")
      return bad_request(
          "'" + at + ".role' must be system, user, assistant or tool (got '" + cm.role + "')",
          at + ".role");
    if (cm.role == "assistant")
      if (auto e = read_tool_calls(m, at, cm.tool_calls)) return *e;
    if (cm.role == "tool") {
      auto id = m.find("tool_call_id");
      if (id == m.end() || !id->is_string())
        return bad_request("'" + at + ".tool_call_id' must be a string (the call answered)",
                           at + ".tool_call_id");
      cm.tool_call_id = id->get<std::string>();
    }
    auto content = m.find("content");
    if (content == m.end() || content->is_null()) {
      // An assistant's tool calls stand for its content.
      if (cm.tool_calls.empty())
        return bad_request("'" + at + ".content' is required", at + ".content");
    } else if (content->is_string()) {
      cm.content = content->get<std::string>();
    } else if (content->is_array()) {
      // Content parts: text only.
      for (const json& part : *content) {
        auto type = part.is_object() ? part.find("type") : part.end();
        if (!part.is_object() || type == part.end() || *type != json("text"))
          return bad_request("'" + at +
                                 ".content' parts must be {\"type\": \"text\", ...}: "
                                 "text only",
                             at + ".content");
        auto text = part.find("text");
        if (text == part.end() || !text->is_string())
          return bad_request("'" + at + ".content[].text' must be a string", at + ".content");
        cm.content += text->get<std::string>();
      }
    } else {
      return wrong_type(at + ".content", "a string or an array of text parts", *content);
    }
    r.messages.push_back(std::move(cm));
  }
  read_generate_fields(f, r);
  read_tools(f, r);
  if (f.error()) return *f.error();
  return r;
}

Parsed<TokenizeRequest> parse_tokenize_request(std::string_view body) {
  auto pj = parse_object(body);
  if (auto* e = std::get_if<ApiError>(&pj)) return *e;
  const json& j = std::get<json>(pj);
  TokenizeRequest r;
  Fields f(j);
  const json* c = f.get("content");
  if (!c) return bad_request("'content' is required", "content");
  if (!c->is_string()) return wrong_type("content", "a string", *c);
  r.content = c->get<std::string>();
  f.boolean("add_special", r.add_special);
  f.boolean("parse_special", r.parse_special);
  if (f.error()) return *f.error();
  return r;
}

Parsed<DetokenizeRequest> parse_detokenize_request(std::string_view body) {
  auto pj = parse_object(body);
  if (auto* e = std::get_if<ApiError>(&pj)) return *e;
  const json& j = std::get<json>(pj);
  DetokenizeRequest r;
  auto t = j.find("tokens");
  if (t == j.end() || t->is_null()) return bad_request("'tokens' is required", "tokens");
  if (!t->is_array()) return wrong_type("tokens", "an array of token ids", *t);
  if (auto e = read_ids(*t, "tokens", r.tokens)) return *e;
  return r;
}

}  // namespace ls
