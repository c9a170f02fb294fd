// String formats of a JSON schema ("format": "date", "time", "date-time",
// "uuid": what pydantic writes for date, time, datetime and UUID fields)
// as small automata over a string's characters, for the byte automaton of
// model/json_schema_grammar.h.
//
// The text is the subset of RFC 3339 and RFC 4122 that every validator
// takes: full-date YYYY-MM-DD with a day that exists in that month and year
// (29 February only in leap years); time HH:MM:SS with an optional fraction
// of 1 to 9 digits and a required offset, "Z" or +HH:MM / -HH:MM (hours
// 00-23, minutes and seconds 00-59: no leap second, no lower-case "t" or
// "z"); date-time = date "T" time; uuid 8-4-4-4-12 hex digits, either case.
// Characters come as themselves (an escape in such a string is refused).
//
// No dead ends: a character is taken only where some text that starts with
// those read so far is a whole value (a month's first digit 0 or 1; a
// day's first digit only up to what the month's last day allows).
// defines: JsonStringFormat, json_string_format_from_name, JsonFormatState
#pragma once

#include <cstdint>
#include <string_view>

namespace ls {

enum class JsonStringFormat : uint8_t { None, Date, Time, DateTime, Uuid };

// The format a schema names; None for a name not supported.
JsonStringFormat json_string_format_from_name(std::string_view name);

// Where a string of a format stands: a few bytes, copied with the automaton.
struct JsonFormatState {
  enum Stage : uint8_t { DateStage, TimeStage, AfterSeconds, Fraction, Offset, UuidStage, Done };
  uint8_t stage = DateStage;
  uint8_t pos = 0;  // characters read in the stage
  uint16_t year = 0;
  uint8_t month = 0;
  uint8_t first = 0;  // the first digit of the two-digit field being read

  static JsonFormatState start(JsonStringFormat f);
  // One character; false (the state then unspecified) if it cannot come.
  bool take(JsonStringFormat f, uint8_t c);
  // A whole value has been read.
  bool complete() const { return stage == Done; }
  bool operator==(const JsonFormatState&) const = default;
};

}  // namespace ls
