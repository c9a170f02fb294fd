#include "model/json_grammar.h"

namespace ls {

namespace {

bool is_space(uint8_t b) {
  return b == ' ' || b == '\t' || b == '\n' || b == '\r';
}
bool is_digit(uint8_t b) {
  return b >= '0' && b <= '9';
}
int hex_value(uint8_t b) {
  if (b >= '0' && b <= '9') return b - '0';
  if (b >= 'a' && b <= 'f') return b - 'a' + 10;
  if (b >= 'A' && b <= 'F') return b - 'A' + 10;
  return -1;
}
constexpr std::string_view kLiterals[3] = {"true", "false", "null"};

}  // namespace

bool JsonGrammar::feed(uint8_t b) {
  const JsonGrammar before = *this;
  if (step(b)) return true;
  *this = before;
  return false;
}

bool JsonGrammar::feed(std::string_view bytes) {
  for (char c : bytes)
    if (!feed(static_cast<uint8_t>(c))) return false;
  return true;
}

bool JsonGrammar::accepts(std::string_view bytes) const {
  JsonGrammar g = *this;
  for (char c : bytes)
    if (!g.step(static_cast<uint8_t>(c))) return false;
  return true;
}

bool JsonGrammar::complete() const {
  if (state_ == State::Done) return true;
  // A number at the top level ends with the output (a scalar document).
  return depth_ == 0 && !object_only_ &&
         (state_ == State::Zero || state_ == State::Int || state_ == State::Frac ||
          state_ == State::ExpInt);
}

JsonGrammar::Lexeme JsonGrammar::lexeme() const {
  switch (state_) {
    case State::String:
      return Lexeme::StringBody;
    case State::Escape:
    case State::Hex:
    case State::LowBackslash:
    case State::LowU:
    case State::Utf8:
      return Lexeme::StringRest;
    case State::Minus:
    case State::Zero:
    case State::Int:
    case State::Dot:
    case State::Frac:
    case State::Exp:
    case State::ExpSign:
    case State::ExpInt:
      return Lexeme::Number;
    case State::Literal:
      return Lexeme::Literal;
    default:
      return Lexeme::Structure;
  }
}

// A gap between tokens is what JSON writers put there: nothing, one space
// or tab, or one line break ("\n", "\r\n" or "\r", after at most one space) and
// the next line's indentation, up to kIndentPerLevel a level of the
// containers open. So a model cannot fill a gap with blank lines or a run of
// spaces (small models do, in JSON mode: 300 tokens of a 40-token answer).
bool JsonGrammar::space(uint8_t b) {
  if (++space_run_ > kMaxSpaceRun) return false;
  if (b == '\n' && gap_ == Gap::Cr) {  // "\r\n": one line break
    gap_ = Gap::Line;
    return true;
  }
  if (b == '\r' || b == '\n') {
    if (gap_ == Gap::Line || gap_ == Gap::Cr) return false;  // one line break a gap
    gap_ = b == '\r' ? Gap::Cr : Gap::Line;
    indent_ = 0;
    return true;
  }
  // ' ' or '\t'
  if (gap_ == Gap::Line || gap_ == Gap::Cr) {
    gap_ = Gap::Line;
    return ++indent_ <= kIndentPerLevel * (depth_ + 1);
  }
  if (gap_ == Gap::Space) return false;  // one before a line break
  gap_ = Gap::Space;
  return true;
}

bool JsonGrammar::push(uint8_t container) {
  if (depth_ == kMaxDepth) return false;
  stack_[static_cast<size_t>(depth_++)] = container;
  return true;
}

bool JsonGrammar::end_value() {
  state_ = depth_ == 0 ? State::Done : State::After;
  return true;
}

bool JsonGrammar::number_end(uint8_t b) {
  end_value();
  return step(b);
}

bool JsonGrammar::value_start(uint8_t b) {
  switch (b) {
    case '{':
      if (!push('{')) return false;
      state_ = State::ObjectFirst;
      return true;
    case '[':
      if (!push('[')) return false;
      state_ = State::ArrayFirst;
      return true;
    case '"':
      key_ = false;
      state_ = State::String;
      return true;
    case '-':
      int_digits_ = 0;
      state_ = State::Minus;
      return true;
    case 't':
    case 'f':
    case 'n':
      lit_ = b == 't' ? 0 : b == 'f' ? 1 : 2;
      lit_i_ = 1;
      state_ = State::Literal;
      return true;
    default:
      return int_start(b);
  }
}

bool JsonGrammar::int_start(uint8_t b) {
  if (!is_digit(b)) return false;
  int_digits_ = 1;
  state_ = b == '0' ? State::Zero : State::Int;
  return true;
}

bool JsonGrammar::step(uint8_t b) {
  if (state_ == State::Start && is_space(b)) return false;  // the output starts with the value
  switch (state_) {
    case State::Value:
    case State::ArrayFirst:
    case State::ObjectFirst:
    case State::Key:
    case State::Colon:
    case State::After:
    case State::Done:
      if (is_space(b)) return space(b);
      space_run_ = 0;
      gap_ = Gap::None;
      break;
    default:
      break;
  }
  switch (state_) {
    case State::Start:
      if (object_only_ && b != '{') return false;
      return value_start(b);
    case State::Value:
      return value_start(b);
    case State::ArrayFirst:
      if (b == ']') {
        --depth_;
        return end_value();
      }
      return value_start(b);
    case State::ObjectFirst:
      if (b == '}') {
        --depth_;
        return end_value();
      }
      [[fallthrough]];
    case State::Key:
      if (b != '"') return false;
      key_ = true;
      state_ = State::String;
      return true;
    case State::Colon:
      if (b != ':') return false;
      state_ = State::Value;
      return true;
    case State::After: {
      const uint8_t top = stack_[static_cast<size_t>(depth_ - 1)];
      if (b == ',') {
        state_ = top == '{' ? State::Key : State::Value;
        return true;
      }
      if ((b == '}' && top == '{') || (b == ']' && top == '[')) {
        --depth_;
        return end_value();
      }
      return false;
    }
    case State::Done:
      return false;
    case State::String:
      if (b == '"') {
        if (key_) {
          state_ = State::Colon;
          return true;
        }
        return end_value();
      }
      if (b == '\\') {
        state_ = State::Escape;
        return true;
      }
      if (b < 0x20) return false;
      if (b < 0x80) return true;
      // A UTF-8 lead byte and the range of the byte after it (RFC 3629).
      utf8_lo_ = 0x80;
      utf8_hi_ = 0xBF;
      if (b >= 0xC2 && b <= 0xDF) {
        utf8_left_ = 1;
      } else if (b >= 0xE0 && b <= 0xEF) {
        utf8_left_ = 2;
        if (b == 0xE0) utf8_lo_ = 0xA0;  // no overlong form
        if (b == 0xED) utf8_hi_ = 0x9F;  // no surrogate
      } else if (b >= 0xF0 && b <= 0xF4) {
        utf8_left_ = 3;
        if (b == 0xF0) utf8_lo_ = 0x90;
        if (b == 0xF4) utf8_hi_ = 0x8F;  // nothing past U+10FFFF
      } else {
        return false;
      }
      state_ = State::Utf8;
      return true;
    case State::Utf8:
      if (b < utf8_lo_ || b > utf8_hi_) return false;
      utf8_lo_ = 0x80;
      utf8_hi_ = 0xBF;
      if (--utf8_left_ == 0) state_ = State::String;
      return true;
    case State::Escape:
      if (b == 'u') {
        hex_n_ = 0;
        hex_ = 0;
        state_ = State::Hex;
        return true;
      }
      if (b == '"' || b == '\\' || b == '/' || b == 'b' || b == 'f' || b == 'n' || b == 'r' ||
          b == 't') {
        state_ = State::String;
        return true;
      }
      return false;
    case State::Hex: {
      const int v = hex_value(b);
      if (v < 0) return false;
      hex_ = static_cast<uint16_t>(hex_ * 16 + v);
      if (++hex_n_ < 4) {
        // No dead ends: the values the digits so far can still become must
        // include one that may stand here (\udc.. can only be a lone low
        // surrogate; after a high one, only a low one may come).
        const int shift = 4 * (4 - hex_n_);
        const uint32_t lo = static_cast<uint32_t>(hex_) << shift, hi = lo + (1u << shift) - 1;
        if (low_due_) return hi >= 0xDC00 && lo <= 0xDFFF;
        return !(lo >= 0xDC00 && hi <= 0xDFFF);
      }
      const bool high = hex_ >= 0xD800 && hex_ <= 0xDBFF, low = hex_ >= 0xDC00 && hex_ <= 0xDFFF;
      if (low_due_) {
        if (!low) return false;
        low_due_ = false;
        state_ = State::String;
        return true;
      }
      if (low) return false;  // a low surrogate alone
      if (high) {
        low_due_ = true;
        state_ = State::LowBackslash;
        return true;
      }
      state_ = State::String;
      return true;
    }
    case State::LowBackslash:
      if (b != '\\') return false;
      state_ = State::LowU;
      return true;
    case State::LowU:
      if (b != 'u') return false;
      hex_n_ = 0;
      hex_ = 0;
      state_ = State::Hex;
      return true;
    case State::Minus:
      return int_start(b);
    case State::Zero:
    case State::Int:
      if (state_ == State::Int && is_digit(b)) return ++int_digits_ <= kMaxIntDigits;
      if (b == '.') {
        state_ = State::Dot;
        return true;
      }
      if (b == 'e' || b == 'E') {
        state_ = State::Exp;
        return true;
      }
      return number_end(b);
    case State::Dot:
      if (!is_digit(b)) return false;
      state_ = State::Frac;
      return true;
    case State::Frac:
      if (is_digit(b)) return true;
      if (b == 'e' || b == 'E') {
        state_ = State::Exp;
        return true;
      }
      return number_end(b);
    case State::Exp:
      if (b == '+' || b == '-') {
        state_ = State::ExpSign;
        return true;
      }
      [[fallthrough]];
    case State::ExpSign:
      if (!is_digit(b)) return false;
      exp_digits_ = 1;
      state_ = State::ExpInt;
      return true;
    case State::ExpInt:
      if (is_digit(b)) return ++exp_digits_ <= kMaxExpDigits;
      return number_end(b);
    case State::Literal: {
      const std::string_view lit = kLiterals[lit_];
      if (b != static_cast<uint8_t>(lit[lit_i_])) return false;
      if (++lit_i_ == lit.size()) return end_value();
      return true;
    }
  }
  return false;
}

}  // namespace ls
