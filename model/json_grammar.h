// JSON (RFC 8259) as a byte-level pushdown automaton, for constrained
// decoding (model/token_constraint.h): feed() takes the output's bytes one
// at a time and says whether they can still begin a valid document, so a
// token is allowed when all of its bytes are. What it accepts is what a
// strict parser (nlohmann::json) accepts: strings hold valid UTF-8 (RFC 3629:
// no overlong forms, no surrogates, nothing past U+10FFFF) and no control
// bytes, \u escapes pair their surrogates, numbers have JSON's form.
//
// Limits, so that a model cannot run the output on for ever: containers
// nest at most kMaxDepth deep; whitespace between tokens is what JSON
// writers put there (nothing, one space or tab, or one line break and an
// indentation of at most kIndentPerLevel a level of the containers open;
// never more than kMaxSpaceRun bytes), and none comes before the document. Numbers are
// ones a double holds, as a strict parser wants (nlohmann::json refuses
// 1e400): at most kMaxIntDigits digits before the point and kMaxExpDigits
// in the exponent. With object_only (OpenAI's response_format
// "json_object") the document must be an object. A copy is a few hundred
// bytes and allocates nothing (a trial feed works on a copy).
// defines: JsonGrammar
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace ls {

class JsonGrammar {
 public:
  static constexpr int kMaxDepth = 64;
  static constexpr int kMaxSpaceRun = 32;
  static constexpr int kIndentPerLevel = 4;  // a gap's indentation, per open container
  static constexpr int kMaxIntDigits = 200;
  static constexpr int kMaxExpDigits = 2;

  explicit JsonGrammar(bool object_only = true) : object_only_(object_only) {}

  // One byte of the output; false (and the state unchanged) if no valid
  // document starts with the bytes so far and this one.
  bool feed(uint8_t b);
  // Every byte, on a copy: whether they can follow (this state unchanged).
  bool accepts(std::string_view bytes) const;
  // Bytes, in place; false at the first that cannot (the state is then that
  // of the bytes before it).
  bool feed(std::string_view bytes);
  // A whole document has been read (only whitespace may follow).
  bool complete() const;
  // Nothing has been read but whitespace.
  bool empty() const { return state_ == State::Start; }

  // What the next byte continues, for automata that run beside this one
  // (model/json_schema_grammar.h): the body of a string, where a byte
  // other than '"' begins a character; the rest of a character or of an
  // escape; a number; true / false / null; or the structure between values.
  enum class Lexeme : uint8_t { Structure, StringBody, StringRest, Number, Literal };
  Lexeme lexeme() const;

 private:
  enum class State : uint8_t {
    Start,         // before the document's value (no whitespace here)
    Value,         // a value after ':' or ','
    ArrayFirst,    // after '[': a value or ']'
    ObjectFirst,   // after '{': a key or '}'
    Key,           // after ',' in an object: a key
    Colon,         // after a key
    After,         // after a value in a container: ',' or the close
    Done,          // the document is read
    String,        // in a string (key_ says whether it is a key)
    Escape,        // after '\'
    Hex,           // in \uXXXX (hex_n_ digits read, hex_ the value)
    LowBackslash,  // after a high surrogate's escape: '\' of the low one
    LowU,          // then 'u'
    Utf8,          // in a multi-byte character (utf8_left_ more bytes)
    Minus,         // after '-'
    Zero,          // a leading 0
    Int,           // integer digits
    Dot,           // after '.'
    Frac,          // fraction digits
    Exp,           // after 'e' / 'E'
    ExpSign,       // after the exponent's sign
    ExpInt,        // exponent digits
    Literal,       // in true / false / null (lit_, lit_i_)
  };

  bool step(uint8_t b);          // the transition; false if b cannot come
  bool value_start(uint8_t b);   // b begins a value (state Start / Value / ArrayFirst)
  bool int_start(uint8_t b);     // the first digit of a number's integer part
  bool end_value();              // a value ended: where does that leave us
  bool number_end(uint8_t b);    // a number ended before b: b is read after it
  bool space(uint8_t b);         // whitespace outside strings (counted)
  bool push(uint8_t container);  // '{' or '['

  State state_ = State::Start;
  bool object_only_;
  bool key_ = false;                         // the string being read is a key
  uint8_t utf8_left_ = 0;                    // continuation bytes still due
  uint8_t utf8_lo_ = 0x80, utf8_hi_ = 0xBF;  // the next continuation byte's range
  uint8_t hex_n_ = 0;                        // \u digits read
  bool low_due_ = false;                     // the \u being read must be a low surrogate
  uint16_t hex_ = 0;
  uint8_t lit_ = 0, lit_i_ = 0;  // which literal (0 true, 1 false, 2 null), bytes read
  uint8_t space_run_ = 0;
  // The gap being read (space): a space or tab, '\r', then a line break,
  // and the indentation after it.
  enum class Gap : uint8_t { None, Space, Cr, Line };
  Gap gap_ = Gap::None;
  uint8_t indent_ = 0;
  uint8_t int_digits_ = 0, exp_digits_ = 0;  // of the number being read
  int depth_ = 0;
  std::array<uint8_t, kMaxDepth> stack_{};  // '{' or '[' per open container
};

}  // namespace ls
