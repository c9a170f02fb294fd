#include "model/json_regex_nfa.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "model/unicode.h"

namespace ls {

namespace {

using Set = std::vector<CodeRange>;

constexpr uint32_t kMaxCode = 0x10FFFF;
constexpr uint32_t kInf = 0xFFFFFFFF;  // a repetition's missing upper bound
constexpr uint32_t kMaxCount = 100000;
constexpr int kMaxNesting = 100;

// Sorted, merged, and without surrogates.
Set normalized(Set s) {
  std::sort(s.begin(), s.end(), [](CodeRange a, CodeRange b) { return a.lo < b.lo; });
  Set merged;
  for (CodeRange r : s) {
    if (!merged.empty() && r.lo <= merged.back().hi + 1)
      merged.back().hi = std::max(merged.back().hi, r.hi);
    else
      merged.push_back(r);
  }
  Set out;
  for (CodeRange r : merged) {
    if (r.lo < 0xD800) out.push_back({r.lo, std::min(r.hi, 0xD7FFu)});
    if (r.hi > 0xDFFF) out.push_back({std::max(r.lo, 0xE000u), r.hi});
  }
  return out;
}

Set complement(const Set& s) {
  Set out;
  uint32_t next = 0;
  for (CodeRange r : normalized(s)) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCode) out.push_back({next, kMaxCode});
  return normalized(out);
}

// ECMA-262's character class escapes (without the i flag: ASCII \d \w).
Set class_escape(char32_t c) {
  Set s;
  switch (c) {
    case 'd':
    case 'D':
      s = {{'0', '9'}};
      break;
    case 'w':
    case 'W':
      s = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
      break;
    default:  // 's', 'S': WhiteSpace and LineTerminator
      s = {{0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680},
           {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
           {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
      break;
  }
  return c == 'D' || c == 'W' || c == 'S' ? complement(s) : normalized(s);
}

int hex_digit(char32_t c) {
  if (c >= '0' && c <= '9') return static_cast<int>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<int>(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return static_cast<int>(c - 'A' + 10);
  return -1;
}

bool ascii_alnum(char32_t c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// The pattern as a tree: a set of code points, a sequence, alternatives,
// or a repetition of one child.
struct Ast {
  enum Kind : uint8_t { Chars, Cat, Alt, Repeat };
  Kind kind = Cat;
  int32_t set = -1;
  std::vector<int32_t> kids;
  uint32_t min = 0, max = 0;  // Repeat (max kInf: no bound)
};

class Parser {
 public:
  explicit Parser(std::u32string p) : p_(std::move(p)) {}

  Expected<RegexNfa> run() {
    // Top-level alternatives, each with its own anchors.
    struct Branch {
      int32_t node;
      bool start, end;  // anchored
    };
    std::vector<Branch> branches;
    for (;;) {
      Branch br{-1, false, false};
      if (peek() == '^') {
        br.start = true;
        ++i_;
      }
      br.node = sequence(true, &br.end);
      if (br.node < 0) return err_;
      branches.push_back(br);
      if (i_ == p_.size()) break;
      if (p_[i_] == '|') {
        ++i_;
        continue;
      }
      fail("an unmatched ')'", i_);  // sequence() stops only at '|', ')' or the end
      return err_;
    }
    // The NFA, built backwards from the accepting state.
    accept_ = add({});
    nfa_.accept = accept_;
    int32_t tail = -1;
    for (const Branch& br : branches)
      if (!br.end && tail < 0) tail = any_loop(accept_, &nfa_.any_tail);
    std::vector<int32_t> starts;
    for (const Branch& br : branches) {
      int32_t s = build(br.node, br.end ? accept_ : tail);
      if (s < 0) return err_;
      if (!br.start) s = any_loop(s, nullptr);
      starts.push_back(s);
    }
    int32_t start = starts.back();
    for (size_t k = starts.size() - 1; k-- > 0;) start = add({-1, starts[k], start});
    if (too_big()) return err_;
    nfa_.start = start;
    nfa_.sets = std::move(sets_);
    return std::move(nfa_);
  }

 private:
  char32_t peek(size_t ahead = 0) const {
    return i_ + ahead < p_.size() ? p_[i_ + ahead] : char32_t(0xFFFFFFFF);
  }
  bool at_end() const { return i_ >= p_.size(); }

  // Errors name the construct and the character (from 1) where it starts;
  // -1 for the caller to return.
  int32_t fail(const std::string& what, size_t at) {
    err_ = make_error("%s at character %zu", what.c_str(), at + 1);
    return -1;
  }
  int32_t unsupported(const std::string& what, size_t at, const char* note = "") {
    err_ = make_error("%s at character %zu is not supported%s", what.c_str(), at + 1, note);
    return -1;
  }

  int32_t node(Ast a) {
    ast_.push_back(std::move(a));
    return static_cast<int32_t>(ast_.size() - 1);
  }
  int32_t chars(Set s) {
    sets_.push_back(normalized(std::move(s)));
    Ast a;
    a.kind = Ast::Chars;
    a.set = static_cast<int32_t>(sets_.size() - 1);
    return node(std::move(a));
  }

  // Terms up to '|', ')' or the end. At the top level a '$' may end it
  // (*end_anchor); elsewhere an anchor is refused.
  int32_t sequence(bool top, bool* end_anchor) {
    Ast cat;
    cat.kind = Ast::Cat;
    while (!at_end() && peek() != '|' && peek() != ')') {
      if (peek() == '$' && top && (i_ + 1 == p_.size() || peek(1) == '|')) {
        *end_anchor = true;
        ++i_;
        break;
      }
      if (peek() == '^' || peek() == '$')
        return unsupported(std::string("the anchor '") + static_cast<char>(peek()) + "'", i_,
                           " (only '^' at the start and '$' at the end of the pattern or of a "
                           "top-level alternative)");
      const int32_t t = term();
      if (t < 0) return -1;
      cat.kids.push_back(t);
    }
    return node(std::move(cat));
  }

  // An atom and its quantifier, if any.
  int32_t term() {
    const int32_t a = atom();
    if (a < 0) return -1;
    uint32_t lo = 0, hi = 0;
    const int q = quantifier(&lo, &hi);
    if (q < 0) return -1;
    if (q == 0) return a;
    if (peek() == '?') ++i_;  // lazy: the same strings
    if (quantifier_next() != 0)
      return fail("a quantifier after a quantifier (nothing to repeat)", i_);
    Ast r;
    r.kind = Ast::Repeat;
    r.kids = {a};
    r.min = lo;
    r.max = hi;
    return node(std::move(r));
  }

  // 1 if a quantifier starts here (then read into lo, hi), 0 if not, -1 on an error.
  int quantifier(uint32_t* lo, uint32_t* hi) {
    switch (peek()) {
      case '*':
        *lo = 0, *hi = kInf, ++i_;
        return 1;
      case '+':
        *lo = 1, *hi = kInf, ++i_;
        return 1;
      case '?':
        *lo = 0, *hi = 1, ++i_;
        return 1;
      case '{':
        return braces(lo, hi);
      default:
        return 0;
    }
  }
  // Whether a quantifier starts here, reading nothing.
  int quantifier_next() {
    const size_t at = i_;
    uint32_t lo, hi;
    const int q = quantifier(&lo, &hi);
    i_ = at;
    return q;
  }

  // {n}, {n,}, {n,m}: 1 (read), 0 (no quantifier: the '{' is itself), -1 (an error).
  int braces(uint32_t* lo, uint32_t* hi) {
    const size_t at = i_;
    size_t j = i_ + 1;
    auto number = [&](uint32_t* v) {
      const size_t from = j;
      uint64_t x = 0;
      while (j < p_.size() && p_[j] >= '0' && p_[j] <= '9') {
        x = std::min<uint64_t>(x * 10 + (p_[j] - '0'), uint64_t{kMaxCount} + 1);
        ++j;
      }
      *v = static_cast<uint32_t>(x);
      return j > from;
    };
    if (j < p_.size() && p_[j] == ',') {
      size_t k = j + 1;
      while (k < p_.size() && p_[k] >= '0' && p_[k] <= '9') ++k;
      if (k > j + 1 && k < p_.size() && p_[k] == '}') {
        fail(
            "'{,m}' (Python's {0,m}; in ECMA-262 it is no quantifier: write {0,m}, or \\{ for "
            "the character)",
            at);
        return -1;
      }
      return 0;
    }
    if (!number(lo)) return 0;
    *hi = *lo;
    if (j < p_.size() && p_[j] == ',') {
      ++j;
      *hi = kInf;
      if (j < p_.size() && p_[j] != '}' && !number(hi)) return 0;
    }
    if (j >= p_.size() || p_[j] != '}') return 0;
    if (*lo > kMaxCount || (*hi != kInf && *hi > kMaxCount)) {
      fail("a repetition count past " + std::to_string(kMaxCount), at);
      return -1;
    }
    if (*hi < *lo) {
      fail("the repetition {" + std::to_string(*lo) + "," + std::to_string(*hi) +
               "} (its minimum is past its maximum)",
           at);
      return -1;
    }
    i_ = j + 1;
    return 1;
  }

  int32_t atom() {
    const size_t at = i_;
    const char32_t c = p_[i_++];
    switch (c) {
      case '(':
        return group(at);
      case '[':
        return char_class(at);
      case '.':
        return chars(complement({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}));
      case '\\': {
        Set s;
        if (escape(false, at, &s) < 0) return -1;
        return chars(std::move(s));
      }
      case '*':
      case '+':
      case '?':
        return fail(std::string("'") + static_cast<char>(c) + "' with nothing to repeat", at);
      case '{': {
        --i_;
        uint32_t lo, hi;
        const int q = braces(&lo, &hi);
        if (q < 0) return -1;
        if (q > 0) return fail("a '{' quantifier with nothing to repeat", at);
        ++i_;
        return chars({{'{', '{'}});
      }
      default:
        return chars({{c, c}});
    }
  }

  int32_t group(size_t at) {
    if (++depth_ > kMaxNesting)
      return fail("groups nested deeper than " + std::to_string(kMaxNesting), at);
    if (peek() == '?') {
      if (peek(1) == ':') {
        i_ += 2;
      } else if (peek(1) == '=' || peek(1) == '!') {
        return unsupported(std::string("lookahead '(?") + static_cast<char>(peek(1)) + "'", at);
      } else if (peek(1) == '<' && (peek(2) == '=' || peek(2) == '!')) {
        return unsupported(std::string("lookbehind '(?<") + static_cast<char>(peek(2)) + "'", at);
      } else if (peek(1) == '<') {
        i_ += 2;
        const size_t from = i_;
        auto name_char = [](char32_t ch, bool first) {
          return ch == '_' || ch == '$' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                 (!first && ch >= '0' && ch <= '9');
        };
        while (!at_end() && name_char(peek(), i_ == from)) ++i_;
        if (i_ == from || peek() != '>')
          return fail("a group name '(?<...>' that is not a name", at);
        ++i_;
      } else {
        return fail(std::string("an unknown group '(?") +
                        (at_end() || peek(1) > 0x7E ? std::string()
                                                    : std::string(1, static_cast<char>(peek(1)))) +
                        "' (supported: (...), (?:...), (?<name>...))",
                    at);
      }
    }
    bool ignored = false;
    Ast alt;
    alt.kind = Ast::Alt;
    for (;;) {
      const int32_t s = sequence(false, &ignored);
      if (s < 0) return -1;
      alt.kids.push_back(s);
      if (peek() != '|') break;
      ++i_;
    }
    if (peek() != ')') return fail("a '(' that is not closed", at);
    ++i_;
    --depth_;
    return node(std::move(alt));
  }

  int32_t char_class(size_t at) {
    bool negate = false;
    if (peek() == '^') negate = true, ++i_;
    Set s;
    for (;;) {
      if (at_end()) return fail("a '[' that is not closed", at);
      if (peek() == ']') break;
      const size_t from = i_;
      Set a;
      if (class_atom(&a) < 0) return -1;
      if (peek() == '-' && peek(1) != ']' && i_ + 1 < p_.size()) {
        ++i_;
        const size_t to_at = i_;
        Set b;
        if (class_atom(&b) < 0) return -1;
        const bool single = a.size() == 1 && a[0].lo == a[0].hi && b.size() == 1 &&
                            b[0].lo == b[0].hi && !set_escape_[0] && !set_escape_[1];
        if (!single) return fail("a range in a class bounded by a class escape such as \\d", to_at);
        if (a[0].lo > b[0].lo) return fail("a range in a class that is out of order", from);
        s.push_back({a[0].lo, b[0].lo});
      } else {
        s.insert(s.end(), a.begin(), a.end());
      }
    }
    ++i_;  // ']'
    return chars(negate ? complement(s) : std::move(s));
  }

  // One code point or class escape in [...]; set_escape_ says, for the
  // last two read, whether each was a class escape (\d, \w, \s, ...).
  int32_t class_atom(Set* out) {
    set_escape_[0] = set_escape_[1];
    const size_t at = i_;
    const char32_t c = p_[i_++];
    if (c != '\\') {
      *out = {{c, c}};
      set_escape_[1] = false;
      return 0;
    }
    if (escape(true, at, out) < 0) return -1;
    const char32_t e = p_[at + 1];
    set_escape_[1] = e == 'd' || e == 'D' || e == 'w' || e == 'W' || e == 's' || e == 'S';
    return 0;
  }

  // After '\' (at: its position): the code points it stands for.
  int32_t escape(bool in_class, size_t at, Set* out) {
    if (at_end()) return fail("a '\\' at the end of the pattern", at);
    const char32_t c = p_[i_++];
    auto one = [&](uint32_t cp) {
      *out = {{cp, cp}};
      return 0;
    };
    switch (c) {
      case 'd':
      case 'D':
      case 'w':
      case 'W':
      case 's':
      case 'S':
        *out = class_escape(c);
        return 0;
      case 'b':
        if (in_class) return one(0x08);
        return unsupported("the word boundary \\b", at);
      case 'B':
        return unsupported("the word boundary \\B", at);
      case 'k':
        return unsupported("the backreference \\k", at);
      case 'p':
      case 'P':
        return unsupported(std::string("the Unicode property \\") + static_cast<char>(c) + "{...}",
                           at);
      case 't':
        return one('\t');
      case 'n':
        return one('\n');
      case 'r':
        return one('\r');
      case 'f':
        return one('\f');
      case 'v':
        return one('\v');
      case '0':
        if (peek() >= '0' && peek() <= '9')
          return unsupported("the octal escape \\0" + std::string(1, static_cast<char>(peek())),
                             at);
        return one(0);
      case 'x': {
        const int h = hex_digit(peek()), l = hex_digit(peek(1));
        if (h < 0 || l < 0) return fail("a '\\x' without two hex digits", at);
        i_ += 2;
        return one(static_cast<uint32_t>(h * 16 + l));
      }
      case 'u': {
        if (peek() == '{') return unsupported("the escape \\u{...}", at, " (write \\uHHHH)");
        const int32_t u = hex4(i_);
        if (u < 0) return fail("a '\\u' without four hex digits", at);
        i_ += 4;
        uint32_t cp = static_cast<uint32_t>(u);
        if (cp >= 0xD800 && cp <= 0xDBFF && peek() == '\\' && peek(1) == 'u') {
          const int32_t low = hex4(i_ + 2);
          if (low >= 0xDC00 && low <= 0xDFFF) {
            i_ += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (static_cast<uint32_t>(low) - 0xDC00);
          }
        }
        if (cp >= 0xD800 && cp <= 0xDFFF)
          return unsupported("a lone surrogate \\u" + hex_text(cp), at);
        return one(cp);
      }
      case 'c': {
        const char32_t l = peek();
        if (!((l >= 'a' && l <= 'z') || (l >= 'A' && l <= 'Z')))
          return fail("a '\\c' without a letter", at);
        ++i_;
        return one(l % 32);
      }
      default:
        if (c >= '1' && c <= '9')
          return unsupported("the backreference \\" + std::string(1, static_cast<char>(c)), at);
        if (ascii_alnum(c))
          return fail("the unknown escape \\" + std::string(1, static_cast<char>(c)), at);
        return one(c);  // escaped punctuation (or any other code point) is itself
    }
  }

  int32_t hex4(size_t from) const {
    int32_t v = 0;
    for (size_t k = from; k < from + 4; ++k) {
      const int d = k < p_.size() ? hex_digit(p_[k]) : -1;
      if (d < 0) return -1;
      v = v * 16 + d;
    }
    return v;
  }
  static std::string hex_text(uint32_t v) {
    char b[8];
    std::snprintf(b, sizeof b, "%04X", v);
    return b;
  }

  // ---- The NFA, built backwards: each piece is given the state after it. ----

  bool too_big() {
    if (nfa_.states.size() <= RegexNfa::kMaxStates) return false;
    err_ = make_error(
        "the pattern's automaton has more than %zu NFA states (a repetition such as {1000} "
        "copies what it repeats that many times)",
        RegexNfa::kMaxStates);
    return true;
  }
  int32_t add(RegexNfa::State s) {
    nfa_.states.push_back(s);
    return static_cast<int32_t>(nfa_.states.size() - 1);
  }
  // [\s\S]* then next; *loop (if given) gets the state that reads.
  int32_t any_loop(int32_t next, int32_t* loop) {
    if (all_ < 0) {
      sets_.push_back(complement({}));
      all_ = static_cast<int32_t>(sets_.size() - 1);
    }
    const int32_t split = add({-1, -1, next});
    const int32_t read = add({all_, split, -1});
    nfa_.states[static_cast<size_t>(split)].out = read;
    if (loop) *loop = read;
    return split;
  }

  // The states of ast node n followed by next; its first state (-1: too big).
  int32_t build(int32_t n, int32_t next) {
    if (too_big()) return -1;
    const Ast& a = ast_[static_cast<size_t>(n)];
    switch (a.kind) {
      case Ast::Chars:
        return add({a.set, next, -1});
      case Ast::Cat:
        for (size_t k = a.kids.size(); k-- > 0;)
          if ((next = build(a.kids[k], next)) < 0) return -1;
        return next;
      case Ast::Alt: {
        int32_t cur = build(a.kids.back(), next);
        for (size_t k = a.kids.size() - 1; k-- > 0 && cur >= 0;) {
          const int32_t s = build(a.kids[k], next);
          if (s < 0) return -1;
          cur = add({-1, s, cur});
        }
        return cur;
      }
      case Ast::Repeat: {
        const int32_t kid = a.kids[0];
        int32_t cur = next;
        if (a.max == kInf) {
          // A loop: split -> kid -> split, or on.
          const int32_t split = add({-1, -1, next});
          const int32_t body = build(kid, split);
          if (body < 0) return -1;
          nfa_.states[static_cast<size_t>(split)].out = body;
          cur = split;
        } else {
          // Up to max - min optional copies, each a way to what follows.
          for (uint32_t k = a.min; k < a.max; ++k) {
            const int32_t body = build(kid, cur);
            if (body < 0) return -1;
            cur = add({-1, body, next});
          }
        }
        for (uint32_t k = 0; k < a.min; ++k)
          if ((cur = build(kid, cur)) < 0) return -1;
        return cur;
      }
    }
    return -1;
  }

  std::u32string p_;
  size_t i_ = 0;
  int depth_ = 0;
  bool set_escape_[2] = {false, false};
  std::vector<Ast> ast_;
  std::vector<Set> sets_;
  RegexNfa nfa_;
  int32_t accept_ = -1, all_ = -1;
  Error err_;
};

}  // namespace

Expected<RegexNfa> regex_nfa(std::string_view pattern) {
  std::u32string p;
  for (size_t i = 0; i < pattern.size();) {
    const Utf8Char c = utf8_next(pattern, i);
    if (c.cp == kInvalidCodepoint)
      return make_error("the pattern is not valid UTF-8 (byte %zu)", i + 1);
    p.push_back(c.cp);
    i += c.len;
  }
  return Parser(std::move(p)).run();
}

}  // namespace ls
