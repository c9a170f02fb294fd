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
//
// The formats past these four that OpenAI's structured outputs and
// pydantic use ("email", "hostname", "ipv4", "ipv6", "duration", "uri") are
// regular languages too wide for such a hand automaton: each is given as an
// ECMA-262 pattern, which model/json_schema.cpp compiles as it compiles a
// "pattern" (model/json_regex.h), with the string's lengths, so minLength
// and maxLength beside them are kept to. Each pattern is a subset of its
// RFC's syntax (a validator's policy beyond it, such as email-validator's
// refusal of special-use domains like .test, is not followed):
//   email     a dot-atom local part of letters, digits and _%+- , '@', a
//             domain of two or more labels whose last begins with a letter
//             (RFC 5321 mailbox without quoted strings or address literals;
//             at most 254 characters, its path limit less the brackets; the
//             local part's own limit, 64, is not kept)
//   hostname  RFC 1123 labels: 1-63 letters, digits and '-', no '-' at a
//             label's ends; at most 253 characters
//   ipv4      dotted quad, 0-255, no leading zero (RFC 2673)
//   ipv6      RFC 4291's eight groups of 1-4 hex digits, or fewer with one
//             "::" (no embedded IPv4, no zone)
//   duration  RFC 3339 Appendix A's ISO 8601 durations (P1Y2M, PT5M30S, P3W)
//   uri       RFC 3986: scheme ":" then "//" authority (no IP literal) and
//             a path, or a path; query and fragment; percent-escapes
// defines: JsonStringFormat, json_string_format_from_name, JsonFormatState,
//          JsonFormatPattern, json_format_pattern
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

// A format given as a pattern: the regular expression, and the most
// characters its text may have (0: no limit of its own).
struct JsonFormatPattern {
  const char* regex;
  uint32_t max_chars;
};

// The pattern of a format of the list above; nullptr for any other name
// (date, time, date-time and uuid are json_string_format_from_name's).
const JsonFormatPattern* json_format_pattern(std::string_view name);

}  // namespace ls
