// A JSON schema's numeric bounds (minimum, maximum, exclusiveMinimum,
// exclusiveMaximum) for the byte automaton of model/json_schema_grammar.h:
// whether a number's text so far can still be finished inside them, and
// whether a whole number is inside.
//
// Exact decimal arithmetic, never binary floating point: a bound is read
// from its shortest decimal form (nlohmann's dump: 0.3 is "0.3", not
// 0.299999999999999988898), and a number's text is a decimal. A closed
// bound then holds for a validator that parses to double too (rounding to
// the nearest double never reverses an order); an open one might not
// (a decimal just under 0.25 can round to 0.25), so the schema compiler
// closes it at the next double inside (model/json_schema.cpp).
//
// Under bounds a number is written without an exponent, with at most
// kMaxIntDigits digits before the point and kMaxFracDigits after it, and
// the prefix test counts exactly the numbers of that form (multiples of
// 10^-kMaxFracDigits, or of 1 for integers, in a range): a prefix it
// accepts can be finished inside the bounds, whatever they are (no dead
// ends), and bounds no such number meets make the schema unsatisfiable.
// defines: JsonDecimal, JsonNumberBounds
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/status.h"

namespace ls {

// (-1 if neg) x digits x 10^exp; digits without leading zeros ("0" for zero,
// which is never negative).
struct JsonDecimal {
  bool neg = false;
  std::string digits = "0";
  int32_t exp = 0;

  // A JSON number's text (with or without fraction and exponent).
  static Expected<JsonDecimal> parse(std::string_view text);
  bool zero() const { return digits == "0"; }
};

// -1, 0, 1.
int json_decimal_compare(const JsonDecimal& a, const JsonDecimal& b);

struct JsonNumberBounds {
  static constexpr int kMaxIntDigits = 21;
  static constexpr int kMaxFracDigits = 40;
  // Under multipleOf the numbers keep within +-2^53 (model/json_schema.cpp
  // adds the bounds), where a client's validator, dividing in doubles, sees
  // the multiples the automaton writes as multiples too; the largest
  // multipleOf taken is that too.
  static constexpr uint64_t kMaxStep = 9007199254740992ull;
  bool has_min = false, has_max = false;
  bool min_open = false, max_open = false;  // exclusiveMinimum / exclusiveMaximum
  JsonDecimal min, max;
  // multipleOf, a whole number from 1 to kMaxStep (0: none): the numbers
  // are its integer multiples, exactly (a number's text is a decimal).
  uint64_t step = 0;

  bool any() const { return has_min || has_max || step != 0; }
  // Some number (an integer, when integer_only) lies inside.
  bool satisfiable(bool integer_only) const { return can_finish("", integer_only); }
  // prefix: a number's text so far ("", "-", "12", "0.", "-3.25"), read by
  // the JSON lexer already; whether some text that starts with it and has
  // the form above is a number inside the bounds.
  bool can_finish(std::string_view prefix, bool integer_only) const;
  // A whole number's text is inside (and of the form above).
  bool inside(std::string_view text) const;
};

}  // namespace ls
