// A byte automaton for the JSON documents a compiled schema
// (model/json_schema.h) accepts, for constrained decoding: feed() takes the
// output's bytes one at a time and says whether they can still begin a valid
// document. JsonGrammar runs beside it for the lexical rules (UTF-8,
// escapes, numbers, whitespace, the nesting limit); this one follows the
// schema: which keys, values, counts and lengths may come.
//
// No dead ends: every prefix it accepts can be completed to a valid
// document. So an object's '}' waits for its required keys, a key must be
// the prefix of a property not yet used (or any key where other keys are
// allowed), ',' stops at maxItems, a string stops at maxLength and its
// closing quote waits for minLength, a string under a pattern takes a byte
// only where the pattern and the lengths can both still be met
// (model/json_regex_step.h), an enum value is a prefix of one of
// its values, a number's digits keep some number inside its bounds
// (model/json_number_bounds.h), and a container is opened only where the least deep value it
// must hold fits under the nesting limit.
//
// Keys may come in any order; a declared property may not come twice. Keys
// that only additionalProperties allows are not checked for repeats (that
// would need their text kept), nor are they compared in other than their
// canonical escaped form. A copy costs the open containers' frames only
// and allocates nothing (trial feeds work on a copy).
// defines: JsonSchemaGrammar
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/json_grammar.h"
#include "model/json_regex_step.h"
#include "model/json_schema.h"

namespace ls {

class JsonSchemaGrammar {
 public:
  // schema outlives the automaton (the constraint holds it).
  explicit JsonSchemaGrammar(const JsonSchema& schema) : s_(&schema) {}
  JsonSchemaGrammar(const JsonSchemaGrammar& o) : s_(o.s_), c_(o.c_) { copy_frames(o); }
  JsonSchemaGrammar& operator=(const JsonSchemaGrammar& o) {
    s_ = o.s_;
    c_ = o.c_;
    copy_frames(o);
    return *this;
  }
  // (choice_ and paths_ live for one step_path: not copied.)

  // One byte; false (and the state unchanged) if no valid document starts
  // with the bytes so far and this one.
  bool feed(uint8_t b);
  // Bytes in place; false at the first that cannot (the state is then
  // that of the bytes before it).
  bool feed(std::string_view bytes);
  // Every byte, on a copy (this state unchanged).
  bool accepts(std::string_view bytes) const;
  // A whole valid document has been read.
  bool complete() const;
  // Complete, and nothing but whitespace could follow (a number at the top
  // level is complete but could go on).
  bool closed() const;

  // For JsonSchemaNfa (model/json_schema_nfa.h), where anyOf branches begin
  // alike: one byte, which takes the choice-th of the paths its value start
  // leaves open; *paths says how many there were (1 where there was no
  // choice). False if the byte cannot come on that path (the state is then
  // unspecified: step a copy).
  bool step_path(uint8_t b, int choice, int* paths);
  // The same state for what may follow (bookkeeping of earlier values aside),
  // so that paths which have met again are followed once.
  bool same(const JsonSchemaGrammar& o) const;

 private:
  enum class Mode : uint8_t { Structure, String, Key, Number, Literal, Enum };
  // A sign, the digits before the point, the point and the digits after it.
  static constexpr size_t kMaxBoundedNumber =
      1 + JsonNumberBounds::kMaxIntDigits + 1 + JsonNumberBounds::kMaxFracDigits;
  enum class Phase : uint8_t { KeyNext, Colon, ValueNext, AfterValue };
  // One open container. No member initializers: a copy leaves the frames
  // past the depth alone.
  struct Frame {
    int32_t node;        // the object's or array's node
    int32_t value_node;  // object: the node of the value after the key just read
    uint64_t used;       // object: the declared properties written (a bit each)
    uint32_t count;      // array: items begun
    bool object;
    Phase phase;
  };
  // Everything but the frames.
  struct Cursor {
    JsonGrammar lex{false};
    Mode mode = Mode::Structure;
    bool done = false;          // the top-level value is closed
    bool integer_only = false;  // Number: no fraction or exponent
    // Number under bounds (its node's JsonNumberBounds): the length of its
    // text so far (num_, outside the cursor: a copy takes only these bytes).
    uint8_t num_len = 0;
    int32_t node = -1;        // String / Key / Enum: the node read against
    uint32_t chars = 0;       // String: characters read
    JsonFormatState fmt;      // String with a format: where its text stands
    JsonRegexStep rx;         // String with a pattern: its DFA state and the pending character
    uint32_t lo = 0, hi = 0;  // Key / Enum: the candidates the bytes so far match
    uint32_t pos = 0;         // their bytes matched
    uint64_t avail = 0;       // Key: declared properties it may still be
    bool other_key = false;   // Key: a key that is not declared may come
    int depth = 0;            // open containers
  };

  bool step(uint8_t b);
  bool structure(uint8_t b);
  bool value_start(int32_t node, uint8_t b);
  bool value_end();
  bool key_start();
  bool key_byte(uint8_t b, bool closing);
  bool key_possible(const Frame& f) const;
  uint64_t fitting_keys(const JsonSchema::Node& n) const;
  bool fits(int32_t node) const;
  bool close(bool object);
  bool number_byte(uint8_t b);
  bool number_inside() const;
  bool narrow(const std::vector<std::string>& v, uint8_t b);
  bool exact(const std::vector<std::string>& v) const {
    return c_.lo < c_.hi && v[c_.lo].size() == c_.pos;
  }
  const JsonSchema::Node& node(int32_t n) const { return s_->nodes[static_cast<size_t>(n)]; }
  Frame& top() { return stack_[static_cast<size_t>(c_.depth - 1)]; }
  void copy_frames(const JsonSchemaGrammar& o) {
    for (int i = 0; i < o.c_.depth; ++i)
      stack_[static_cast<size_t>(i)] = o.stack_[static_cast<size_t>(i)];
    for (int i = 0; i < o.c_.num_len; ++i)
      num_[static_cast<size_t>(i)] = o.num_[static_cast<size_t>(i)];
  }

  const JsonSchema* s_;
  Cursor c_;
  // step_path's choice, and the paths the byte's value start had.
  uint8_t choice_ = 0, paths_ = 1;
  std::array<Frame, JsonGrammar::kMaxDepth> stack_;
  std::array<char, kMaxBoundedNumber> num_;  // the bounded number's text (c_.num_len bytes)
};

}  // namespace ls
