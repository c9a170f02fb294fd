#include "model/json_regex_step.h"

#include <algorithm>

namespace ls {

namespace {

int hex_value(uint8_t b) {
  if (b >= '0' && b <= '9') return b - '0';
  if (b >= 'a' && b <= 'f') return b - 'a' + 10;
  if (b >= 'A' && b <= 'F') return b - 'A' + 10;
  return -1;
}

// The least code point a UTF-8 sequence of n bytes holds (less is an
// overlong form, which the lexer refuses): E0 and F0 leads begin intervals
// that are partly below it.
constexpr uint32_t kLeast[5] = {0, 0, 0x80, 0x800, 0x10000};

}  // namespace

bool JsonRegexStep::take(const JsonRegex& re, uint8_t b, uint32_t chars) {
  // Whatever follows matches: the lexer's checks are enough.
  if (stage == Whole && re.free(state)) return true;
  uint32_t to = 0;
  // A whole character: its edge, to a state that can still end.
  auto whole = [&](uint32_t cp) {
    if (!re.can_take(state, cp, cp, chars, &to)) return false;
    state = to;
    stage = Whole;
    return true;
  };
  switch (stage) {
    case Whole:
      if (b == '\\') {
        // \uXXXX writes any code point up to U+FFFF (the short escapes' too).
        stage = Escape;
        return re.can_take(state, 0, 0xFFFF, chars, &to);
      }
      if (b < 0x80) return whole(b);
      if (b >= 0xC2 && b <= 0xDF) {
        bytes = 2;
        lo = b & 0x1F;
      } else if (b >= 0xE0 && b <= 0xEF) {
        bytes = 3;
        lo = b & 0x0F;
      } else if (b >= 0xF0 && b <= 0xF4) {
        bytes = 4;
        lo = b & 0x07;
      } else {
        return false;
      }
      due = static_cast<uint8_t>(bytes - 1);
      stage = Utf8;
      lo <<= 6 * due;
      hi = lo | ((1u << (6 * due)) - 1);
      return re.can_take(state, std::max(lo, kLeast[bytes]), hi, chars, &to);
    case Utf8:
      if ((b & 0xC0) != 0x80) return false;
      --due;
      lo |= static_cast<uint32_t>(b & 0x3F) << (6 * due);
      hi = lo | ((1u << (6 * due)) - 1);
      if (due == 0) return whole(lo);
      return re.can_take(state, std::max(lo, kLeast[bytes]), hi, chars, &to);
    case Escape:
      switch (b) {
        case 'u':  // [0, U+FFFF] was checked at the '\'
          stage = Hex;
          due = 4;
          lo = 0;
          hi = 0xFFFF;
          return true;
        case '"':
        case '\\':
        case '/':
          return whole(b);
        case 'b':
          return whole('\b');
        case 'f':
          return whole('\f');
        case 'n':
          return whole('\n');
        case 'r':
          return whole('\r');
        case 't':
          return whole('\t');
        default:
          return false;
      }
    case Hex: {
      const int v = hex_value(b);
      if (v < 0) return false;
      --due;
      lo |= static_cast<uint32_t>(v) << (4 * due);
      hi = lo | ((1u << (4 * due)) - 1);
      if (due == 0) return whole(lo);
      // No edge holds a surrogate, so digits that can only make one fail here.
      return re.can_take(state, lo, hi, chars, &to);
    }
  }
  return false;
}

}  // namespace ls
