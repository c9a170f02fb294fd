// JSON-schema constrained decoding: the compiler (model/json_schema.h)
// refuses what it does not support by keyword and JSON pointer, and the
// byte automaton (model/json_schema_grammar.h) accepts exactly the
// documents a schema allows (a table of schemas against a validator written
// here, independent of the automaton), and never reaches a dead end: every
// prefix it accepts, found by random walks over its own choices and by
// cutting valid documents, is completed by a bounded search to a document
// that parses (nlohmann) and validates.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/json_constraint.h"
#include "model/json_number_bounds.h"
#include "model/json_schema.h"
#include "model/json_schema_nfa.h"
#include "model/unicode.h"

using namespace ls;
using nlohmann::json;

namespace {

std::shared_ptr<const JsonSchema> compiled(const std::string& schema) {
  auto s = compile_json_schema(std::string_view(schema));
  INFO("schema: " << schema);
  REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
  return *s;
}

std::string compile_error(const std::string& schema) {
  auto s = compile_json_schema(std::string_view(schema));
  return s ? std::string("(compiled)") : s.error().message;
}

bool accepts(const JsonSchema& s, const std::string& doc) {
  JsonSchemaNfa g(s);
  return g.feed(doc) && g.complete();
}

// ---- A validator for the subset, over parsed values (not bytes). ----------

// UTF-8 to code points, one wchar_t (32 bits here) each.
std::wstring wide(const std::string& s) {
  std::wstring w;
  for (size_t i = 0; i < s.size();) {
    const Utf8Char c = utf8_next(s, i);
    w.push_back(static_cast<wchar_t>(c.cp));
    i += c.len;
  }
  return w;
}

size_t code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool valid(const json& v, const json& schema, const json& root);

// The formats, by regular expression and the calendar (not the automaton's way).
bool leap(int y) {
  return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}
bool date_ok(const std::string& d) {
  static const std::regex re(R"(^(\d{4})-(\d{2})-(\d{2})$)");
  std::smatch m;
  if (!std::regex_match(d, m, re)) return false;
  const int y = std::stoi(m[1]), mo = std::stoi(m[2]), da = std::stoi(m[3]);
  static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (mo < 1 || mo > 12) return false;
  return da >= 1 && da <= days[mo - 1] + (mo == 2 && leap(y));
}
bool time_ok(const std::string& t) {
  static const std::regex re(
      R"(^([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$)");
  return std::regex_match(t, re);
}
bool format_ok(const std::string& f, const std::string& v) {
  if (f == "date") return date_ok(v);
  if (f == "time") return time_ok(v);
  if (f == "date-time") {
    const size_t t = v.find('T');
    return t != std::string::npos && date_ok(v.substr(0, t)) && time_ok(v.substr(t + 1));
  }
  static const std::regex uuid(R"(^[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$)");
  return f == "uuid" && std::regex_match(v, uuid);
}

bool valid_ref(const json& v, const std::string& ref, const json& root) {
  return valid(v, root.at(json::json_pointer(ref.substr(1))), root);
}

bool type_ok(const json& v, const std::string& t) {
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "number") return v.is_number();
  // A whole number too big for an int64 parses as a double.
  if (t == "integer")
    return v.is_number_integer() ||
           (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  return false;
}

bool valid(const json& v, const json& s, const json& root) {
  if (s.is_boolean()) return s.get<bool>();
  if (s.contains("$ref")) return valid_ref(v, s["$ref"], root);
  for (const char* k : {"anyOf", "oneOf"})
    if (s.contains(k)) {
      int n = 0;
      for (const auto& b : s[k]) n += valid(v, b, root);
      return std::string(k) == "anyOf" ? n >= 1 : n == 1;
    }
  if (s.contains("type")) {
    bool any = false;
    if (s["type"].is_string())
      any = type_ok(v, s["type"]);
    else
      for (const auto& t : s["type"]) any = any || type_ok(v, t);
    if (!any) return false;
  }
  if (s.contains("const") && v != s["const"]) return false;
  if (s.contains("enum")) {
    bool in = false;
    for (const auto& e : s["enum"]) in = in || e == v;
    if (!in) return false;
  }
  if (v.is_number()) {
    // Compared as doubles, as a client's validator does.
    const double x = v.get<double>();
    if (s.contains("minimum") && !(x >= s["minimum"].get<double>())) return false;
    if (s.contains("maximum") && !(x <= s["maximum"].get<double>())) return false;
    if (s.contains("exclusiveMinimum") && !(x > s["exclusiveMinimum"].get<double>())) return false;
    if (s.contains("exclusiveMaximum") && !(x < s["exclusiveMaximum"].get<double>())) return false;
    if (s.contains("multipleOf") && std::fmod(x, s["multipleOf"].get<double>()) != 0) return false;
  }
  if (v.is_string()) {
    if (s.contains("format") && !format_ok(s["format"], v.get<std::string>())) return false;
    // std::wregex over code points: an ECMAScript implementation apart from the automaton's.
    if (s.contains("pattern") &&
        !std::regex_search(wide(v.get<std::string>()),
                           std::wregex(wide(s["pattern"].get<std::string>()))))
      return false;
    const size_t n = code_points(v.get<std::string>());
    if (s.contains("minLength") && n < s["minLength"].get<size_t>()) return false;
    if (s.contains("maxLength") && n > s["maxLength"].get<size_t>()) return false;
  }
  if (v.is_array()) {
    if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) return false;
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) return false;
    if (s.contains("items"))
      for (const auto& e : v)
        if (!valid(e, s["items"], root)) return false;
  }
  if (v.is_object()) {
    if (s.contains("required"))
      for (const auto& r : s["required"])
        if (!v.contains(r.get<std::string>())) return false;
    for (const auto& [k, e] : v.items()) {
      if (s.contains("properties") && s["properties"].contains(k)) {
        if (!valid(e, s["properties"][k], root)) return false;
      } else if (s.contains("additionalProperties")) {
        if (!valid(e, s["additionalProperties"], root)) return false;
      }
    }
  }
  return true;
}

// ---- Completion search: no dead ends. --------------------------------------

// Bytes a completion tries, closers and short values first so that the
// search mostly walks straight to the end.
std::string completion_alphabet() {
  std::string a = "\"}]01ntf:,";
  for (int c = 0x20; c < 0x7F; ++c)
    if (a.find(static_cast<char>(c)) == std::string::npos) a += static_cast<char>(c);
  return a + "\xC3\xA9";  // a UTF-8 lead and continuation byte
}

// The pieces a completion tries, in order: closers; each property name the
// schema declares, with its colon (a search begins keys only with these, so
// that it does not wander through the keys additionalProperties allows);
// each enum value; then single bytes, short values first.
// The keys of objects within an enum value (written one piece at a time too).
void value_keys(const json& v, std::vector<std::string>& keys) {
  if (v.is_object())
    for (const auto& [k, e] : v.items()) keys.push_back(json(k).dump() + ":");
  if (v.is_object() || v.is_array())
    for (const auto& e : v) value_keys(e, keys);
}

void schema_pieces(const json& s, std::vector<std::string>& keys,
                   std::vector<std::string>& values) {
  if (s.is_object()) {
    if (s.contains("properties") && s["properties"].is_object())
      for (const auto& [k, v] : s["properties"].items()) keys.push_back(json(k).dump() + ":");
    json listed = s.value("enum", json::array());
    if (s.contains("const")) listed.push_back(s["const"]);
    for (const auto& v : listed) {
      values.push_back(v.dump());
      value_keys(v, keys);
    }
  }
  if (s.is_object() || s.is_array())
    for (const auto& v : s) schema_pieces(v, keys, values);
}

// Closers (4), then key pieces (up to *n_keys), then values and bytes.
std::vector<std::string> completion_pieces(const json& schema, size_t* n_keys) {
  std::vector<std::string> p = {"\"", "}", "]", ","}, values;
  schema_pieces(schema, p, values);
  // A key no schema declares, for objects that take other keys (after a
  // ',' such an object needs one), once per object as the others.
  p.push_back("\"zq\"");
  std::sort(p.begin() + 4, p.end());
  p.erase(std::unique(p.begin() + 4, p.end()), p.end());
  *n_keys = p.size();
  REQUIRE(p.size() <= 64);
  p.insert(p.end(), values.begin(), values.end());
  for (char c : completion_alphabet())
    if (c != '"' && c != '}' && c != ']' && c != ',') p.emplace_back(1, c);
  return p;
}

// Where a text stands lexically, enough to tell a key's opening quote, and
// which key pieces each open object has had.
struct Lex {
  std::string stack;           // '{' or '[' per open container
  std::vector<uint64_t> keys;  // per open container: the key pieces written (a bit each)
  bool in_string = false, escape = false, expect_key = false;

  // Reads c; false if it opens a key.
  bool read(char c) {
    if (in_string) {
      if (escape)
        escape = false;
      else if (c == '\\')
        escape = true;
      else if (c == '"')
        in_string = false;
      return true;
    }
    switch (c) {
      case '{':
      case '[':
        stack += c;
        keys.push_back(0);
        expect_key = c == '{';
        return true;
      case '}':
      case ']':
        if (!stack.empty()) stack.pop_back(), keys.pop_back();
        expect_key = false;
        return true;
      case ',':
        expect_key = !stack.empty() && stack.back() == '{';
        return true;
      case '"': {
        in_string = true;
        const bool key = expect_key;
        expect_key = false;
        return !key;
      }
      default:
        return true;
    }
  }
};

// Depth-first search for pieces that complete g (within max_len more
// pieces and budget trials); the document if found. Keys are begun only
// with a declared name (pieces[i] for i < n_keys), once per object: where
// other keys are allowed the search could otherwise go on writing them.
bool complete_from(const JsonSchemaNfa& g, const Lex& lex, const std::vector<std::string>& pieces,
                   size_t n_keys, std::string& out, size_t max_len, long& budget) {
  if (g.complete()) return true;
  if (max_len == 0 || budget <= 0) return false;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const std::string& p = pieces[i];
    const bool key = i >= 4 && i < n_keys;
    if (--budget <= 0) return false;
    if (key && (lex.keys.empty() || (lex.keys.back() >> i & 1))) continue;
    Lex l = lex;
    bool opens_key = false;
    for (char c : p) opens_key |= !l.read(c);
    if (opens_key && !key) continue;
    if (key) l.keys.back() |= uint64_t{1} << i;
    JsonSchemaNfa h = g;
    if (!h.feed(p)) continue;
    out += p;
    if (complete_from(h, l, pieces, n_keys, out, max_len - 1, budget)) return true;
    out.resize(out.size() - p.size());
  }
  return false;
}

// A prefix the automaton accepts must complete to a valid document.
void check_completes(const JsonSchemaNfa& g, const std::string& prefix, const json& schema) {
  std::string rest;
  long budget = 200000;
  CAPTURE(prefix);
  CAPTURE(schema.dump());
  size_t n_keys = 0;
  const std::vector<std::string> pieces = completion_pieces(schema, &n_keys);
  Lex lex;
  for (char c : prefix) lex.read(c);
  REQUIRE_MESSAGE(complete_from(g, lex, pieces, n_keys, rest, 300, budget), "a dead end");
  const std::string doc = prefix + rest;
  CAPTURE(doc);
  REQUIRE(json::accept(doc));
  CHECK(valid(json::parse(doc), schema, schema));
}

// ---- Random schemas and their documents. -----------------------------------

// Patterns for strings, with values that match them (of 2 characters
// for the first two, which may stand beside lengths); patterns that a
// completion search finishes by trying closers and short bytes first.
struct PatternSamples {
  const char* pattern;
  std::vector<const char*> samples;
};
const PatternSamples kPatterns[] = {
    {"^[a-z]+$", {"ab", "xy"}},
    {"^[^\"\\\\]{2,}$", {"ab", "\xC3\xA9t", "a "}},
    {"^[A-Z]{2}[0-9]{2}$", {"AB12", "ZZ00"}},
    {"^\\d+(\\.\\d+)?$", {"1", "12.5", "0.25"}},
    {"^(?:ab)+$", {"ab", "abab"}},
    {"^\\d", {"1", "9 lives"}},
    {"^[a-z\xC3\xA9]{1,3}$", {"\xC3\xA9", "a\xC3\xA9z"}},
};

const char* const kNames[] = {"a", "ab", "abc", "b", "name", "q\"x", "\xC3\xA9t\xC3\xA9", "n/~"};

json random_schema(std::mt19937& rng, int depth, bool with_ref) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const int kind = depth <= 0 ? pick(7) : pick(13);
  switch (kind) {
    case 0: {
      json s = {{"type", "string"}};
      if (pick(4) == 0) {
        const char* const formats[] = {"date", "time", "date-time", "uuid"};
        s["format"] = formats[pick(4)];
        return s;
      }
      const int pattern = pick(2) ? -1 : pick(static_cast<int>(std::size(kPatterns)));
      if (pattern >= 0) s["pattern"] = kPatterns[pattern].pattern;
      // Lengths beside the patterns whose strings may have 2 to 3 characters.
      if (pattern > 1) return s;
      if (pick(2)) s["minLength"] = pick(3);
      if (pick(2)) s["maxLength"] = 3 + pick(4);
      return s;
    }
    case 1:
    case 2: {
      // Bounds on a grid of quarters (integers: whole), each side absent,
      // closed or open, the range never empty.
      const bool integer = kind == 1;
      json s = {{"type", integer ? "integer" : "number"}};
      const int lo = pick(41) - 20, width = (integer ? 2 : 1) + pick(12);
      const double q = integer ? 1.0 : 0.25;
      if (pick(3)) s[pick(2) ? "minimum" : "exclusiveMinimum"] = integer ? json(lo) : json(lo * q);
      if (pick(3))
        s[pick(2) ? "maximum" : "exclusiveMaximum"] =
            integer ? json(lo + width) : json((lo + width) * q);
      // A step of 1-3 where the range holds a multiple of it for sure: at
      // least three whole numbers inside (integers, open ends or not), or
      // no bounds.
      const bool bounded = s.contains("minimum") || s.contains("exclusiveMinimum") ||
                           s.contains("maximum") || s.contains("exclusiveMaximum");
      if (pick(3) == 0 && ((integer && width >= 5) || !bounded)) s["multipleOf"] = 1 + pick(3);
      return s;
    }
    case 3:
      return {{"type", pick(2) ? "boolean" : "null"}};
    case 4:
      return {{"enum",
               {"red", "re", "a\"b", 1, 12, -3.5, nullptr, true, json::array({1, 2}),
                json{{"k", "v"}}}}};
    case 5:
      return {{"type", json::array({"string", "null"})}, {"maxLength", 2}};
    case 6:
      return with_ref ? json{{"$ref", "#/$defs/node"}} : json{{"const", "x\ny"}};
    case 7:
    case 8: {
      json s = {{"type", "object"}, {"properties", json::object()}};
      json req = json::array();
      const int n = pick(4);
      for (int i = 0; i < n; ++i) {
        const std::string k = kNames[pick(8)];
        s["properties"][k] = random_schema(rng, depth - 1, with_ref);
        if (pick(2)) req.push_back(k);
      }
      json unique_req = json::array();
      for (const auto& r : req)
        if (std::find(unique_req.begin(), unique_req.end(), r) == unique_req.end())
          unique_req.push_back(r);
      s["required"] = unique_req;
      const int ap = pick(4);
      if (ap == 0) s["additionalProperties"] = false;
      if (ap == 1) s["additionalProperties"] = {{"type", "integer"}};
      return s;
    }
    case 9: {
      json s = {{"type", "array"}, {"items", random_schema(rng, depth - 1, with_ref)}};
      const int lo = pick(3);
      if (pick(2)) s["minItems"] = lo;
      if (pick(2)) s["maxItems"] = lo + pick(3);
      return s;
    }
    case 10:
      return {{"anyOf", {random_schema(rng, depth - 1, with_ref), {{"type", "null"}}}}};
    case 11:
      // Branches that may begin alike (two objects, two numbers, ...):
      // the automaton follows both.
      return {{"anyOf",
               {random_schema(rng, depth - 1, with_ref), random_schema(rng, depth - 1, with_ref)}}};
    default:
      return json::object();  // any value
  }
}

// A random valid value of a schema (nullopt-free: every random schema above
// has one), drawn within depth.
json random_value(std::mt19937& rng, const json& s, const json& root, int depth) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  if (s.contains("$ref")) {
    return random_value(rng, root.at(json::json_pointer(s["$ref"].get<std::string>().substr(1))),
                        root, depth - 1);
  }
  if (s.contains("anyOf")) {
    const json& b =
        s["anyOf"][depth <= 0 ? s["anyOf"].size() - 1 : pick(static_cast<int>(s["anyOf"].size()))];
    return random_value(rng, b, root, depth);
  }
  if (s.contains("enum")) return s["enum"][pick(static_cast<int>(s["enum"].size()))];
  if (s.contains("const")) return s["const"];
  if (!s.contains("type")) {  // any value
    const json any[] = {1, "s", nullptr, json::array({true}), json{{"z", 2.5}}};
    return any[pick(5)];
  }
  std::string t =
      s["type"].is_string() ? s["type"].get<std::string>() : s["type"][pick(2)].get<std::string>();
  if (t == "string" && s.contains("format")) {
    auto two = [&](int lo, int hi) {
      const int v = lo + pick(hi - lo + 1);
      return std::string(1, static_cast<char>('0' + v / 10)) + static_cast<char>('0' + v % 10);
    };
    auto date = [&] {
      const int y = pick(10000), mo = 1 + pick(12);
      static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
      char b[32];  // (room for any two ints: GCC checks the format, not the ranges)
      std::snprintf(b, sizeof b, "%04d-%02d-", y, mo);
      return b + two(1, days[mo - 1] + (mo == 2 && leap(y)));
    };
    auto time = [&] {
      std::string t = two(0, 23) + ":" + two(0, 59) + ":" + two(0, 59);
      if (pick(2)) t += "." + std::to_string(pick(1000));
      return t + (pick(2) ? std::string("Z")
                          : std::string(pick(2) ? "+" : "-") + two(0, 23) + ":" + two(0, 59));
    };
    const std::string f = s["format"];
    if (f == "date") return date();
    if (f == "time") return time();
    if (f == "date-time") return date() + "T" + time();
    std::string u;
    for (int i = 0; i < 36; ++i)
      u += i == 8 || i == 13 || i == 18 || i == 23 ? '-' : "0123456789abcdefABCDEF"[pick(22)];
    return u;
  }
  if (t == "string" && s.contains("pattern")) {
    for (const PatternSamples& p : kPatterns)
      if (s["pattern"] == p.pattern)
        for (;;) {
          const json v = p.samples[static_cast<size_t>(pick(static_cast<int>(p.samples.size())))];
          if (valid(v, s, root)) return v;
        }
  }
  if (t == "string") {
    const size_t lo = s.value("minLength", 0), hi = s.value("maxLength", 6);
    const size_t n = lo + (hi > lo ? pick(static_cast<int>(hi - lo + 1)) : 0);
    const char* const chars[] = {"a", "\"", "\\", "\n", "\xC3\xA9", "\xF0\x9F\x98\x80", "z"};
    std::string v;
    for (size_t i = 0; i < n; ++i) v += chars[pick(7)];
    return v;
  }
  if (t == "integer" || t == "number") {
    // Draw until inside the bounds (they leave a range of at least one
    // quarter, or one integer, within [-25, 25]).
    const bool bounded = s.contains("minimum") || s.contains("maximum") ||
                         s.contains("exclusiveMinimum") || s.contains("exclusiveMaximum");
    for (;;) {
      json v = t == "integer" ? json(pick(2000) - 1000)
                              : (pick(2) ? json(pick(100)) : json(pick(1000) / 8.0 - 50));
      if (bounded) v = t == "integer" ? json(pick(51) - 25) : json(pick(401) / 8.0 - 25);
      if (valid(v, s, root)) return v;
    }
  }
  if (t == "boolean") return pick(2) == 1;
  if (t == "null") return nullptr;
  if (t == "array") {
    const int lo = s.value("minItems", 0), hi = s.value("maxItems", lo + 2);
    const int n = depth <= 0 ? lo : lo + pick(hi - lo + 1);
    json a = json::array();
    for (int i = 0; i < n; ++i) a.push_back(random_value(rng, s["items"], root, depth - 1));
    return a;
  }
  json o = json::object();
  for (const auto& [k, v] : s["properties"].items()) {
    const bool req =
        std::find(s["required"].begin(), s["required"].end(), k) != s["required"].end();
    if (req || (depth > 0 && pick(2))) o[k] = random_value(rng, v, root, depth - 1);
  }
  return o;
}

// The recursive definition random schemas may refer to: a tree whose
// children are optional.
json with_defs(json s) {
  if (!s.is_object()) return s;
  s["$defs"] = {
      {"node",
       {{"type", "object"},
        {"properties",
         {{"v", {{"type", "integer"}}},
          {"kids", {{"type", "array"}, {"items", {{"$ref", "#/$defs/node"}}}, {"maxItems", 2}}}}},
        {"required", {"v"}},
        {"additionalProperties", false}}}};
  return s;
}

}  // namespace

TEST_CASE("json schema: unsupported keywords are refused by name and JSON pointer") {
  struct Case {
    const char* schema;
    const char* message;
  };
  const Case cases[] = {
      {R"x({"type":"object","properties":{"name":{"type":"string","pattern":"a(?=b)"}}})x",
       "json schema: 'pattern' at /properties/name: lookahead '(?=' at character 2 is not "
       "supported"},
      {R"({"type":"object","properties":{"name":{"type":"string","propertyNames":{}}}})",
       "json schema: 'propertyNames' at /properties/name is not supported"},
      {R"({"type":"array","items":{"type":"number","multipleOf":0.01}})",
       "json schema: 'multipleOf' at /items is 0.01; only whole numbers from 1 to 2^53 are "
       "supported"},
      {R"({"type":"integer","multipleOf":0})",
       "json schema: 'multipleOf' at the top level must be a number above 0"},
      {R"({"type":"integer","minimum":1,"maximum":4,"multipleOf":5})",
       "json schema: no JSON value matches the schema"},
      {R"({"type":"number","minimum":0,"exclusiveMinimum":true})",
       "json schema: 'exclusiveMinimum' at the top level must be a number (draft 4's boolean"},
      {R"({"type":"number","maximum":1e30})",
       "json schema: 'maximum' at the top level is 1e+30; bounds beyond 1e20 in magnitude"},
      {R"({"type":"integer","minimum":0.2,"maximum":0.8})",
       "json schema: no JSON value matches the schema"},
      {R"({"type":"number","exclusiveMinimum":1,"maximum":1})",
       "json schema: no JSON value matches the schema"},
      {R"({"type":"string","format":"idn-hostname"})",
       "json schema: 'format' \"idn-hostname\" at the top level is not supported (date, time, "
       "date-time, uuid, email"},
      {R"({"type":"string","format":"date","maxLength":8})",
       "json schema: 'maxLength' beside 'format' at the top level is not supported"},
      {R"({"allOf":[{"type":"string"}]})",
       "json schema: 'allOf' at the top level is not supported"},
      {R"({"type":"object","patternProperties":{"a":{}}})",
       "json schema: 'patternProperties' at the top level is not supported"},
      {R"({"prefixItems":[{"type":"string"}]})",
       "json schema: 'prefixItems' at the top level is not supported"},
      {R"({"$defs":{"a~b/c":{"type":"number","propertyNames":{}}},"$ref":"#/$defs/a~0b~1c"})",
       "json schema: 'propertyNames' at /$defs/a~0b~1c is not supported"},
      {R"({"oneOf":[{"type":"object","properties":{"a":{}}},{"type":"object"}]})",
       "json schema: 'oneOf' at the top level has two branches that can both be an object"},
      {R"({"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"},{"type":"null"}]}},"$ref":"#/$defs/a"})",
       "json schema: the schema at the top level refers back to itself before reading a value"},
      {R"({"oneOf":[{"type":"integer"},{"type":"number"}]})",
       "json schema: 'oneOf' at the top level has two branches that can both be a number"},
      // Objects whose tags meet ("b" in both), or one branch's tag not required.
      {R"({"oneOf":[{"type":"object","properties":{"k":{"enum":["a","b"]}},"required":["k"]},
                    {"type":"object","properties":{"k":{"const":"b"}},"required":["k"]}]})",
       "json schema: 'oneOf' at the top level has two branches that can both be an object"},
      {R"({"oneOf":[{"type":"object","properties":{"k":{"const":"a"}},"required":["k"]},
                    {"type":"object","properties":{"k":{"const":"b"}}}]})",
       "json schema: 'oneOf' at the top level has two branches that can both be an object"},
      {R"({"oneOf":[{"type":"null"}],"discriminator":"k"})",
       "json schema: 'discriminator' at the top level must be an object with a string "
       "'propertyName'"},
      {R"({"oneOf":[{"enum":["a"]},{"type":"string"}]})",
       "json schema: 'oneOf' at the top level has two branches that can both be a string"},
      {R"({"$ref":"https://example.com/s.json"})",
       "json schema: '$ref' at the top level is 'https://example.com/s.json'; only references"},
      {R"({"$ref":"#/$defs/missing"})",
       "json schema: '$ref' at the top level is '#/$defs/missing', which is not in the schema"},
      {R"({"type":"object","properties":{"a":{}},"required":["b"]})",
       "json schema: 'required' at the top level names 'b', which is not in 'properties'"},
      {R"({"type":"strin"})", "json schema: 'type' at the top level names 'strin'"},
      {R"({"type":"string","minLength":-1})",
       "json schema: 'minLength' at the top level must be a non-negative integer"},
      {R"({"type":"string","minLength":3,"maxLength":2})",
       "json schema: no JSON value matches the schema"},
      {R"({"enum":["a",1],"type":"boolean"})",
       "json schema: 'enum' at the top level allows no value"},
      {R"({"$ref":"#/$defs/a","type":"object","$defs":{"a":{}}})",
       "json schema: 'type' beside '$ref' at the top level is not supported"},
      {R"({"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})",
       "json schema: no JSON value matches the schema"},
      {R"({"type":"object","properties":{"x":{"if":{}}}})",
       "json schema: 'if' at /properties/x is not supported"},
      {R"({"type":"object","properties":{"x":{"not":{}}}})",
       "json schema: 'not' at /properties/x is not supported"},
      {R"({"type":"array","items":[{}]})", "json schema: 'items' at the top level as a list"},
      {R"({"enum":[1e300]})", "json schema: the 'enum' value 1e+300 at the top level is beyond"},
      {"{", "json schema: not JSON"},
  };
  for (const Case& c : cases) {
    CAPTURE(std::string(c.schema));
    const std::string e = compile_error(c.schema);
    CHECK_MESSAGE(e.rfind(c.message, 0) == 0, e);
  }
  // anyOf of 17 objects leaves 17 paths open at '{'.
  json many = {{"anyOf", json::array()}};
  for (int i = 0; i < 17; ++i) many["anyOf"].push_back({{"type", "object"}});
  CHECK(compile_error(many.dump())
            .rfind("json schema: anyOf at the top level leaves more than 16 branches open", 0) ==
        0);
  many["anyOf"].erase(0);
  CHECK(compile_error(many.dump()) == "(compiled)");
  // Annotations are not refused.
  CHECK(compile_error(R"({"title":"T","description":"d","$schema":"x","$id":"y","default":1,)"
                      R"("examples":[1],"type":"integer"})") == "(compiled)");
}

TEST_CASE("json schema: the automaton accepts the valid documents of each schema, and only them") {
  struct Case {
    const char* schema;
    std::vector<const char*> good, bad;
  };
  const std::vector<Case> cases = {
      // Nested objects, required and optional keys, no other keys; any order.
      {R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},
           "addr":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],
                   "additionalProperties":false}},
          "required":["name","addr"],"additionalProperties":false})",
       {R"({"name":"x","addr":{"city":"y"}})", R"({"addr":{"city":""},"age":-3,"name":"x"})",
        R"({ "name" : "x" , "addr" : { "city" : "y" } })"},
       {R"({"name":"x"})", R"({"name":"x","addr":{}})", R"({"name":"x","addr":{"city":"y"},"z":1})",
        R"({"name":"x","name":"y","addr":{"city":"y"}})",
        R"({"name":"x","addr":{"city":"y"},"age":1.5})", R"({"name":1,"addr":{"city":"y"}})",
        R"({"nam":"x","addr":{"city":"y"}})", R"([])",
        R"({"name":"x","addr":{"city":"y"},"age":1e3})"}},
      // Arrays with bounds.
      {R"({"type":"array","items":{"type":"number"},"minItems":2,"maxItems":3})",
       {"[1,2]", "[1.5,-2e3,0]", "[ 1 , 2 ]"},
       {"[]", "[1]", "[1,2,3,4]", R"([1,"2"])"}},
      // Enums of any value, in compact form.
      {R"({"enum":["red","green",12,null,[1,2],{"k":true}]})",
       {R"("red")", R"("green")", "12", "null", "[1,2]", R"({"k":true})"},
       {R"("re")", R"("blue")", "1", "123", "[1, 2]", "true", R"({"k":false})"}},
      {R"({"const":"a\"b"})", {R"("a\"b")"}, {R"("a\u0022b")", R"("ab")"}},
      // Nullable.
      {R"({"anyOf":[{"type":"object","properties":{"a":{"type":"boolean"}},"required":["a"]},
                    {"type":"null"}]})",
       {"null", R"({"a":true})", R"({"a":false,"b":[1,{}]})"},
       {"{}", R"({"a":null})", "nul", "false"}},
      // A discriminated union (pydantic's form, its OpenAPI note beside):
      // oneOf over objects that differ in a required tag.
      {R"({"$defs":{"Cat":{"type":"object","properties":{"pet_type":{"const":"cat","type":"string"},
                                                          "meows":{"type":"integer"}},
                           "required":["pet_type","meows"],"additionalProperties":false},
                    "Dog":{"type":"object","properties":{"pet_type":{"const":"dog","type":"string"},
                                                          "barks":{"type":"number"}},
                           "required":["pet_type","barks"],"additionalProperties":false}},
           "oneOf":[{"$ref":"#/$defs/Cat"},{"$ref":"#/$defs/Dog"}],
           "discriminator":{"propertyName":"pet_type",
                            "mapping":{"cat":"#/$defs/Cat","dog":"#/$defs/Dog"}}})",
       {R"({"pet_type":"cat","meows":3})", R"({"barks":1.5,"pet_type":"dog"})"},
       {R"({"pet_type":"cat","barks":1.5})", R"({"pet_type":"bird","meows":1})", R"({"meows":1})",
        R"({"pet_type":"dog","meows":1,"barks":2})"}},
      // Tags as enums, other keys allowed.
      {R"({"oneOf":[{"type":"object","properties":{"k":{"enum":["a","b"]}},"required":["k"]},
                    {"type":"object","properties":{"k":{"enum":["c"]},"x":{"type":"integer"}},
                     "required":["k","x"]}]})",
       {R"({"k":"a"})", R"({"k":"b","z":[1]})", R"({"x":2,"k":"c"})"},
       {R"({"k":"c"})", R"({"k":"d"})", "{}", R"({"k":"c","x":"2"})"}},
      {R"({"type":["string","null"],"maxLength":2})",
       {R"("ab")", "null", R"("é😀")"},
       {R"("abc")", "1"}},
      // Strings: lengths in characters (an escape, a UTF-8 character and a
      // surrogate pair are one each).
      {R"({"type":"string","minLength":2,"maxLength":3})",
       {R"("ab")", R"("\n\u00e9")", R"("\ud83d\ude00ab")", "\"\xC3\xA9\xC3\xA9\xC3\xA9\""},
       {R"("a")", R"("abcd")", R"("\ud83d\ude00")", R"("\u00e9\u00e9\u00e9\u00e9")"}},
      // Integer against number.
      {R"({"type":"integer"})", {"0", "-12", "1234567"}, {"1.0", "1e2", "-", "\"1\""}},
      {R"({"type":"number"})", {"0", "-1.5", "2E-3"}, {"01", "1.", "null"}},
      // Bounds: exact decimals, either side open or closed; no exponent under them.
      {R"({"type":"integer","minimum":1,"maximum":12})",
       {"1", "12", "7"},
       {"0", "13", "-1", "1.5", "100", "1e1", "-0"}},
      {R"({"type":"integer","minimum":10,"maximum":20})", {"10", "15", "20"}, {"3", "21", "9"}},
      {R"({"type":"integer","exclusiveMaximum":-2})",
       {"-3", "-100", "-123456789012"},
       {"-2", "0", "5", "-2.5"}},
      {R"({"type":"integer","minimum":2.5,"maximum":3.5})", {"3"}, {"2", "4", "3.0"}},
      {R"({"type":"number","exclusiveMinimum":0,"maximum":1})",
       {"0.5", "1", "0.000001", "1.000", "0.99999999999999999999"},
       {"0", "-0.5", "1.0001", "1e-3", "2", "0.0", "-0"}},
      {R"({"type":"number","minimum":0.3,"maximum":0.3})",
       {"0.3", "0.30", "0.300000"},
       {"0.29", "0.31", "0.3000000000000001", "3e-1"}},
      {R"({"type":"number","minimum":-1.5,"exclusiveMaximum":-1})",
       {"-1.5", "-1.25", "-1.0000001"},
       {"-1", "-1.6", "-1.0", "1"}},
      {R"({"type":["number","null"],"minimum":0})", {"null", "0", "3.25", "-0"}, {"-0.5", "-1"}},
      // multipleOf (whole numbers): its multiples only, within the bounds; a
      // number may write them with zeros after the point.
      // Within +-2^53, where a validator dividing in doubles agrees.
      {R"({"type":"integer","multipleOf":3})",
       {"0", "3", "-6", "9007199254740990", "-9007199254740990", "-0"},
       {"1", "4", "-7", "3.0", "1e3", "9007199254740993", "300000000000000000000"}},
      {R"({"type":"integer","multipleOf":5,"minimum":-12,"exclusiveMaximum":20})",
       {"-10", "0", "15"},
       {"-15", "20", "-12", "7"}},
      {R"({"type":"number","multipleOf":4,"minimum":1.5,"maximum":9})",
       {"4", "8", "8.000", "4.0"},
       {"0", "12", "6", "4.5", "8.0001"}},
      {R"({"type":"integer","multipleOf":1000000000000000})",
       {"0", "1000000000000000", "-9000000000000000"},
       {"1", "999999999999999", "1000000000000001", "10000000000000000"}},
      // An open bound holds after a validator rounds to double: 0.25 minus
      // 1e-40 rounds to 0.25, so it is not written under exclusiveMaximum 0.25.
      {R"({"type":"number","exclusiveMaximum":0.25})",
       {"0.2499999999999999", "-3"},
       {"0.25", "0.2500000000000000000000000000000000000001", "0.24999999999999999999999"}},
      {R"({"type":"number","minimum":1e-25,"maximum":2e-25})",
       {"0.0000000000000000000000001", "0.00000000000000000000000015"},
       {"0", "0.000000000000000000000001"}},
      {R"({"type":"number","minimum":-20,"maximum":1e20})",
       {"100000000000000000000", "-20", "123.456"},
       {"100000000000000000001", "-20.5"}},
      // Recursion through $defs (pydantic's shape) and #/definitions.
      {R"({"$defs":{"Node":{"type":"object","properties":{"v":{"type":"integer"},
            "next":{"anyOf":[{"$ref":"#/$defs/Node"},{"type":"null"}]}},"required":["v","next"],
            "additionalProperties":false}},"$ref":"#/$defs/Node"})",
       {R"({"v":1,"next":null})", R"({"v":1,"next":{"v":2,"next":{"v":3,"next":null}}})"},
       {R"({"v":1})", R"({"v":1,"next":{"v":2}})", R"({"v":1,"next":{}})"}},
      {R"({"definitions":{"T":{"type":"array","items":{"$ref":"#/definitions/T"}}},"$ref":"#/definitions/T"})",
       {"[]", "[[],[[]]]"},
       {"[1]", "[[{}]]"}},
      // anyOf branches that begin alike (pydantic's union of models): each
      // followed until the bytes tell them apart.
      {R"({"$defs":{"Cat":{"type":"object","properties":{"kind":{"const":"cat"},"meow":{"type":"boolean"}},
            "required":["kind","meow"],"additionalProperties":false},
           "Dog":{"type":"object","properties":{"kind":{"const":"dog"},"bark":{"type":"integer"}},
            "required":["kind","bark"],"additionalProperties":false}},
          "type":"object","properties":{"pets":{"type":"array","items":{"anyOf":[{"$ref":"#/$defs/Cat"},{"$ref":"#/$defs/Dog"}]}}},
          "required":["pets"]})",
       {R"({"pets":[{"kind":"cat","meow":true},{"bark":3,"kind":"dog"}]})", R"({"pets":[]})"},
       {R"({"pets":[{"kind":"cat","bark":3}]})", R"({"pets":[{"kind":"dog","meow":true}]})",
        R"({"pets":[{"kind":"cat"}]})", R"({"pets":[{}]})"}},
      {R"({"anyOf":[{"type":"integer","maximum":0},{"type":"number","minimum":5}]})",
       {"-3", "0", "5.5", "7"},
       {"3", "4.9", "0.5"}},
      {R"({"anyOf":[{"type":"string","maxLength":1},{"enum":["hello"]},{"type":"null"}]})",
       {R"("a")", R"("hello")", "null"},
       {R"("he")", R"("hello!")"}},
      // Formats: RFC 3339 dates and times (the day must exist), RFC 4122 uuids.
      {R"({"type":"string","format":"date"})",
       {R"("2024-02-29")", R"("2023-12-31")", R"("0000-01-01")", R"("2000-02-29")"},
       {R"("2023-02-29")", R"("1900-02-29")", R"("2024-13-01")", R"("2024-1-01")",
        R"("2024-00-10")", R"("2024-04-31")", R"("24-01-01")", R"("2024-01-01T")",
        R"("2024-01\/01")", "1"}},
      {R"({"type":"string","format":"date-time"})",
       {R"("2024-02-29T23:59:59Z")", R"("2024-01-01T00:00:00.123+05:30")",
        R"("1999-12-31T12:00:00-08:00")", R"("2024-01-01T00:00:00.123456789Z")"},
       {R"("2024-01-01 00:00:00Z")", R"("2024-01-01T24:00:00Z")", R"("2024-01-01T00:00:00")",
        R"("2024-01-01T00:00:60Z")", R"("2024-01-01T00:00:00.Z")", R"("2024-01-01T00:00:00z")",
        R"("2024-01-01T00:00:00.1234567890Z")", R"("2024-01-01T00:00:00+24:00")"}},
      {R"({"type":"string","format":"time"})",
       {R"("12:34:56Z")", R"("00:00:00.5+00:00")", R"("23:59:59-23:59")"},
       {R"("12:34Z")", R"("12:34:56")", R"("2024-01-01T12:34:56Z")"}},
      {R"({"type":["string","null"],"format":"uuid"})",
       {R"("123e4567-e89b-12d3-a456-426614174000")", R"("123E4567-E89B-12D3-A456-426614174000")",
        "null"},
       {R"("123e4567e89b-12d3-a456-426614174000")", R"("123e4567-e89b-12d3-a456-42661417400g")",
        R"("123e4567-e89b-12d3-a456-4266141740000")"}},
      // Other keys: allowed with any value, or with a schema; {} is any value.
      {R"({"type":"object","properties":{"a":{"type":"integer"}}})",
       {R"({"a":1,"b":"x","c":[{"d":null}]})", R"({})", R"({"ab":2})"},
       {R"({"a":"x"})", R"({"a":1,"a":2})"}},
      {R"({"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":{"type":"string"}})",
       {R"({"a":1,"b":"x"})"},
       {R"({"b":1})"}},
      {"{}", {"1", "\"x\"", "[{\"a\":[]}]", "null"}, {"nul", "[1,]"}},
      {R"({"type":"object","properties":{"a":{"type":"object"},"b":{"type":"array","maxItems":0}},
          "additionalProperties":false})",
       {R"({"a":{"x":1},"b":[]})"},
       {R"({"b":[1]})", R"({"c":1})"}},
  };
  for (const Case& c : cases) {
    CAPTURE(std::string(c.schema));
    const auto s = compiled(c.schema);
    const json schema = json::parse(c.schema);
    for (const char* d : c.good) {
      CAPTURE(std::string(d));
      CHECK(accepts(*s, d));
      CHECK(valid(json::parse(d), schema, schema));  // the table itself is right
    }
    for (const char* d : c.bad) {
      CAPTURE(std::string(d));
      CHECK_FALSE(accepts(*s, d));
    }
  }
}

TEST_CASE("json schema: no dead ends: an object waits for its required keys, keys match names") {
  const auto s = compiled(
      R"({"type":"object","properties":{"name":{"type":"string"},"nick":{"type":"string"}},
          "required":["name"],"additionalProperties":false})");
  JsonSchemaNfa g(*s);
  REQUIRE(g.feed("{"));
  CHECK_FALSE(g.accepts("}"));       // "name" is due
  CHECK(g.accepts("\"n"));           // a prefix of both names
  CHECK(g.accepts("\"ni"));          // of "nick"
  CHECK_FALSE(g.accepts("\"x"));     // of none
  CHECK_FALSE(g.accepts("\"na\""));  // a prefix is not a name
  REQUIRE(g.feed("\"nick\":\"x\","));
  CHECK_FALSE(g.accepts("\"ni"));  // used
  CHECK(g.accepts("\"name\":\"y\"}"));
  JsonSchemaNfa full(*s);
  REQUIRE(full.feed("{\"name\":\"a\",\"nick\":\"b\""));
  CHECK_FALSE(full.accepts(","));  // no key is left to write
  CHECK(full.accepts("}"));
  // maxItems stops ','; enum strings match a candidate's prefix.
  const auto a = compiled(R"({"type":"array","items":{"enum":["ab","cd"]},"maxItems":2})");
  JsonSchemaNfa h(*a);
  REQUIRE(h.feed("[\"ab\",\"c"));
  CHECK_FALSE(h.accepts("x"));
  CHECK_FALSE(h.accepts("\""));
  REQUIRE(h.feed("d\""));
  CHECK_FALSE(h.accepts(","));
  CHECK(h.accepts("]"));
  // A top-level number is complete but not closed; a string is both.
  const auto n = compiled(R"({"enum":[1,12]})");
  JsonSchemaNfa k(*n);
  REQUIRE(k.feed("1"));
  CHECK(k.complete());
  CHECK_FALSE(k.closed());
  REQUIRE(k.feed("2"));
  CHECK(k.closed());
}

TEST_CASE(
    "json schema: random schemas: valid documents are accepted, and no prefix is a dead end") {
  std::mt19937 rng(20261207);
  int docs = 0, walks = 0, refused = 0;
  for (int round = 0; round < 400; ++round) {
    const bool with_ref = round % 3 == 0;
    json schema = random_schema(rng, 3, with_ref);
    if (with_ref) schema = with_defs(schema);
    auto c = compile_json_schema(schema);
    CAPTURE(schema.dump());
    // A random nullable branch may itself allow null: refused, and drawn again.
    if (!c && c.error().message.find("has two branches that can both be") != std::string::npos) {
      ++refused;
      continue;
    }
    REQUIRE_MESSAGE(c.has_value(), (c ? "" : c.error().message));
    const JsonSchema& s = **c;
    // Documents drawn from the schema, compact and indented (but enum
    // values match compact only): accepted; every prefix of them completes.
    const bool enums = schema.dump().find("enum") != std::string::npos;
    for (int i = 0; i < 4; ++i) {
      const json v = random_value(rng, schema, schema, 3);
      REQUIRE(valid(v, schema, schema));
      for (const std::string& doc : {v.dump(), enums ? v.dump() : v.dump(1)}) {
        CAPTURE(doc);
        JsonSchemaNfa g(s);
        for (size_t k = 0; k < doc.size(); ++k) {
          REQUIRE(g.feed(static_cast<uint8_t>(doc[k])));
          if (rng() % 8 == 0) check_completes(g, doc.substr(0, k + 1), schema);
        }
        CHECK(g.complete());
        ++docs;
      }
    }
    // Random walks over the bytes the automaton takes: each state reached
    // completes, and so must the walk's end.
    static const std::string alphabet = completion_alphabet();
    for (int w = 0; w < 4; ++w) {
      JsonSchemaNfa g(s);
      std::string prefix;
      for (int step = 0; step < 60 && !g.closed(); ++step) {
        std::vector<char> ok;
        for (char ch : alphabet)
          if (g.accepts(std::string_view(&ch, 1))) ok.push_back(ch);
        if (ok.empty()) break;  // complete, and only whitespace may follow
        const char ch = ok[rng() % ok.size()];
        REQUIRE(g.feed(static_cast<uint8_t>(ch)));
        prefix += ch;
      }
      check_completes(g, prefix, schema);
      ++walks;
    }
  }
  MESSAGE(docs << " documents and " << walks << " random walks; " << refused
               << " schemas refused for overlapping branches");
  CHECK(walks >= 400);
}

TEST_CASE("json schema: a constrained pick over a toy vocabulary writes valid documents") {
  // A vocabulary of JSON-ish pieces: tokens of many bytes, which the
  // constraint must allow only when all their bytes fit, and an end token.
  auto vocab = std::make_shared<JsonVocab>();
  for (const char* p :
       {"{",     "}",    "[",    "]",  ",",   ":",        "\"", "\"name", "\":",  "\"tags\":[",
        "\"age", "null", "true", "1",  "2.5", "e3",       "-",  "ab",     "x\"",  "\":\"",
        "\",\"", " ",    "\"}",  "]}", "\\n", "\xC3\xA9", "0",  "\"n",    "ame\""}) {
    vocab->bytes.push_back(p);
    vocab->kind.push_back(JsonVocab::Text);
  }
  for (char c = 'a'; c <= 'z'; ++c) {  // single letters, as byte fallback gives
    vocab->bytes.push_back(std::string(1, c));
    vocab->kind.push_back(JsonVocab::Text);
  }
  vocab->bytes.push_back("");
  vocab->kind.push_back(JsonVocab::EndOfGeneration);
  const int32_t eog = static_cast<int32_t>(vocab->kind.size() - 1);
  const char* text =
      R"({"type":"object","properties":{"name":{"type":"string","maxLength":4},
          "age":{"type":"integer"},"tags":{"type":"array","items":{"type":["string","null"]},
          "maxItems":3}},"required":["name","tags"],"additionalProperties":false})";
  const json schema = json::parse(text);
  const auto s = compiled(text);
  std::mt19937 rng(7);
  int ended = 0;
  for (int run = 0; run < 200; ++run) {
    JsonConstraint c(vocab, s);
    std::string out;
    bool end = false;
    for (int step = 0; step < 200 && !end; ++step) {
      std::vector<int32_t> allowed;
      for (int32_t t = 0; t < static_cast<int32_t>(vocab->kind.size()); ++t)
        if (c.allows(t)) allowed.push_back(t);
      CAPTURE(out);
      REQUIRE_FALSE(allowed.empty());  // never stuck
      // Bias to the end token once it is allowed, as a trained model would.
      const int32_t t = c.allows(eog) && rng() % 2 ? eog : allowed[rng() % allowed.size()];
      c.accept(t);
      if (t == eog)
        end = true;
      else
        out += vocab->bytes[static_cast<size_t>(t)];
    }
    if (!end) continue;
    ++ended;
    CAPTURE(out);
    REQUIRE(json::accept(out));
    CHECK(valid(json::parse(out), schema, schema));
  }
  MESSAGE(ended << " of 200 toy decodes ended");
  CHECK(ended > 50);
  // Without a schema, the constraint is JSON mode as before: any object.
  JsonConstraint plain(vocab);
  CHECK(plain.allows(0));        // "{"
  CHECK_FALSE(plain.allows(2));  // "[": not an object
}

TEST_CASE("json number bounds: exact decimals; open and closed ends; a prefix finishes inside") {
  auto d = [](const char* t) { return *JsonDecimal::parse(t); };
  CHECK(json_decimal_compare(d("0.30"), d("3e-1")) == 0);
  CHECK(json_decimal_compare(d("-0"), d("0")) == 0);
  CHECK(json_decimal_compare(d("0.3"), d("0.30000000000000004")) < 0);
  CHECK(json_decimal_compare(d("-12.5"), d("-12.49")) < 0);
  CHECK(json_decimal_compare(d("1e20"), d("99999999999999999999.9")) > 0);
  CHECK_FALSE(JsonDecimal::parse("1.").has_value());
  CHECK_FALSE(JsonDecimal::parse("--1").has_value());
  // (0, 1]: open below, closed above.
  JsonNumberBounds b;
  b.has_min = b.has_max = true;
  b.min = d("0");
  b.min_open = true;
  b.max = d("1");
  CHECK_FALSE(b.inside("0"));
  CHECK(b.inside("0.0000001"));
  CHECK(b.inside("1.000"));
  CHECK_FALSE(b.inside("1.0000001"));
  CHECK(b.can_finish("0", false));       // 0.x
  CHECK_FALSE(b.can_finish("0", true));  // an integer: 0 is out, 0 takes no digits
  CHECK(b.can_finish("1", true));
  CHECK_FALSE(b.can_finish("2", false));
  CHECK_FALSE(b.can_finish("-", false));
  CHECK(b.can_finish("1.", false));  // 1.0
  CHECK_FALSE(b.can_finish("1.1", false));
  CHECK(b.satisfiable(false));
  CHECK(b.satisfiable(true));
  // [-1.5, -1.25]: digits on the negative side.
  JsonNumberBounds n;
  n.has_min = n.has_max = true;
  n.min = d("-1.5");
  n.max = d("-1.25");
  CHECK(n.can_finish("-", false));
  CHECK(n.can_finish("-1.3", false));
  CHECK(n.can_finish("-1.2", false));  // -1.25
  CHECK_FALSE(n.can_finish("-1.1", false));
  CHECK_FALSE(n.can_finish("-1.51", false));
  CHECK(n.can_finish("-1.50", false));
  CHECK_FALSE(n.can_finish("-1", true));  // no integer there
  CHECK_FALSE(n.satisfiable(true));
  // multipleOf 7 in [-20, 30): -14, -7, 0, ..., 28; prefixes that reach one.
  JsonNumberBounds m;
  m.has_min = m.has_max = true;
  m.min = d("-20");
  m.max = d("30");
  m.max_open = true;
  m.step = 7;
  CHECK(m.inside("21"));
  CHECK(m.inside("-14.000"));
  CHECK(m.inside("-0"));
  CHECK_FALSE(m.inside("22"));
  CHECK_FALSE(m.inside("35"));
  CHECK_FALSE(m.inside("-21"));
  CHECK_FALSE(m.inside("7.5"));
  CHECK(m.can_finish("2", true));        // 21, 28
  CHECK_FALSE(m.can_finish("3", true));  // 3, 30.. are out or not multiples
  CHECK(m.can_finish("-1", true));       // -14
  CHECK_FALSE(m.can_finish("-2", true));
  CHECK(m.can_finish("14.", false));  // 14.0
  CHECK_FALSE(m.can_finish("14.1", false));
  CHECK(m.satisfiable(true));
  // A step past the range: none.
  JsonNumberBounds none = m;
  none.step = 50;
  none.min = d("1");
  CHECK_FALSE(none.satisfiable(false));
  // A range narrower than the 40 digits after the point can write: none.
  JsonNumberBounds t;
  t.has_min = t.has_max = true;
  t.min = d("1e-45");
  t.max = d("2e-45");
  CHECK_FALSE(t.satisfiable(false));
}

namespace {

// Whether some characters of the alphabet finish the string g is in.
bool finishes(const JsonSchemaNfa& g, const std::string& alphabet, int depth) {
  if (g.complete()) return true;
  if (depth == 0) return false;
  for (char c : alphabet) {
    JsonSchemaNfa h = g;
    if (h.feed(static_cast<uint8_t>(c)) && finishes(h, alphabet, depth - 1)) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("json schema: string formats: every prefix the automaton takes can be finished") {
  // Random walks over the characters a format uses: each step picks among
  // those the automaton takes, and the walk's end must still finish (the
  // day a month has, the hour's second digit, the fraction, the offset).
  const std::string alphabet = "\"0123456789-:TZ+.aAfFgz ";
  std::mt19937 rng(20261206);
  for (const char* f : {"date", "time", "date-time", "uuid"}) {
    CAPTURE(f);
    const auto s = compiled(json{{"type", "string"}, {"format", f}}.dump());
    int finished = 0;
    for (int walk = 0; walk < 3000; ++walk) {
      JsonSchemaNfa g(*s);
      REQUIRE(g.feed(static_cast<uint8_t>('"')));
      std::string text = "\"";
      const int steps = static_cast<int>(rng() % 40);
      for (int i = 0; i < steps && !g.complete(); ++i) {
        std::string ok;
        for (char c : alphabet)
          if (g.accepts(std::string_view(&c, 1))) ok += c;
        if (ok.empty()) break;
        const char c = ok[rng() % ok.size()];
        REQUIRE(g.feed(static_cast<uint8_t>(c)));
        text += c;
      }
      CAPTURE(text);
      REQUIRE_MESSAGE(finishes(g, alphabet, 40), "a dead end");
      finished += g.complete();
    }
    CHECK(finished > 0);
  }
}
