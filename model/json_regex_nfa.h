// JSON Schema's "pattern", an ECMA-262 regular expression, parsed into an
// NFA over Unicode code points (Thompson's construction), for the DFA of
// model/json_regex.h.
//
// The pattern is not anchored (JSON Schema: it matches anywhere in the
// string), so each top-level alternative is read as [\s\S]*(?:alt)[\s\S]*,
// without the prefix where it begins with '^' and without the suffix where
// it ends with an unescaped '$'. '^' and '$' anywhere else are refused.
//
// Supported: literals (any code point); '.' (any but \n \r U+2028 U+2029);
// classes [...] and [^...] with ranges and escapes ([\b] is U+0008, [] is
// nothing, [^] is anything); \d \D \w \W \s \S (ECMA's: ASCII digits and
// word characters; \s its 25 white-space code points); \t \n \r \f \v \0
// \xHH \uHHHH (a surrogate pair of them is one code point) \cX and escaped
// punctuation; groups (...), (?:...), (?<name>...); alternation; the
// quantifiers * + ? {n} {n,} {n,m} and their lazy forms (laziness does not
// change which strings match). A '{', '}' or ']' that does not start or end
// a quantifier or class is itself, as ECMA-262's Annex B reads it.
//
// Refused, by name and the character of the pattern where it is:
// backreferences (\1, \k<name>), lookahead and lookbehind, \b \B, \p{...},
// \u{...}, a lone surrogate, unknown escapes of letters and digits,
// {n,m} with n > m, {,m} (Python's {0,m}; not a quantifier in ECMA-262),
// counts past 100000, groups nested deeper than 100, and any other syntax
// error. No NFA has more than kMaxStates states: a repetition copies what
// it repeats, so [a-z]{30000} is refused.
//
// Code points D800-DFFF (surrogates) are never in a set: a JSON string's
// text cannot hold one alone.
// defines: CodeRange, RegexNfa, regex_nfa
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "runtime/status.h"

namespace ls {

struct CodeRange {
  uint32_t lo, hi;  // code points lo..hi, both included
};

struct RegexNfa {
  static constexpr size_t kMaxStates = 20000;
  struct State {
    int32_t set = -1;  // >= 0: reads one code point of sets[set], then goes to out
    int32_t out = -1;  // set < 0: goes to out and out2 without reading (-1: nowhere)
    int32_t out2 = -1;
  };
  std::vector<State> states;
  // Each sorted, disjoint, without surrogates; shared by the copies of a repetition.
  std::vector<std::vector<CodeRange>> sets;
  int32_t start = -1;
  int32_t accept = -1;  // the accepting state (reads nothing, goes nowhere)
  // The state of an unanchored end's loop ([\s\S]*, then accept), -1 if no
  // alternative has one: a set of states that holds it accepts every
  // continuation.
  int32_t any_tail = -1;
};

// The pattern's NFA, or an error naming the construct and its character
// ("lookahead '(?=' at character 3 is not supported").
Expected<RegexNfa> regex_nfa(std::string_view pattern);

}  // namespace ls
