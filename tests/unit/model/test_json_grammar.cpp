// JSON mode's byte automaton (model/json_grammar.h) against nlohmann::json's
// strict parser: documents it accepts the automaton accepts (within the
// automaton's nesting and whitespace limits), and every byte string the
// automaton reads to the end of a document nlohmann accepts too, over
// hand-written cases and thousands of random documents and mutations.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/json_grammar.h"

using namespace ls;

namespace {

// Whether the automaton reads all of s and ends on a complete document.
bool grammar_accepts(const std::string& s, bool object_only = true) {
  JsonGrammar g(object_only);
  return g.feed(s) && g.complete();
}

// nlohmann's verdict, for an object document within the automaton's limits.
bool strict_accepts(const std::string& s) {
  if (!nlohmann::json::accept(s)) return false;
  const nlohmann::json j = nlohmann::json::parse(s);
  return j.is_object();
}

// The automaton's own limits, which a strict parser does not have.
bool within_limits(const std::string& s) {
  if (!s.empty() && (s[0] == ' ' || s[0] == '\n' || s[0] == '\t' || s[0] == '\r')) return false;
  int depth = 0, max_depth = 0, run = 0, indent = 0;
  bool spaced = false, line = false, cr = false;      // the gap so far
  int num_state = 0, int_digits = 0, exp_digits = 0;  // 0 none, 1 integer, 2 fraction, 3 exponent
  bool in_string = false, escape = false;
  for (char c : s) {
    if (in_string) {
      if (escape)
        escape = false;
      else if (c == '\\')
        escape = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      if (++run > JsonGrammar::kMaxSpaceRun) return false;
      // One space or tab, or (after at most one) a line break and an
      // indentation of 4 a level (the gap policy, written out again here).
      if (cr && c == '\n') {  // "\r\n": one line break
        cr = false;
      } else if (c == '\r' || c == '\n') {
        if (line) return false;
        line = true;
        cr = c == '\r';
        indent = 0;
      } else if (line) {
        cr = false;
        if (++indent > JsonGrammar::kIndentPerLevel * (depth + 1)) return false;
      } else if (spaced) {
        return false;
      } else {
        spaced = true;
      }
      continue;
    }
    run = 0, spaced = line = cr = false;
    if (c == '"') in_string = true;
    // Numbers: the digits before the point and in the exponent.
    if ((c >= '0' && c <= '9') || c == '-') {
      if (c == '-' || num_state == 0) num_state = 1, int_digits = 0;
      if (c >= '0' && c <= '9') {
        if (num_state == 1 && ++int_digits > JsonGrammar::kMaxIntDigits) return false;
        if (num_state == 3 && ++exp_digits > JsonGrammar::kMaxExpDigits) return false;
      }
      continue;
    }
    if (num_state != 0 && c == '.') {
      num_state = 2;
      continue;
    }
    if (num_state != 0 && (c == 'e' || c == 'E')) {
      num_state = 3, exp_digits = 0;
      continue;
    }
    if (num_state != 0 && (c == '+')) continue;
    num_state = 0;
    if (c == '{' || c == '[') max_depth = std::max(max_depth, ++depth);
    if (c == '}' || c == ']') --depth;
  }
  return max_depth <= JsonGrammar::kMaxDepth;
}

std::string random_value(std::mt19937& rng, int depth);

std::string random_string(std::mt19937& rng) {
  static const char* const pieces[] = {"a",
                                       "key",
                                       " ",
                                       "\\n",
                                       "\\\"",
                                       "\\\\",
                                       "\\u00e9",
                                       "\\ud83d\\ude00",
                                       "\xc3\xa9",
                                       "\xe2\x82\xac",
                                       "\xf0\x9f\x98\x80",
                                       "/",
                                       "\\/",
                                       "x y",
                                       "0"};
  std::string s = "\"";
  const int n = std::uniform_int_distribution<int>(0, 4)(rng);
  for (int i = 0; i < n; ++i)
    s += pieces[std::uniform_int_distribution<size_t>(0, std::size(pieces) - 1)(rng)];
  return s + "\"";
}

std::string random_ws(std::mt19937& rng) {
  static const char* const ws[] = {"", "", "", " ", "\n", "\n  ", "\t", "\r\n"};
  return ws[std::uniform_int_distribution<size_t>(0, std::size(ws) - 1)(rng)];
}

std::string random_object(std::mt19937& rng, int depth) {
  std::string s = "{" + random_ws(rng);
  const int n = std::uniform_int_distribution<int>(0, 3)(rng);
  for (int i = 0; i < n; ++i) {
    if (i) s += "," + random_ws(rng);
    s += random_string(rng) + random_ws(rng) + ":" + random_ws(rng) + random_value(rng, depth + 1) +
         random_ws(rng);
  }
  return s + "}";
}

std::string random_value(std::mt19937& rng, int depth) {
  static const char* const scalars[] = {"0",      "-0",   "12",    "-3.25", "1e5",         "2E-3",
                                        "0.5e+7", "true", "false", "null",  "123456789012"};
  const int k = std::uniform_int_distribution<int>(0, depth > 4 ? 1 : 3)(rng);
  if (k == 0) return scalars[std::uniform_int_distribution<size_t>(0, std::size(scalars) - 1)(rng)];
  if (k == 1) return random_string(rng);
  if (k == 2) return random_object(rng, depth);
  std::string s = "[" + random_ws(rng);
  const int n = std::uniform_int_distribution<int>(0, 3)(rng);
  for (int i = 0; i < n; ++i) {
    if (i) s += "," + random_ws(rng);
    s += random_value(rng, depth + 1) + random_ws(rng);
  }
  return s + "]";
}

}  // namespace

TEST_CASE("json grammar: hand-written documents, accepted and refused as a strict parser does") {
  const char* const good[] = {"{}",
                              "{\"a\":1}",
                              "{\"a\" : [1, 2.5, -0.0e-1, true, false, null]}",
                              "{\"\\u00e9\\ud83d\\ude00\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"}",
                              "{\"k\":{\"k\":{}}}",
                              "{\"x\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}",
                              "{\n  \"a\": 1\n}\n"};
  for (const char* d : good) {
    CAPTURE(d);
    CHECK(strict_accepts(d));
    CHECK(grammar_accepts(d));
  }
  const char* const bad[] = {"[]",
                             "1",
                             "\"s\"",
                             "{\"a\":01}",
                             "{\"a\":1.}",
                             "{\"a\":.5}",
                             "{\"a\":-}",
                             "{\"a\":1e}",
                             "{\"a\":+1}",
                             "{a:1}",
                             "{\"a\":1,}",
                             "{\"a\" 1}",
                             "{\"a\":tru}",
                             "{\"a\":True}",
                             "{\"a\":\"\\x\"}",
                             "{\"a\":\"\\ud83d\"}",
                             "{\"a\":\"\\ude00\"}",
                             "{\"a\":\"\\ud83d\\u0041\"}",
                             "{\"a\":\"\x01\"}",
                             "{\"a\":\"\xc0\xaf\"}",
                             "{\"a\":\"\xed\xa0\x80\"}",
                             "{\"a\":\"\xf4\x90\x80\x80\"}",
                             "{\"a\":\"\xe0\x80\xaf\"}",
                             "{\"a\":\"\xff\"}",
                             "{\"a\":1}}",
                             "{\"a\":[1}",
                             " {}",
                             "{} x"};
  for (const char* d : bad) {
    CAPTURE(d);
    CHECK_FALSE(grammar_accepts(d));
  }
  // Every prefix of a good document is accepted, and only the whole is complete.
  const std::string doc = "{\"a\": [1, {\"b\": null}], \"c\": \"\\u00e9\"}";
  JsonGrammar g;
  for (size_t i = 0; i < doc.size(); ++i) {
    CHECK_FALSE(g.complete());
    REQUIRE(g.feed(static_cast<uint8_t>(doc[i])));
  }
  CHECK(g.complete());
  // No dead ends in escapes: \udc.. (a low surrogate alone) is refused at
  // its second digit, and after a high surrogate only \udc00-\udfff may
  // begin; the prefixes that can still end well are taken.
  for (const char* p :
       {"{\"a\":\"\\udc", "{\"a\":\"\\uDF", "{\"a\":\"\\ud83d\\ud8", "{\"a\":\"\\ud83d\\u0"}) {
    CAPTURE(p);
    CHECK_FALSE(JsonGrammar().accepts(p));
  }
  for (const char* p :
       {"{\"a\":\"\\ud", "{\"a\":\"\\udbff", "{\"a\":\"\\ud83d\\ud", "{\"a\":\"\\ud83d\\udf"}) {
    CAPTURE(p);
    CHECK(JsonGrammar().accepts(p));
  }
  // A refused byte leaves the state as it was.
  JsonGrammar h;
  REQUIRE(h.feed(std::string_view("{\"a\":")));
  CHECK_FALSE(h.feed(static_cast<uint8_t>('}')));
  CHECK(h.feed(std::string_view("2}")));
  CHECK(h.complete());
}

TEST_CASE("json grammar: the limits: nesting depth and whitespace runs") {
  std::string deep = "{\"a\":";
  for (int i = 1; i < JsonGrammar::kMaxDepth; ++i) deep += "[";
  JsonGrammar g;
  REQUIRE(g.feed(deep));
  CHECK_FALSE(g.accepts("["));  // one more container would pass the limit
  CHECK(g.accepts("1"));
  // Gaps as JSON writers make them: compact, one space, or a line break
  // and 4 a level of indentation; not blank lines or runs of spaces.
  JsonGrammar w;
  REQUIRE(w.feed(std::string_view("{")));
  for (const char* ok : {" \"k\"", "\n        \"k\"", "\r\n\t\"k\"", " \n  \"k\" : 1 ,\n  \"j\""}) {
    CAPTURE(ok);
    CHECK(w.accepts(ok));
  }
  for (const char* bad : {"  ", "\n\n", "\n         ", "\r\r", " \t", "\n \n", "\r\n\n"}) {
    CAPTURE(bad);
    CHECK_FALSE(w.accepts(bad));
  }
  CHECK(grammar_accepts(
      "{\n    \"a\": [\n        1,\n        {\n            \"b\": 2\n        }\n    ]\n}\n"));
  CHECK_FALSE(grammar_accepts("{\"a\": 1}\n\n"));
  // Numbers a double holds.
  CHECK(grammar_accepts("{\"n\":1e99}"));
  CHECK_FALSE(grammar_accepts("{\"n\":1e400}"));
  CHECK_FALSE(strict_accepts("{\"n\":1e400}"));
  CHECK(grammar_accepts("{\"n\":" + std::string(JsonGrammar::kMaxIntDigits, '9') + "}"));
  CHECK_FALSE(grammar_accepts("{\"n\":" + std::string(JsonGrammar::kMaxIntDigits + 1, '9') + "}"));
  // Scalar documents where object_only is off.
  JsonGrammar num(false);
  REQUIRE(num.feed(std::string_view("-12.5e3")));
  CHECK(num.complete());
  CHECK(grammar_accepts("[1,\"x\"]", false));
  CHECK_FALSE(grammar_accepts("[1,\"x\"]", true));
}

TEST_CASE("json grammar: random documents and their mutations agree with nlohmann's parser") {
  std::mt19937 rng(20261205);
  const char mutations[] = {'{', '}', '[', ']', '"', ':', ',', '\\',   '0',    '1',
                            '-', '.', 'e', 't', 'n', ' ', 'x', '\x01', '\x80', '\xc3'};
  int agreed_good = 0, agreed_bad = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string doc = random_object(rng, 0);
    CAPTURE(doc);
    REQUIRE(strict_accepts(doc));
    CHECK(grammar_accepts(doc) == within_limits(doc));
    // Mutate: replace, insert or delete a byte.
    std::string m = doc;
    const size_t at = std::uniform_int_distribution<size_t>(0, m.size() - 1)(rng);
    const char c = mutations[std::uniform_int_distribution<size_t>(0, sizeof mutations - 1)(rng)];
    switch (i % 3) {
      case 0:
        m[at] = c;
        break;
      case 1:
        m.insert(at, 1, c);
        break;
      default:
        m.erase(at, 1);
        break;
    }
    CAPTURE(m);
    const bool strict = strict_accepts(m) && within_limits(m);
    const bool ours = grammar_accepts(m);
    CHECK(ours == strict);
    (strict ? agreed_good : agreed_bad) += ours == strict;
  }
  MESSAGE("mutated documents: " << agreed_good << " valid, " << agreed_bad << " invalid, agreed");
  CHECK(agreed_good > 100);
  CHECK(agreed_bad > 1000);
}
