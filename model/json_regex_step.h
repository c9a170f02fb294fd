// A pattern's DFA (model/json_regex.h) stepped through the bytes of a JSON
// string's body as the model writes them, for the byte automaton of
// model/json_schema_grammar.h: the pattern runs on the decoded string, the
// automaton sees its JSON text.
//
// A byte below 0x80 is the code point itself. A UTF-8 lead or continuation
// byte narrows the code point still to come: those that share a UTF-8 byte
// prefix form one interval [lo, hi], so a byte is taken only if some edge
// of the DFA state intersects the narrowed interval and leads to a state
// that can still end (lengths included); the edge is taken once the
// character is whole. An escape likewise: at the '\', any code point up to
// U+FFFF may follow; \" \\ \/ \b \f \n \r \t are one code point each, and
// \uXXXX narrows [lo, hi] a hex digit at a time (most significant first:
// an interval again). Surrogate escapes (\uD800-\uDFFF, so a pair for a
// character past U+FFFF) are refused in a string under a pattern: such a
// character comes as its four UTF-8 bytes (but see free states below).
//
// The JSON lexer (model/json_grammar.h) runs first and has refused what is
// not JSON (control bytes, bad UTF-8, bad escapes); no dead ends here: a
// byte is taken only where some code point it can begin leads to a state
// from which the pattern and the lengths can both be finished.
//
// In a state that every code point leaves as it is, accepting and without
// lengths (JsonRegex::free: "contains X" once X is read), bytes are taken
// without a look (a surrogate pair's escape too: whatever it writes matches). Trivially copyable,
// 16 bytes, no allocation: the grammar is copied for every trial feed of a vocabulary's tokens.
// defines: JsonRegexStep
#pragma once

#include <cstdint>
#include <type_traits>

#include "model/json_regex.h"

namespace ls {

struct JsonRegexStep {
  enum Stage : uint8_t { Whole, Utf8, Escape, Hex };
  uint32_t state = 0;       // the DFA state after the whole characters read
  uint32_t lo = 0, hi = 0;  // Utf8 / Hex: the code points the bytes so far allow
  uint8_t stage = Whole;
  uint8_t due = 0;    // Utf8: continuation bytes still due; Hex: hex digits
  uint8_t bytes = 0;  // Utf8: the character's length in bytes

  static JsonRegexStep start(const JsonRegex& re) {
    JsonRegexStep s;
    s.state = re.start();
    return s;
  }
  // One byte of the string's body (never its closing quote). chars: the
  // string's characters once the one this byte belongs to is whole. False
  // (the state then unspecified) if the byte cannot come.
  bool take(const JsonRegex& re, uint8_t b, uint32_t chars);
  // The closing quote may come: whole characters, in an accepting state,
  // chars within the lengths.
  bool can_close(const JsonRegex& re, uint32_t chars) const {
    return stage == Whole && re.ends(state, chars);
  }
  bool operator==(const JsonRegexStep&) const = default;
};
static_assert(sizeof(JsonRegexStep) == 16 && std::is_trivially_copyable_v<JsonRegexStep>);

}  // namespace ls
