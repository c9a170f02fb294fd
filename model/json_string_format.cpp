#include "model/json_string_format.h"

namespace ls {

namespace {

bool digit(uint8_t c) {
  return c >= '0' && c <= '9';
}
bool hex(uint8_t c) {
  return digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int days_in(int year, int month) {
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
  return month == 2 && leap ? 29 : kDays[month - 1];
}

// A two-digit field from lo to hi: its first digit may come if a second
// makes a value in range; its second, if the value is.
bool two_digits(uint8_t pos_in_field, uint8_t first, uint8_t c, int lo, int hi) {
  if (!digit(c)) return false;
  const int d = c - '0';
  if (pos_in_field == 0) return d * 10 <= hi && d * 10 + 9 >= lo;
  const int v = first * 10 + d;
  return v >= lo && v <= hi;
}

// Position p of "HH:MM:SS" (a time, or the first five of an offset's
// "HH:MM"): hours 00-23, minutes and seconds 00-59.
bool clock_char(uint8_t p, uint8_t first, uint8_t c) {
  if (p == 2 || p == 5) return c == ':';
  if (p < 2) return two_digits(p, first, c, 0, 23);
  return two_digits(p % 3 == 0 ? 0 : 1, first, c, 0, 59);
}

}  // namespace

JsonStringFormat json_string_format_from_name(std::string_view name) {
  if (name == "date") return JsonStringFormat::Date;
  if (name == "time") return JsonStringFormat::Time;
  if (name == "date-time") return JsonStringFormat::DateTime;
  if (name == "uuid") return JsonStringFormat::Uuid;
  return JsonStringFormat::None;
}

namespace {

// Pieces of the patterns below.
#define LS_HEX4 "[0-9A-Fa-f]{1,4}"
#define LS_LABEL "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
#define LS_OCTET "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
#define LS_DUR_TIME "T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)"
// RFC 3986's unreserved and sub-delims characters, or a percent-escape;
// PCHAR adds ':' and '@'.
#define LS_URI_U "(?:[A-Za-z0-9._~!$&'()*+,;=-]|%[0-9A-Fa-f]{2})"
#define LS_URI_P "(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})"
// A relative reference's first segment: PCHAR but ':' (RFC 3986's
// segment-nz-nc, so that it does not read as a scheme).
#define LS_URI_NC "(?:[A-Za-z0-9._~!$&'()*+,;=@-]|%[0-9A-Fa-f]{2})"
// After the scheme: "//" authority and a path, an absolute path, a path
// whose first segment is of FIRST's characters, or none.
#define LS_URI_HIER(FIRST)                                                                   \
  "(?://(?:(?:" LS_URI_U "|:)*@)?" LS_URI_U "*(?::[0-9]*)?(?:/" LS_URI_P "*)*|/(?:" LS_URI_P \
  "+(?:/" LS_URI_P "*)*)?|" FIRST "+(?:/" LS_URI_P "*)*)?"
// What follows a URI's path, and a relative reference's: query, fragment.
#define LS_URI_QF "(?:\\?(?:" LS_URI_P "|[/?])*)?(?:#(?:" LS_URI_P "|[/?])*)?"
// A JSON pointer (RFC 6901): "/"-separated tokens, '~' escaped as ~0 or ~1.
#define LS_POINTER "(?:/(?:[^~/]|~[01])*)*"

struct NamedPattern {
  std::string_view name;
  JsonFormatPattern pattern;
};

constexpr NamedPattern kPatterns[] = {
    {"email",
     {"^[A-Za-z0-9_%+-]+(?:\\.[A-Za-z0-9_%+-]+)*@(?:" LS_LABEL "\\.)+[A-Za-z](?:[A-Za-z0-9-]{0,61}"
      "[A-Za-z0-9])?$",
      254}},
    {"hostname", {"^" LS_LABEL "(?:\\." LS_LABEL ")*$", 253}},
    {"ipv4", {"^" LS_OCTET "(?:\\." LS_OCTET "){3}$", 0}},
    // Each alternative places the "::" (the groups it stands for) once.
    {"ipv6",
     {"^(?:(?:" LS_HEX4 ":){7}" LS_HEX4 "|(?:" LS_HEX4 ":){1,7}:|(?:" LS_HEX4 ":){1,6}:" LS_HEX4
      "|(?:" LS_HEX4 ":){1,5}(?::" LS_HEX4 "){1,2}|(?:" LS_HEX4 ":){1,4}(?::" LS_HEX4
      "){1,3}|(?:" LS_HEX4 ":){1,3}(?::" LS_HEX4 "){1,4}|(?:" LS_HEX4 ":){1,2}(?::" LS_HEX4
      "){1,5}|" LS_HEX4 ":(?::" LS_HEX4 "){1,6}|:(?:(?::" LS_HEX4 "){1,7}|:))$",
      0}},
    // RFC 3339's grammar: a year's months and days follow it in order, with
    // none skipped (P1Y2D is not one), as do an hour's minutes and seconds.
    {"duration",
     {"^P(?:(?:[0-9]+D|[0-9]+M(?:[0-9]+D)?|[0-9]+Y(?:[0-9]+M(?:[0-9]+D)?)?)(?:" LS_DUR_TIME
      ")?|" LS_DUR_TIME "|[0-9]+W)$",
      0}},
    {"uri", {"^[A-Za-z][A-Za-z0-9+.-]*:" LS_URI_HIER(LS_URI_P) LS_URI_QF "$", 0}},
    // A URI, or a relative reference (RFC 3986, 4.1): a network path, an
    // absolute or a relative one (its first segment without ':'), or none,
    // then the query and the fragment.
    {"uri-reference",
     {"^(?:[A-Za-z][A-Za-z0-9+.-]*:" LS_URI_HIER(LS_URI_P) "|" LS_URI_HIER(LS_URI_NC) ")" LS_URI_QF
                                                                                      "$",
      0}},
    {"json-pointer", {"^" LS_POINTER "$", 0}},
    // A non-negative integer, then '#' or a JSON pointer (draft 2019-09).
    {"relative-json-pointer", {"^(?:0|[1-9][0-9]*)(?:#|" LS_POINTER ")$", 0}},
};

#undef LS_HEX4
#undef LS_LABEL
#undef LS_OCTET
#undef LS_DUR_TIME
#undef LS_URI_U
#undef LS_URI_P
#undef LS_URI_NC
#undef LS_URI_HIER
#undef LS_URI_QF
#undef LS_POINTER

}  // namespace

const JsonFormatPattern* json_format_pattern(std::string_view name) {
  for (const NamedPattern& p : kPatterns)
    if (p.name == name) return &p.pattern;
  return nullptr;
}

JsonFormatState JsonFormatState::start(JsonStringFormat f) {
  JsonFormatState s;
  s.stage = f == JsonStringFormat::Time   ? TimeStage
            : f == JsonStringFormat::Uuid ? UuidStage
                                          : DateStage;
  return s;
}

bool JsonFormatState::take(JsonStringFormat f, uint8_t c) {
  switch (stage) {
    case DateStage:  // YYYY-MM-DD
      switch (pos) {
        case 0:
        case 1:
        case 2:
        case 3:
          if (!digit(c)) return false;
          year = static_cast<uint16_t>(year * 10 + (c - '0'));
          break;
        case 4:
        case 7:
          if (c != '-') return false;
          break;
        case 5:
        case 6:
          if (!two_digits(pos - 5, first, c, 1, 12)) return false;
          if (pos == 6) month = static_cast<uint8_t>(first * 10 + (c - '0'));
          break;
        case 8:
        case 9:
          if (!two_digits(pos - 8, first, c, 1, days_in(year, month))) return false;
          break;
      }
      if (digit(c)) first = static_cast<uint8_t>(c - '0');
      if (++pos == 10) {
        pos = 0;
        stage = f == JsonStringFormat::Date ? Done : TimeStage;
        // date-time: the 'T' comes as the time stage's character -1.
        if (stage == TimeStage) pos = 0xFF;
      }
      return true;
    case TimeStage:  // [T]HH:MM:SS
      if (pos == 0xFF) {
        if (c != 'T') return false;
        pos = 0;
        return true;
      }
      if (!clock_char(pos, first, c)) return false;
      if (digit(c)) first = static_cast<uint8_t>(c - '0');
      if (++pos == 8) stage = AfterSeconds, pos = 0;
      return true;
    case AfterSeconds:
      if (c == '.') {
        stage = Fraction;
        pos = 0;
        return true;
      }
      [[fallthrough]];
    case Fraction:
      if (stage == Fraction && digit(c) && pos < 9) {
        ++pos;
        return true;
      }
      if (stage == Fraction && pos == 0) return false;  // "12:00:00." needs a digit
      if (c == 'Z') {
        stage = Done;
        return true;
      }
      if (c != '+' && c != '-') return false;
      stage = Offset;
      pos = 0;
      return true;
    case Offset:  // HH:MM
      if (!clock_char(pos, first, c)) return false;
      if (digit(c)) first = static_cast<uint8_t>(c - '0');
      if (++pos == 5) stage = Done;
      return true;
    case UuidStage:  // 8-4-4-4-12
      if (pos == 8 || pos == 13 || pos == 18 || pos == 23) {
        if (c != '-') return false;
      } else if (!hex(c)) {
        return false;
      }
      if (++pos == 36) stage = Done;
      return true;
    default:  // Done: nothing more
      return false;
  }
}

}  // namespace ls
