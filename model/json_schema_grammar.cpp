#include "model/json_schema_grammar.h"

#include <algorithm>

namespace ls {

namespace {

bool is_space(uint8_t b) {
  return b == ' ' || b == '\t' || b == '\n' || b == '\r';
}

}  // namespace

bool JsonSchemaGrammar::feed(uint8_t b) {
  const JsonSchemaGrammar before = *this;
  if (step(b)) return true;
  *this = before;
  return false;
}

bool JsonSchemaGrammar::feed(std::string_view bytes) {
  for (char c : bytes)
    if (!feed(static_cast<uint8_t>(c))) return false;
  return true;
}

bool JsonSchemaGrammar::accepts(std::string_view bytes) const {
  JsonSchemaGrammar g = *this;
  for (char c : bytes)
    if (!g.step(static_cast<uint8_t>(c))) return false;
  return true;
}

bool JsonSchemaGrammar::complete() const {
  if (c_.done) return true;
  if (c_.depth != 0 || !c_.lex.complete()) return false;
  // A number at the top level ends with the output.
  if (c_.mode == Mode::Number) return number_inside();
  return c_.mode == Mode::Enum && exact(node(c_.node).values);
}

bool JsonSchemaGrammar::closed() const {
  if (c_.done) return true;
  // An enum value that no longer one can extend ("1" of [1, 12] is not).
  return c_.mode == Mode::Enum && c_.depth == 0 && c_.hi - c_.lo == 1 && complete();
}

bool JsonSchemaGrammar::fits(int32_t n) const {
  return node(n).depth <= JsonGrammar::kMaxDepth - c_.depth;
}

// The declared properties whose values fit under the nesting limit.
uint64_t JsonSchemaGrammar::fitting_keys(const JsonSchema::Node& n) const {
  uint64_t m = 0;
  for (size_t k = 0; k < n.key_nodes.size(); ++k)
    if (fits(n.key_nodes[k])) m |= uint64_t{1} << k;
  return m;
}

bool JsonSchemaGrammar::key_possible(const Frame& f) const {
  const JsonSchema::Node& n = node(f.node);
  return (fitting_keys(n) & ~f.used) != 0 || (n.additional >= 0 && fits(n.additional));
}

// Keeps the candidates in [lo, hi) whose byte at pos is b; false (the range
// unchanged) when none does. They are sorted and share their first pos
// bytes, so those left are a range again.
bool JsonSchemaGrammar::narrow(const std::vector<std::string>& v, uint8_t b) {
  const uint32_t pos = c_.pos;
  auto at = [&](uint32_t i) -> int {
    return v[i].size() > pos ? static_cast<uint8_t>(v[i][pos]) : -1;
  };
  uint32_t lo = c_.lo, hi = c_.hi;
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (at(mid) < b)
      lo = mid + 1;
    else
      hi = mid;
  }
  const uint32_t first = lo;
  hi = c_.hi;
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (at(mid) <= b)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (first == lo) return false;
  c_.lo = first;
  c_.hi = lo;
  ++c_.pos;
  return true;
}

bool JsonSchemaGrammar::step(uint8_t b) {
  const JsonGrammar::Lexeme lx = c_.lex.lexeme();  // what b continues
  if (!c_.lex.feed(b)) return false;
  switch (c_.mode) {
    case Mode::Structure:
      break;
    case Mode::String: {
      const JsonSchema::Node& n = node(c_.node);
      const JsonRegex* re =
          n.pattern >= 0 ? &s_->patterns[static_cast<size_t>(n.pattern)] : nullptr;
      if (lx != JsonGrammar::Lexeme::StringBody) {  // within a character
        // A pattern reads every byte of it (UTF-8 narrows, escapes too).
        return !re || c_.rx.take(*re, b, c_.chars);
      }
      const bool formatted = n.format != JsonStringFormat::None;
      if (b == '"') {
        if (c_.chars < n.min_length || (formatted && !c_.fmt.complete())) return false;
        if (re && !c_.rx.can_close(*re, c_.chars)) return false;
        c_.mode = Mode::Structure;
        return value_end();
      }
      if (c_.chars == n.max_length) return false;
      // A format's characters come as themselves: no escape, no UTF-8.
      if (formatted && (b == '\\' || b >= 0x80 || !c_.fmt.take(n.format, b))) return false;
      ++c_.chars;  // a character (or an escape, a surrogate pair's once) begins
      return !re || c_.rx.take(*re, b, c_.chars);
    }
    case Mode::Key:
      return key_byte(b, lx == JsonGrammar::Lexeme::StringBody && b == '"');
    case Mode::Number:
      if (c_.lex.lexeme() == JsonGrammar::Lexeme::Number)
        return !(c_.integer_only && (b == '.' || b == 'e' || b == 'E')) && number_byte(b);
      // b ended the number: it is read after the value.
      if (!number_inside()) return false;
      c_.mode = Mode::Structure;
      c_.num_len = 0;
      if (!value_end()) return false;
      break;
    case Mode::Literal:
      if (c_.lex.lexeme() == JsonGrammar::Lexeme::Literal) return true;
      c_.mode = Mode::Structure;
      return value_end();
    case Mode::Enum: {
      const auto& values = node(c_.node).values;
      if (narrow(values, b)) return true;
      if (!exact(values)) return false;
      // A whole value, and b is not more of a longer one: b follows it.
      c_.mode = Mode::Structure;
      if (!value_end()) return false;
      break;
    }
  }
  return structure(b);
}

// b between values (the lexical automaton has already placed it).
bool JsonSchemaGrammar::structure(uint8_t b) {
  if (is_space(b)) return true;
  if (c_.depth == 0) return !c_.done && value_start(s_->root, b);
  Frame& f = top();
  const JsonSchema::Node& n = node(f.node);
  if (f.object) {
    switch (f.phase) {
      case Phase::KeyNext:
        if (b == '}') return close(true);
        return b == '"' && key_start() && key_byte(b, false);
      case Phase::Colon:
        if (b != ':') return false;
        f.phase = Phase::ValueNext;
        return true;
      case Phase::ValueNext:
        return value_start(f.value_node, b);
      case Phase::AfterValue:
        if (b == '}') return close(true);
        if (b != ',' || !key_possible(f)) return false;
        f.phase = Phase::KeyNext;
        return true;
    }
    return false;
  }
  switch (f.phase) {
    case Phase::ValueNext:  // after '[' or ','
      if (b == ']') return close(false);
      if (f.count >= n.max_items || !fits(n.items)) return false;
      ++f.count;
      return value_start(n.items, b);
    case Phase::AfterValue:
      if (b == ']') return close(false);
      if (b != ',' || f.count >= n.max_items || !fits(n.items)) return false;
      f.phase = Phase::ValueNext;
      return true;
    default:
      return false;
  }
}

bool JsonSchemaGrammar::close(bool object) {
  const Frame& f = top();
  const JsonSchema::Node& n = node(f.node);
  if (object ? (n.required & ~f.used) != 0 : f.count < n.min_items) return false;
  --c_.depth;
  return value_end();
}

bool JsonSchemaGrammar::value_end() {
  if (c_.depth == 0)
    c_.done = true;
  else
    top().phase = Phase::AfterValue;
  return true;
}

bool JsonSchemaGrammar::step_path(uint8_t b, int choice, int* paths) {
  choice_ = static_cast<uint8_t>(choice);
  paths_ = 1;
  const bool ok = step(b);
  *paths = paths_;
  choice_ = 0;
  paths_ = 1;
  return ok;
}

bool JsonSchemaGrammar::same(const JsonSchemaGrammar& o) const {
  const Cursor &a = c_, &b = o.c_;
  // Both read the same bytes, so their lexers agree; the schema's state:
  if (s_ != o.s_ || a.mode != b.mode || a.done != b.done || a.depth != b.depth) return false;
  switch (a.mode) {
    case Mode::String:
      if (a.node != b.node || a.chars != b.chars || !(a.fmt == b.fmt) || !(a.rx == b.rx))
        return false;
      break;
    case Mode::Key:
      if (a.node != b.node || a.lo != b.lo || a.hi != b.hi || a.pos != b.pos ||
          a.avail != b.avail || a.other_key != b.other_key)
        return false;
      break;
    case Mode::Enum:
      if (a.node != b.node || a.lo != b.lo || a.hi != b.hi || a.pos != b.pos) return false;
      break;
    case Mode::Number:
      if (a.node != b.node || a.integer_only != b.integer_only || a.num_len != b.num_len ||
          !std::equal(num_.begin(), num_.begin() + a.num_len, o.num_.begin()))
        return false;
      break;
    default:
      break;
  }
  for (int i = 0; i < a.depth; ++i) {
    const Frame &x = stack_[static_cast<size_t>(i)], &y = o.stack_[static_cast<size_t>(i)];
    if (x.node != y.node || x.object != y.object || x.phase != y.phase) return false;
    if (x.object) {
      // The value's node matters from its key to its end.
      const bool value_ahead = x.phase == Phase::Colon || x.phase == Phase::ValueNext;
      if (x.used != y.used || (value_ahead && x.value_node != y.value_node)) return false;
    } else if (x.count != y.count) {
      return false;
    }
  }
  return true;
}

bool JsonSchemaGrammar::value_start(int32_t at, uint8_t b) {
  int32_t open[JsonSchema::kMaxPaths];
  const int k = s_->resolve(at, b, open);
  if (k <= 0) return false;
  paths_ = static_cast<uint8_t>(k);
  const int32_t r = open[choice_ < k ? choice_ : 0];
  const JsonSchema::Node& n = node(r);
  const int room = JsonGrammar::kMaxDepth - c_.depth;
  if (n.kind == JsonSchema::Node::Enum) {
    if (n.depth > room) return false;
    c_.mode = Mode::Enum;
    c_.node = r;
    c_.lo = 0;
    c_.hi = static_cast<uint32_t>(n.values.size());
    c_.pos = 0;
    return narrow(n.values, b);
  }
  switch (json_start_class(b)) {
    case JsonSchema::kObject:
    case JsonSchema::kArray: {
      const bool object = b == '{';
      if ((object ? n.object_depth : n.array_depth) > room) return false;
      Frame& f = stack_[static_cast<size_t>(c_.depth++)];
      f.node = r;
      f.value_node = -1;
      f.used = 0;
      f.count = 0;
      f.object = object;
      f.phase = object ? Phase::KeyNext : Phase::ValueNext;
      return true;
    }
    case JsonSchema::kString:
      c_.mode = Mode::String;
      c_.node = r;
      c_.chars = 0;
      c_.fmt = JsonFormatState::start(n.format);
      c_.rx = n.pattern >= 0 ? JsonRegexStep::start(s_->patterns[static_cast<size_t>(n.pattern)])
                             : JsonRegexStep{};
      return true;
    case JsonSchema::kNumber:
      c_.mode = Mode::Number;
      c_.integer_only = n.integer_only;
      c_.node = r;
      c_.num_len = 0;
      return number_byte(b);
    default:  // true, false, null
      c_.mode = Mode::Literal;
      return true;
  }
}

// A byte of a number (the lexer has taken it): under bounds, no exponent,
// and the text so far must still be able to end inside them.
bool JsonSchemaGrammar::number_byte(uint8_t b) {
  const JsonNumberBounds& nb = node(c_.node).bounds;
  if (!nb.any()) return true;
  if (b == 'e' || b == 'E' || c_.num_len == kMaxBoundedNumber) return false;
  num_[c_.num_len++] = static_cast<char>(b);
  return nb.can_finish(std::string_view(num_.data(), c_.num_len), c_.integer_only);
}

// The number read is inside its node's bounds (if any).
bool JsonSchemaGrammar::number_inside() const {
  const JsonNumberBounds& nb = node(c_.node).bounds;
  return !nb.any() || nb.inside(std::string_view(num_.data(), c_.num_len));
}

bool JsonSchemaGrammar::key_start() {
  const Frame& f = top();
  const JsonSchema::Node& n = node(f.node);
  c_.mode = Mode::Key;
  c_.node = f.node;
  c_.lo = 0;
  c_.hi = static_cast<uint32_t>(n.keys.size());
  c_.pos = 0;
  c_.avail = fitting_keys(n) & ~f.used;
  c_.other_key = n.additional >= 0 && fits(n.additional);
  return c_.avail != 0 || c_.other_key;
}

// A byte of a key (its quotes included): the declared names it still
// matches narrow; where no other key may come, one must still be free.
bool JsonSchemaGrammar::key_byte(uint8_t b, bool closing) {
  const JsonSchema::Node& n = node(c_.node);
  if (!narrow(n.keys, b)) c_.lo = c_.hi;  // no declared name: another key
  const uint64_t range = c_.lo < c_.hi
                             ? ((c_.hi >= 64 ? ~uint64_t{0} : (uint64_t{1} << c_.hi) - 1) &
                                ~((uint64_t{1} << c_.lo) - 1))
                             : 0;
  if (!c_.other_key && (range & c_.avail) == 0) return false;
  if (!closing) return true;
  Frame& f = top();
  if (exact(n.keys)) {
    // A declared name: once only, and its value must fit.
    const uint64_t bit = uint64_t{1} << c_.lo;
    if (!(c_.avail & bit)) return false;
    f.used |= bit;
    f.value_node = n.key_nodes[c_.lo];
  } else {
    if (!c_.other_key) return false;
    f.value_node = n.additional;
  }
  c_.mode = Mode::Structure;
  f.phase = Phase::Colon;
  return true;
}

}  // namespace ls
