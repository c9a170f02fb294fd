// A JSON schema's "pattern" with its string's minLength and maxLength, as
// a DFA over Unicode code points, for the byte automaton of
// model/json_schema_grammar.h (which steps it through a string's JSON text
// with model/json_regex_step.h).
//
// compile_json_regex: the pattern's NFA (model/json_regex_nfa.h: what
// syntax is supported and what refused), then the DFA by subset
// construction over disjoint ranges of code points (a state's edges are
// sorted [lo, hi] -> state), at most kMaxStates states and kMaxWork steps
// to build them. A set of NFA states that holds an unanchored end's loop
// accepts every continuation: it is kept as one state, so that "contains X"
// patterns stay small. Then pruned: a state from which no accepting state
// is reachable is dead, and no edge leads into one (so every state is live).
//
// Lengths, in characters: the string must also have between minLength and
// maxLength of them, and no dead end means no character may leave a string
// that the pattern and the lengths cannot both finish. So each state keeps
// the set of lengths l for which an accepting path of exactly l characters
// leaves it (a bitset up to a cap), and a character is taken only where
// the state it leads to has some l in [minLength - chars, maxLength - chars].
// The cap is min(maxLength, minLength + states): a query's low end is at
// most minLength, and the shortest accepting path of length >= a (if any)
// is shorter than a + states (a longer one holds a simple cycle of at most
// states characters whose removal keeps it >= a). Tables past
// kMaxLengthBits bits (states x lengths) are refused. Without lengths
// (minLength 0, no maxLength) there is no table: every state is live.
// defines: JsonRegex, compile_json_regex
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/status.h"

namespace ls {

class JsonRegex {
 public:
  static constexpr uint32_t kNone = 0xFFFFFFFF;       // no state
  static constexpr uint32_t kUnbounded = 0xFFFFFFFF;  // no maxLength
  static constexpr size_t kMaxStates = 4096;
  static constexpr uint64_t kMaxLengthBits = uint64_t{1} << 22;
  // The subset construction's steps (NFA states read, over all DFA states):
  // about 0.35 s at the limit on the 2-core dev machine.
  static constexpr uint64_t kMaxWork = uint64_t{1} << 24;

  struct Edge {
    uint32_t lo, hi;  // code points lo..hi (no surrogate)
    uint32_t to;
  };

  // kNone when no string of the allowed lengths matches.
  uint32_t start() const { return start_; }
  size_t states() const { return accepting_.size(); }
  bool accepting(uint32_t s) const { return accepting_[s] != 0; }
  // s's edges, sorted by code point and disjoint.
  std::span<const Edge> edges(uint32_t s) const {
    return {edges_.data() + first_[s], edges_.data() + first_[s + 1]};
  }
  // Every code point leads from s back to s, which accepts, and no
  // lengths are kept: whatever follows matches (a pattern once "found"
  // unanchored). The stepper then reads bytes without looking.
  bool free(uint32_t s) const { return free_[s] != 0; }
  // The state after code point cp from s; kNone if there is none.
  uint32_t next(uint32_t s, uint32_t cp) const;
  // From s, reached after chars characters of the string, some accepting
  // path keeps the whole length within [minLength, maxLength].
  bool can_end(uint32_t s, uint32_t chars) const;
  // The string may end at s with chars characters: s accepts, and chars
  // is within the lengths.
  bool ends(uint32_t s, uint32_t chars) const {
    return accepting(s) && chars >= min_length_ &&
           (max_length_ == kUnbounded || chars <= max_length_);
  }
  // Some code point in [lo, hi] leads from s to a state that can end with
  // the string at chars characters (this one included); its state in *to
  // (the first such edge's: for lo == hi, the one).
  bool can_take(uint32_t s, uint32_t lo, uint32_t hi, uint32_t chars, uint32_t* to) const;
  // Some string matches (the empty string's state can end).
  bool satisfiable() const { return start_ != kNone && can_end(start_, 0); }
  // The decoded string value (UTF-8) matches the pattern and the lengths.
  bool matches(std::string_view utf8) const;

 private:
  friend Expected<JsonRegex> compile_json_regex(std::string_view, uint32_t, uint32_t);
  void build_lengths();
  // Set lengths of s in [a, b], by prefix counts: any bit set.
  bool any_length(uint32_t s, uint32_t a, uint32_t b) const;
  uint32_t rank(uint32_t s, uint32_t i) const;

  uint32_t start_ = kNone;
  std::vector<uint32_t> first_;  // state s's edges: edges_[first_[s] .. first_[s + 1])
  std::vector<Edge> edges_;
  std::vector<uint8_t> accepting_;
  std::vector<uint8_t> free_;
  uint32_t min_length_ = 0, max_length_ = kUnbounded;
  // The length table (empty without lengths): per state, words_ words of
  // bits 0..cap_ (bit l: an accepting path of exactly l characters), and
  // the set bits in the state's words before each.
  uint32_t cap_ = 0;
  size_t words_ = 0;
  std::vector<uint64_t> bits_;
  std::vector<uint32_t> before_;
};

// pattern: the schema's "pattern" string; the lengths its string has
// (JsonRegex::kUnbounded: no maxLength). An error names the construct and
// where it is in the pattern, or the limit passed.
Expected<JsonRegex> compile_json_regex(std::string_view pattern, uint32_t min_length = 0,
                                       uint32_t max_length = JsonRegex::kUnbounded);

}  // namespace ls
