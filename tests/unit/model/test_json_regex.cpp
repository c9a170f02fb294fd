// JSON Schema "pattern" (model/json_regex.h, model/json_regex_nfa.h,
// model/json_regex_step.h): the DFA matches what an ECMA-262 regular
// expression matches on the decoded string (a table; and random patterns
// against std::regex, an independent implementation); the schema's byte
// automaton (model/json_schema_grammar.h) reads the string's JSON text
// (raw UTF-8, escapes) to the same verdict and refuses a byte without
// changing its state; it never reaches a dead end, with or without
// minLength / maxLength (random walks over its bytes, each end finished by
// a search and the result checked against the pattern); and refusals name
// the construct and the schema path.
#include <doctest/doctest.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/json_regex.h"
#include "model/json_schema.h"
#include "model/json_schema_grammar.h"
#include "model/json_schema_nfa.h"
#include "model/unicode.h"

using namespace ls;
using nlohmann::json;

namespace {

JsonRegex regex(const std::string& p, uint32_t min = 0, uint32_t max = JsonRegex::kUnbounded) {
  auto r = compile_json_regex(p, min, max);
  INFO("pattern: " << p);
  REQUIRE_MESSAGE(r.has_value(), (r ? "" : r.error().message));
  return std::move(*r);
}

// {"a": <string under the pattern and lengths>}, "a" required.
json object_schema(const std::string& pattern, int min = -1, int max = -1) {
  json a = {{"type", "string"}, {"pattern", pattern}};
  if (min >= 0) a["minLength"] = min;
  if (max >= 0) a["maxLength"] = max;
  return {{"type", "object"},
          {"properties", {{"a", a}}},
          {"required", {"a"}},
          {"additionalProperties", false}};
}

std::shared_ptr<const JsonSchema> compiled(const json& schema) {
  auto s = compile_json_schema(schema);
  INFO("schema: " << schema.dump());
  REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
  return *s;
}

bool grammar_accepts(const JsonSchema& s, const std::string& doc) {
  JsonSchemaGrammar g(s);
  return g.feed(doc) && g.complete();
}

std::u32string code_points(const std::string& utf8) {
  std::u32string out;
  for (size_t i = 0; i < utf8.size();) {
    const Utf8Char c = utf8_next(utf8, i);
    out.push_back(c.cp);
    i += c.len;
  }
  return out;
}

// ---- Random patterns for the oracle: literals, classes, groups,
// alternation, quantifiers (lazy ones too), anchors. -------------------------

struct PatternGen {
  std::mt19937& rng;
  int pick(int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); }

  std::string atom(int depth) {
    switch (pick(depth > 0 ? 11 : 9)) {
      case 0:
      case 1:
      case 2:
        return std::string(1, "abc0 "[pick(5)]);
      case 3:
        return ".";
      case 4:
        return std::string("\\") + "dDwWsS"[pick(6)];
      case 5:
      case 6: {
        std::string s = "[";
        if (pick(3) == 0) s += '^';
        static const char* const kItems[] = {"a", "b", "c", "a-b", "0-9", "\\d", " ", "\\s", "\\w"};
        for (int i = 0, n = 1 + pick(3); i < n; ++i) s += kItems[pick(9)];
        return s + "]";
      }
      case 7:
        return "\\n";
      case 8:
        return "\\.";
      default:
        return std::string(pick(2) ? "(" : "(?:") + alt(depth - 1) + ")";
    }
  }
  std::string quantifier() {
    static const char* const kQ[] = {"", "", "", "*", "+", "?", "{2}", "{1,}", "{0,2}", "{1,3}"};
    std::string q = kQ[pick(10)];
    if (!q.empty() && pick(4) == 0) q += '?';  // lazy
    return q;
  }
  std::string sequence(int depth) {
    std::string s;
    for (int i = 0, n = 1 + pick(3); i < n; ++i) s += atom(depth) + quantifier();
    return s;
  }
  std::string alt(int depth) {
    std::string s = sequence(depth);
    if (pick(4) == 0) s += "|" + sequence(depth);
    return s;
  }
  std::string pattern() {
    std::string p = alt(2);
    if (pick(3) == 0) p = "^" + p;
    if (pick(3) == 0) p += "$";
    return p;
  }
};

// ---- The body of a JSON string, decoded: for the search's memo. ----------

// The whole code points of a string body's JSON text, and the bytes of a
// character not yet whole (lower-cased: \u00E and \u00e stand alike).
struct Body {
  std::u32string chars;
  std::string pending;
};

Body decode_body(const std::string& text) {
  Body b;
  size_t i = 0;
  while (i < text.size()) {
    const uint8_t c = static_cast<uint8_t>(text[i]);
    if (c == '\\') {
      if (i + 1 >= text.size()) break;
      const char e = text[i + 1];
      if (e == 'u') {
        if (i + 6 > text.size()) break;
        b.chars.push_back(static_cast<char32_t>(std::stoul(text.substr(i + 2, 4), nullptr, 16)));
        i += 6;
        continue;
      }
      const std::string from = "\"\\/bfnrt", to = "\"\\/\b\f\n\r\t";
      b.chars.push_back(static_cast<char32_t>(to[from.find(e)]));
      i += 2;
      continue;
    }
    const size_t n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    if (i + n > text.size()) break;
    b.chars.push_back(utf8_next(text, i).cp);
    i += n;
  }
  b.pending = text.substr(i);
  for (char& ch : b.pending) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return b;
}

// The bytes walks and searches try: every byte, printable ASCII first
// (the JSON lexer refuses control bytes and malformed UTF-8 itself).
std::string byte_alphabet() {
  std::string a;
  for (int c = 0x20; c < 0x100; ++c) a += static_cast<char>(c);
  for (int c = 0; c < 0x20; ++c) a += static_cast<char>(c);
  return a;
}

// A pattern for walks, with whether std::wregex over code points is an
// oracle for it (no \s, no '.', no surrogate pair: libstdc++'s wide regex
// reads those by locale or by UTF-16 unit).
struct WalkPattern {
  const char* pattern;
  bool wide_oracle;
};

// A character's JSON text: itself in UTF-8, or the escape JSON needs.
std::string json_char(char32_t c) {
  if (c == '"') return "\\\"";
  if (c == '\\') return "\\\\";
  if (c < 0x20) {
    char b[8];
    std::snprintf(b, sizeof b, "\\u%04x", static_cast<unsigned>(c));
    return b;
  }
  std::string s;
  utf8_append(s, c);
  return s;
}

// Finishes the document `{"a":"` + body: first the character the body
// ends inside (if any), byte by byte; then whole characters, the lowest and
// highest code point of each of the DFA state's edges (what the automaton
// takes is the question; the pattern only suggests what to try), each
// (DFA state, characters) once; then `"}`. The result is checked apart.
class Finisher {
 public:
  Finisher(const JsonRegex& re, uint32_t min, uint32_t max)
      : re_(re), min_(min), max_(max), alphabet_(byte_alphabet()) {}

  // The finished body (without the closing quote) in *out.
  bool finish(const JsonSchemaGrammar& g, const std::string& body, std::string* out) {
    seen_.clear();
    budget_ = 100000;
    return pending(g, body, out, 6);
  }

 private:
  bool pending(const JsonSchemaGrammar& g, const std::string& body, std::string* out, int depth) {
    if (decode_body(body).pending.empty()) return whole(g, body, out, 64);
    if (depth == 0 || --budget_ <= 0) return false;
    for (char c : alphabet_) {
      JsonSchemaGrammar h = g;
      if (h.feed(static_cast<uint8_t>(c)) && pending(h, body + c, out, depth - 1)) return true;
    }
    return false;
  }

  bool whole(const JsonSchemaGrammar& g, const std::string& body, std::string* out, int depth) {
    JsonSchemaGrammar end = g;
    if (end.feed("\"}") && end.complete()) {
      *out = body;
      return true;
    }
    if (depth == 0 || --budget_ <= 0) return false;
    const Body b = decode_body(body);
    uint32_t s = re_.start();
    for (char32_t c : b.chars) s = s == JsonRegex::kNone ? s : re_.next(s, c);
    if (s == JsonRegex::kNone) return false;
    uint32_t n = static_cast<uint32_t>(b.chars.size());
    // Without maxLength, characters past minLength make no difference.
    if (max_ == JsonRegex::kUnbounded) n = std::min(n, min_);
    if (!seen_.insert({s, n}).second) return false;
    for (const JsonRegex::Edge& e : re_.edges(s)) {
      for (uint32_t c : {e.lo, e.hi}) {
        JsonSchemaGrammar h = g;
        const std::string text = json_char(c);
        if (h.feed(text) && whole(h, body + text, out, depth - 1)) return true;
      }
    }
    return false;
  }

  const JsonRegex& re_;
  uint32_t min_, max_;
  std::string alphabet_;
  std::set<std::pair<uint32_t, uint32_t>> seen_;
  long budget_ = 0;
};

std::wstring wide(const std::string& utf8) {
  std::wstring w;
  for (char32_t c : code_points(utf8)) w.push_back(static_cast<wchar_t>(c));
  return w;
}

}  // namespace

TEST_CASE("json regex: what a pattern matches on the decoded string") {
  struct Case {
    const char* pattern;
    std::string text;
    bool match;
  };
  const std::vector<Case> cases = {
      // Not anchored: a match anywhere.
      {"abc", "xxabcxx", true},
      {"abc", "ab", false},
      {"b", "abc", true},
      {"", "anything", true},
      // Anchors at the ends of the pattern or of a top-level alternative.
      {"^abc", "abcd", true},
      {"^abc", "xabc", false},
      {"abc$", "xabc", true},
      {"abc$", "abcx", false},
      {"^abc$", "abc", true},
      {"^abc$", "abcabc", false},
      {"^a|b$", "ax", true},
      {"^a|b$", "xb", true},
      {"^a|b$", "xa", false},
      {"^a|b$", "bx", false},
      {"^$", "", true},
      {"^$", "a", false},
      {"\\$", "a$b", true},
      // Classes, negated ones over all of Unicode.
      {"^[a-c]+$", "abcab", true},
      {"^[a-c]+$", "abd", false},
      {"^[^a-c]$", "d", true},
      {"^[^a-c]$", "\xC3\xA9", true},
      {"^[^\xC3\xA9]$", "\xC3\xA9", false},
      {"^[^\xC3\xA9]$", "e", true},
      {"^[^\\x00-\\x7F]+$", "\xE6\x97\xA5\xE6\x9C\xAC", true},
      {"^[^\\x00-\\x7F]+$", "h\xC3\xA9llo", false},
      {"^[\\u00e0-\\u00ff]$", "\xC3\xA9", true},
      {"^[\\-a]+$", "-a-", true},
      {"^[a-]+$", "a-", true},
      {"^[]$", "", false},
      {"[]", "a", false},
      {"^[^]$", "\n", true},
      {"^[\\b]$", "\b", true},
      {"^[\\d_]+$", "1_2", true},
      {"^[^\\d\\s]+$", "ab", true},
      {"^[^\\d\\s]+$", "a b", false},
      // Quantifier bounds.
      {"^a{3}$", "aaa", true},
      {"^a{3}$", "aa", false},
      {"^a{3}$", "aaaa", false},
      {"^a{2,}$", "aa", true},
      {"^a{2,}$", "a", false},
      {"^a{1,3}$", "", false},
      {"^a{1,3}$", "aaa", true},
      {"^a{1,3}$", "aaaa", false},
      {"^a{0}$", "", true},
      {"^(?:ab)+$", "abab", true},
      {"^(?:ab)+$", "aba", false},
      {"^a?b*?c+$", "bbbc", true},
      {"^a??$", "", true},
      {"^a{2,3}?$", "aaa", true},
      {"^(?:a*)*b$", "aab", true},
      // Alternation and groups.
      {"^(?:cat|dog)s?$", "dogs", true},
      {"^(?:cat|dog)s?$", "cow", false},
      {"^(cat|)$", "", true},
      {"^(?<animal>cat|dog)$", "cat", true},
      // '.': any code point but the line terminators.
      {"^.$", "\n", false},
      {"^.$", "\r", false},
      {"^.$", "\xE2\x80\xA8", false},  // U+2028
      {"^.$", "\xE2\x80\xA9", false},  // U+2029
      {"^.$", "x", true},
      {"^.$", "\xF0\x9F\x98\x80", true},  // one code point past U+FFFF
      {"^..$", "\xF0\x9F\x98\x80", false},
      {"a.c", "a\nc", false},
      {"a[\\s\\S]c", "a\nc", true},
      // \s: ECMA's white space and line terminators.
      {"^\\s$", "\xE3\x80\x80", true},   // U+3000
      {"^\\s$", "\xC2\xA0", true},       // U+00A0
      {"^\\s$", "\xEF\xBB\xBF", true},   // U+FEFF
      {"^\\s$", "\xE2\x80\x8A", true},   // U+200A
      {"^\\s$", "\xE2\x80\x8B", false},  // U+200B is not white space
      {"^\\s+$", " \t\n\v\f\r", true},
      {"^\\S$", "\xE3\x80\x80", false},
      {"^\\S$", "x", true},
      // \d and \w: ASCII only.
      {"^\\d+$", "0123456789", true},
      {"^\\d$", "\xD9\xA3", false},  // U+0663 ARABIC-INDIC DIGIT THREE
      {"^\\w+$", "a_Z9", true},
      {"^\\w$", "\xC3\xA9", false},
      {"^\\W$", "\xC3\xA9", true},
      {"^\\D$", "a", true},
      // Escapes.
      {"^\\t\\n\\r\\f\\v\\0$", std::string("\t\n\r\f\v\0", 6), true},
      {"^\\x41\\u0042$", "AB", true},
      {"^\\uD83D\\uDE00$", "\xF0\x9F\x98\x80", true},
      {"^\\cJ$", "\n", true},
      {"^\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\/\\\\\\^\\$$", ".*+?()[]{}|/\\^$", true},
      {"^\\.$", "x", false},
      // '{', '}' and ']' that are not syntax are themselves (Annex B).
      {"^a{$", "a{", true},
      {"^a{1,x}$", "a{1,x}", true},
      {"^}]$", "}]", true},
      // Literal code points past ASCII.
      {"^\xC3\xA9+$", "\xC3\xA9\xC3\xA9", true},
      {"^\xE6\x97\xA5\xE6\x9C\xAC$", "\xE6\x97\xA5\xE6\x9C\xAC", true},
      {"^\xE6\x97\xA5$", "\xE6\x97\xA6", false},
  };
  for (const Case& c : cases) {
    CAPTURE(std::string(c.pattern));
    CAPTURE(c.text);
    const JsonRegex re = regex(c.pattern);
    CHECK(re.matches(c.text) == c.match);
    // The byte automaton agrees on the string's JSON text; where no string
    // matches, no value of the schema exists.
    const json schema = {{"type", "string"}, {"pattern", c.pattern}};
    if (!re.satisfiable()) {
      CHECK_FALSE(compile_json_schema(schema).has_value());
      continue;
    }
    CHECK(grammar_accepts(*compiled(schema), json(c.text).dump()) == c.match);
  }
  // Lengths beside the pattern.
  const JsonRegex len = regex("^a+$", 2, 4);
  CHECK_FALSE(len.matches("a"));
  CHECK(len.matches("aa"));
  CHECK(len.matches("aaaa"));
  CHECK_FALSE(len.matches("aaaaa"));
  CHECK(regex("^a*b$", 3).matches("aab"));
  CHECK_FALSE(regex("^a*b$", 3).matches("ab"));
}

TEST_CASE("json regex: random patterns match as std::regex (ECMAScript) does") {
  // std::regex_search is an independent implementation of ECMA-262's
  // patterns; over ASCII strings it reads characters as code points.
  std::mt19937 rng(20260301);
  PatternGen gen{rng};
  const std::string alphabet = "abc0 _\nA.";
  int patterns = 0, compared = 0, matched = 0;
  for (int round = 0; round < 300; ++round) {
    const std::string p = gen.pattern();
    CAPTURE(p);
    std::regex oracle;
    try {
      oracle = std::regex(p, std::regex::ECMAScript);
    } catch (const std::regex_error&) {
      FAIL("std::regex refused a generated pattern");
    }
    const JsonRegex re = regex(p);
    const auto schema = compiled({{"type", "string"}, {"pattern", p}});
    ++patterns;
    for (int k = 0; k < 30; ++k) {
      std::string s;
      for (int i = 0, n = static_cast<int>(rng() % 9); i < n; ++i)
        s += alphabet[rng() % alphabet.size()];
      CAPTURE(s);
      const bool want = std::regex_search(s, oracle);
      CHECK(re.matches(s) == want);
      CHECK(grammar_accepts(*schema, json(s).dump()) == want);
      ++compared;
      matched += want;
    }
  }
  MESSAGE(patterns << " patterns, " << compared << " strings, " << matched << " matches");
  // Both verdicts are common, so the comparison means something.
  CHECK(matched > compared / 5);
  CHECK(matched < compared * 4 / 5);
}

TEST_CASE("json regex: the byte automaton reads the string's JSON text") {
  struct Case {
    const char* pattern;
    std::vector<const char*> good, bad;
  };
  const std::vector<Case> cases = {
      // An escaped newline, and the characters JSON must escape.
      {"^[a-z]+\\n[a-z]+$", {R"({"a":"ab\ncd"})"}, {R"({"a":"abcd"})", R"({"a":"ab\tcd"})"}},
      {R"(^"[^"]*"$)", {R"({"a":"\"hi\""})"}, {R"({"a":"\"hi"})", R"({"a":"hi"})"}},
      {R"(^\\$)", {R"({"a":"\\"})"}, {R"({"a":"/"})"}},
      {"^/$", {R"({"a":"/"})", R"({"a":"\/"})"}, {R"({"a":"\\"})"}},
      // é raw, or escaped in either case of hex digit.
      {"^caf\xC3\xA9$",
       {"{\"a\":\"caf\xC3\xA9\"}", R"({"a":"caf\u00e9"})", R"({"a":"caf\u00E9"})"},
       {R"({"a":"cafe"})", "{\"a\":\"caf\xC3\xA8\"}", R"({"a":"caf\u00e8"})"}},
      {"^[^a-z]+$",
       {"{\"a\":\"\xE6\x97\xA5\xE6\x9C\xAC\"}", R"({"a":"\u65e5"})", R"({"a":"A1"})"},
       {R"({"a":"\u0061"})", R"({"a":"Ab"})"}},
      // A control character only as an escape.
      {"^\\x01\\t$", {R"({"a":"\u0001\t"})", R"({"a":"\u0001\u0009"})"}, {R"({"a":"\u0001"})"}},
      // Past U+FFFF: four raw bytes (a surrogate pair escape is refused).
      {"^.$", {"{\"a\":\"\xF0\x9F\x98\x80\"}", R"({"a":"\u3000"})"}, {R"({"a":"\ud83d\ude00"})"}},
      {"^\\uD83D\\uDE00$", {"{\"a\":\"\xF0\x9F\x98\x80\"}"}, {R"({"a":"\ud83d\ude00"})"}},
  };
  for (const Case& c : cases) {
    CAPTURE(std::string(c.pattern));
    const auto s = compiled(object_schema(c.pattern));
    for (const char* d : c.good) {
      CAPTURE(std::string(d));
      CHECK(grammar_accepts(*s, d));
    }
    for (const char* d : c.bad) {
      CAPTURE(std::string(d));
      CHECK_FALSE(grammar_accepts(*s, d));
    }
  }

  // Byte by byte: what may come after `{"a":"` + prefix.
  struct Step {
    const char* pattern;
    int min, max;
    const char* prefix;
    std::vector<const char*> yes, no;
  };
  const std::vector<Step> steps = {
      // \u0061 writes 'a'; \n does not; nor any non-ASCII byte.
      {"^[a-z]*$", -1, -1, "", {"a", "\\", "\\u0061", "\""}, {"A", "\xC3", "\\n", "\\u007b"}},
      {"^[a-z]*$", -1, -1, "\\u00", {"6", "7"}, {"8", "e"}},
      // Only non-ASCII: a lead byte, not an ASCII one.
      {"^[^\\x00-\\x7F]+$", -1, -1, "", {"\xC3", "\xE3", "\xF0", "\\u00e9"}, {"a", "\\u007", "\""}},
      // é: its lead and only its continuation.
      {"^\xC3\xA9$", -1, -1, "", {"\xC3\xA9", "\\u00E9"}, {"\xC3\xA8", "\xE0", "\\u00e8", "\""}},
      {"^\xC3\xA9$", -1, -1, "\xC3", {"\xA9"}, {"\xA8", "\xBF"}},
      // U+3000 as three bytes: E3 80 80.
      {"^[\\u3000]$", -1, -1, "", {"\xE3\x80\x80", "\\u3000"}, {"\xE3\x81", "\xE2", "\\u3001"}},
      // E0 leads a character of U+0800 and up: none is in [a-z].
      {"^[a-z]$", -1, -1, "", {"z"}, {"\xE0", "\xF0", "\xC2"}},
      // A surrogate escape's digits stop where only surrogates remain.
      {"^.$", -1, -1, "", {"\\uD7FF", "\\ud", "\xF0\x9F\x98\x80"}, {"\\uD8", "\\udc", "\n"}},
      // Once an unanchored pattern is found, anything may follow (the
      // stepper stops looking), a surrogate pair's escape too.
      {"\\d", -1, -1, "5", {"\\ud83d\\ude00", "\xF0\x9F\x98\x80", "x\""}, {"\\ud83d\""}},
      {"\\d", -1, -1, "", {"x", "\xF0\x9F\x98\x80"}, {"\\ud8", "\""}},
      // Lengths: at most 3, at least 2, with the pattern.
      {"^[a-z]+$", -1, 3, "abc", {"\""}, {"d", "\\"}},
      {"^a*$", 2, -1, "a", {"a"}, {"\""}},
      {"^[ab]*c$", 3, 4, "a", {"a", "b", "ac", "aac"}, {"c", "\"", "aba"}},
  };
  for (const Step& st : steps) {
    CAPTURE(std::string(st.pattern));
    CAPTURE(std::string(st.prefix));
    const auto s = compiled(object_schema(st.pattern, st.min, st.max));
    JsonSchemaGrammar g(*s);
    REQUIRE(g.feed(std::string("{\"a\":\"") + st.prefix));
    for (const char* y : st.yes) {
      CAPTURE(std::string(y));
      CHECK(g.accepts(y));
    }
    for (const char* n : st.no) {
      CAPTURE(std::string(n));
      CHECK_FALSE(g.accepts(n));
      // A refused byte leaves the state as it was: the bytes that would
      // have come before it are taken, then it is refused, then the
      // state is that of those bytes.
      JsonSchemaGrammar h = g;
      const std::string bytes = n;
      const std::string before = bytes.substr(0, bytes.size() - 1);
      REQUIRE(h.feed(before));
      const JsonSchemaGrammar kept = h;
      CHECK_FALSE(h.feed(static_cast<uint8_t>(bytes.back())));
      CHECK(h.same(kept));
    }
  }
}

TEST_CASE(
    "json regex: no dead ends: random walks over the bytes finish, with and without lengths") {
  const std::vector<WalkPattern> patterns = {
      {"^[A-Z]{3}-[0-9]{4}$", true},
      {"\\d", true},
      {"^[^a-z]*\xC3\xA9", true},
      {"^(?:[a-c]|\\s)+$", false},
      {"x.{2}$", false},
      {"^[\\u0080-\\u07ff]{2}$", true},
      {"^[\\u0800-\\uffff]+$", true},
      {"^[\\uD83D\\uDE00-\\uD83D\\uDE4F]$", false},
      {"^\\n?[\"\\\\/]+$", true},
      {"^[\\x00-\\x1f]+$", true},
      {"(a|b)*c", true},
      {"^.{3,5}$", false},
      {"^[^\\u3000]$", true},
      {"^(?:ab|\xE6\x97\xA5)+!?$", true},
  };
  struct Lengths {
    int min, max;
  };
  const std::vector<Lengths> lengths = {{-1, -1}, {2, -1}, {-1, 4}, {3, 6}, {5, 5}, {0, 1}};
  std::mt19937 rng(20260302);
  PatternGen gen{rng};
  const std::string alphabet = byte_alphabet();
  int walks = 0, closed = 0, finished = 0, unsatisfiable = 0, wide_checked = 0;
  auto check_value = [&](const std::string& doc, const std::string& pattern, const JsonRegex& re,
                         bool wide_oracle, const Lengths& l) {
    CAPTURE(doc);
    REQUIRE(json::accept(doc));
    const std::string v = json::parse(doc).at("a").get<std::string>();
    CHECK(re.matches(v));  // the pattern and the lengths, on the decoded string
    const size_t n = code_points(v).size();
    CHECK((l.min < 0 || n >= static_cast<size_t>(l.min)));
    CHECK((l.max < 0 || n <= static_cast<size_t>(l.max)));
    if (wide_oracle) {
      CHECK(std::regex_search(wide(v), std::wregex(wide(pattern), std::wregex::ECMAScript)));
      ++wide_checked;
    }
  };
  for (int round = 0; round < 2 * static_cast<int>(patterns.size()) + 80; ++round) {
    // The listed patterns twice, then random ASCII ones.
    const bool listed = round < 2 * static_cast<int>(patterns.size());
    const std::string pattern =
        listed ? patterns[static_cast<size_t>(round) / 2].pattern : gen.pattern();
    const bool wide_oracle = listed ? patterns[static_cast<size_t>(round) / 2].wide_oracle : false;
    for (const Lengths& l : lengths) {
      CAPTURE(pattern);
      CAPTURE(l.min);
      CAPTURE(l.max);
      const uint32_t min = l.min < 0 ? 0 : static_cast<uint32_t>(l.min);
      const uint32_t max = l.max < 0 ? JsonRegex::kUnbounded : static_cast<uint32_t>(l.max);
      const JsonRegex re = regex(pattern, min, max);
      auto c = compile_json_schema(object_schema(pattern, l.min, l.max));
      if (!re.satisfiable()) {
        // No string fits: the required key's value, so the whole schema.
        CHECK(!c);
        ++unsatisfiable;
        continue;
      }
      REQUIRE_MESSAGE(c.has_value(), (c ? "" : c.error().message));
      const JsonSchema& s = **c;
      Finisher finisher(re, min, max);
      for (int w = 0; w < 8; ++w) {
        JsonSchemaGrammar g(s);
        REQUIRE(g.feed("{\"a\":\""));
        std::string body;
        bool ended = false;
        const int steps = static_cast<int>(rng() % 32);
        for (int i = 0; i < steps && !ended; ++i) {
          std::string ok;
          for (char ch : alphabet)
            if (g.accepts(std::string_view(&ch, 1))) ok += ch;
          REQUIRE_MESSAGE(!ok.empty(), "stuck inside the string after " << body);
          const char ch = ok[rng() % ok.size()];
          REQUIRE(g.feed(static_cast<uint8_t>(ch)));
          // Now and then a prefix on the way must finish too.
          if (rng() % 4 == 0 && !(ch == '"' && decode_body(body).pending.empty())) {
            std::string done;
            CAPTURE(body + ch);
            REQUIRE_MESSAGE(finisher.finish(g, body + ch, &done), "a dead end");
            check_value("{\"a\":\"" + done + "\"}", pattern, re, wide_oracle, l);
            ++finished;
          }
          if (ch == '"' && decode_body(body).pending.empty()) {
            // Closed: the object's '}' must come and end the document.
            REQUIRE(g.feed(static_cast<uint8_t>('}')));
            REQUIRE(g.complete());
            check_value("{\"a\":\"" + body + "\"}", pattern, re, wide_oracle, l);
            ended = true;
            ++closed;
          } else {
            body += ch;
          }
        }
        if (!ended) {
          std::string done;
          CAPTURE(body);
          REQUIRE_MESSAGE(finisher.finish(g, body, &done), "a dead end");
          check_value("{\"a\":\"" + done + "\"}", pattern, re, wide_oracle, l);
          ++finished;
        }
        ++walks;
      }
    }
  }
  MESSAGE(walks << " walks (" << closed << " closed by the walk); " << finished
                << " prefixes finished by the search; " << unsatisfiable
                << " pattern and length pairs no string fits; " << wide_checked
                << " values also checked with std::wregex");
  CHECK(walks > 500);
  CHECK(closed > 50);
  CHECK(unsatisfiable > 0);
}

TEST_CASE("json regex: refusals name the construct and the schema path") {
  struct Case {
    json pattern;
    int min, max;
    const char* message;  // after "json schema: 'pattern' at /properties/x"
  };
  const std::vector<Case> cases = {
      {"(a)\\1", -1, -1, ": the backreference \\1 at character 4 is not supported"},
      {"(?<n>a)\\k<n>", -1, -1, ": the backreference \\k at character 8 is not supported"},
      {"a(?=b)", -1, -1, ": lookahead '(?=' at character 2 is not supported"},
      {"a(?!b)", -1, -1, ": lookahead '(?!' at character 2 is not supported"},
      {"(?<=a)b", -1, -1, ": lookbehind '(?<=' at character 1 is not supported"},
      {"(?<!a)b", -1, -1, ": lookbehind '(?<!' at character 1 is not supported"},
      {"\\bword", -1, -1, ": the word boundary \\b at character 1 is not supported"},
      {"a\\B", -1, -1, ": the word boundary \\B at character 2 is not supported"},
      {"\\p{L}", -1, -1, ": the Unicode property \\p{...} at character 1 is not supported"},
      {"\\u{1F600}", -1, -1, ": the escape \\u{...} at character 1 is not supported"},
      {"\\uD800", -1, -1, ": a lone surrogate \\uD800 at character 1 is not supported"},
      {"a{3,2}", -1, -1, ": the repetition {3,2} (its minimum is past its maximum) at character 2"},
      {"a{,3}", -1, -1, ": '{,m}' (Python's {0,m}"},
      {"a{100001}", -1, -1, ": a repetition count past 100000 at character 2"},
      {"(ab", -1, -1, ": a '(' that is not closed at character 1"},
      {"ab)", -1, -1, ": an unmatched ')' at character 3"},
      {"[ab", -1, -1, ": a '[' that is not closed at character 1"},
      {"*a", -1, -1, ": '*' with nothing to repeat at character 1"},
      {"a**", -1, -1, ": a quantifier after a quantifier (nothing to repeat) at character 3"},
      {"\\q", -1, -1, ": the unknown escape \\q at character 1"},
      {"(?i)a", -1, -1, ": an unknown group '(?i'"},
      {"a\\", -1, -1, ": a '\\' at the end of the pattern at character 2"},
      {"[z-a]", -1, -1, ": a range in a class that is out of order at character 2"},
      {"[\\d-z]", -1, -1, ": a range in a class bounded by a class escape such as \\d"},
      {"a^b", -1, -1, ": the anchor '^' at character 2 is not supported (only '^' at the start"},
      {"(^a)", -1, -1, ": the anchor '^' at character 2 is not supported"},
      {"a$b", -1, -1, ": the anchor '$' at character 2 is not supported"},
      {"\\x4", -1, -1, ": a '\\x' without two hex digits at character 1"},
      {"\\01", -1, -1, ": the octal escape \\01 at character 1 is not supported"},
      {"[a-z]{30000}", -1, -1,
       ": the pattern's automaton has more than 20000 NFA states (a "
       "repetition such as {1000} copies"},
      {"a.{13}", -1, -1, ": the pattern needs a DFA of more than 4096 states"},
      {"[\\s\\S]{4000}", -1, -1, ": the pattern's DFA takes more than 16777216 steps to build"},
      {"^a+$", 3000000, -1,
       ": with minLength 3000000 and maxLength none the pattern's length table"},
      {42, -1, -1, " must be a string"},
  };
  for (const Case& c : cases) {
    json x = {{"type", "string"}, {"pattern", c.pattern}};
    if (c.min >= 0) x["minLength"] = c.min;
    if (c.max >= 0) x["maxLength"] = c.max;
    const json schema = {{"type", "object"}, {"properties", {{"x", x}}}};
    auto s = compile_json_schema(schema);
    CAPTURE(schema.dump());
    REQUIRE_FALSE(s.has_value());
    const std::string want = std::string("json schema: 'pattern' at /properties/x") + c.message;
    CHECK_MESSAGE(s.error().message.rfind(want, 0) == 0, s.error().message);
  }
  // Beside a format; beside enum (which fixes the values already).
  auto f = compile_json_schema(json::parse(
      R"({"type":"object","properties":{"d":{"type":"string","format":"date","pattern":"^2"}}})"));
  REQUIRE_FALSE(f.has_value());
  CHECK(f.error().message ==
        "json schema: 'pattern' beside 'format' at /properties/d is not supported");
  auto e = compile_json_schema(json::parse(R"({"enum":["a"],"pattern":"a"})"));
  REQUIRE_FALSE(e.has_value());
  CHECK(e.error().message ==
        "json schema: 'pattern' beside 'enum' at the top level is not supported");
  // No string of the lengths matches: no value at all.
  auto none =
      compile_json_schema(json::parse(R"({"type":"string","pattern":"^ab$","maxLength":1})"));
  REQUIRE_FALSE(none.has_value());
  CHECK(none.error().message == "json schema: no JSON value matches the schema");
}

TEST_CASE("json regex: a pattern constrains strings only; other types pass") {
  const auto s = compiled(json::parse(R"({"type":["string","integer"],"pattern":"^a+$"})"));
  CHECK(grammar_accepts(*s, "5"));
  CHECK(grammar_accepts(*s, R"("aa")"));
  CHECK_FALSE(grammar_accepts(*s, R"("b")"));
  // Without a type: any value, strings under the pattern.
  const auto any = compiled(json::parse(R"({"pattern":"^x"})"));
  CHECK(grammar_accepts(*any, "[1,{\"k\":\"y\"}]"));
  CHECK(grammar_accepts(*any, R"("xy")"));
  CHECK_FALSE(grammar_accepts(*any, R"("yx")"));
  // anyOf of two patterns: both branches begin with '"', the automaton
  // follows both (model/json_schema_nfa.h), and a string matches either.
  const auto two = compiled(json::parse(
      R"({"anyOf":[{"type":"string","pattern":"^[0-9]+$"},{"type":"string","pattern":"^[a-z]+$"}]})"));
  for (const char* good : {R"("123")", R"("abc")"}) {
    JsonSchemaNfa g(*two);
    CHECK((g.feed(good) && g.complete()));
  }
  for (const char* bad : {R"("a1")", R"("")", R"("1a")"}) {
    JsonSchemaNfa g(*two);
    CHECK_FALSE((g.feed(bad) && g.complete()));
  }
}
