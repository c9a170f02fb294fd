#include "model/json_regex.h"

#include <algorithm>
#include <bit>
#include <map>

#include "model/json_regex_nfa.h"
#include "model/unicode.h"

namespace ls {

namespace {

// The NFA states that read, and the accepting one, reached from some of
// `from` without reading: a DFA state's set, sorted.
class Closure {
 public:
  explicit Closure(const RegexNfa& n) : n_(n), mark_(n.states.size(), 0) {}

  std::vector<int32_t> of(std::vector<int32_t> stack) {
    ++stamp_;
    std::vector<int32_t> out;
    while (!stack.empty()) {
      const int32_t s = stack.back();
      stack.pop_back();
      if (s < 0 || mark_[static_cast<size_t>(s)] == stamp_) continue;
      mark_[static_cast<size_t>(s)] = stamp_;
      const RegexNfa::State& st = n_.states[static_cast<size_t>(s)];
      if (st.set >= 0 || s == n_.accept) {
        out.push_back(s);
      } else {
        stack.push_back(st.out);
        stack.push_back(st.out2);
      }
    }
    std::sort(out.begin(), out.end());
    // The unanchored end's loop accepts whatever follows, whatever else is
    // in the set: one state for all such sets.
    if (n_.any_tail >= 0 && std::binary_search(out.begin(), out.end(), n_.any_tail))
      out = {std::min(n_.any_tail, n_.accept), std::max(n_.any_tail, n_.accept)};
    return out;
  }

 private:
  const RegexNfa& n_;
  std::vector<uint32_t> mark_;
  uint32_t stamp_ = 0;
};

Error too_many_states() {
  return make_error(
      "the pattern needs a DFA of more than %zu states (a count after something that may "
      "repeat or begin anywhere, such as .*a.{12} or an unanchored a.{12}, doubles the states "
      "with each step of the count: shorten the count)",
      JsonRegex::kMaxStates);
}

}  // namespace

Expected<JsonRegex> compile_json_regex(std::string_view pattern, uint32_t min_length,
                                       uint32_t max_length) {
  auto nfa = regex_nfa(pattern);
  if (!nfa) return nfa.error();
  const RegexNfa& n = *nfa;

  // Subset construction: each DFA state a set of NFA states, found once.
  Closure closure(n);
  std::vector<std::vector<int32_t>> subsets;
  std::map<std::vector<int32_t>, uint32_t> ids;
  auto id_of = [&](std::vector<int32_t> set) {
    const auto [it, fresh] = ids.emplace(std::move(set), static_cast<uint32_t>(subsets.size()));
    if (fresh) subsets.push_back(it->first);
    return it->second;
  };
  id_of(closure.of({n.start}));
  std::vector<std::vector<JsonRegex::Edge>> raw;  // per DFA state
  struct Event {
    uint32_t at;  // a range of a member begins (+1) or ends just before (-1)
    uint32_t member;
    int32_t delta;
  };
  // The steps, counted as members read: a DFA under the state limit can still
  // hold sets of thousands of NFA states each ([\s\S]{4000}: seconds).
  uint64_t steps = 0;
  for (size_t k = 0; k < subsets.size(); ++k) {
    if (subsets.size() > JsonRegex::kMaxStates) return too_many_states();
    if (steps > JsonRegex::kMaxWork)
      return make_error(
          "the pattern's DFA takes more than %llu steps to build (its states hold thousands of "
          "NFA states each: shorten the repetitions)",
          static_cast<unsigned long long>(JsonRegex::kMaxWork));
    const std::vector<int32_t> members = subsets[k];  // a copy: subsets grows
    std::vector<Event> ev;
    for (uint32_t m = 0; m < members.size(); ++m) {
      const RegexNfa::State& st = n.states[static_cast<size_t>(members[m])];
      if (st.set < 0) continue;
      for (CodeRange r : n.sets[static_cast<size_t>(st.set)]) {
        ev.push_back({r.lo, m, 1});
        ev.push_back({r.hi + 1, m, -1});
      }
    }
    std::sort(ev.begin(), ev.end(), [](const Event& a, const Event& b) { return a.at < b.at; });
    steps += ev.size();
    // Between two consecutive event points the members that read are
    // fixed: one edge (merged with the last where they lead alike).
    std::vector<int32_t> active(members.size(), 0);
    size_t n_active = 0;
    std::vector<JsonRegex::Edge> edges;
    for (size_t e = 0; e < ev.size();) {
      const uint32_t at = ev[e].at;
      for (; e < ev.size() && ev[e].at == at; ++e) {
        int32_t& a = active[ev[e].member];
        if (a == 0) ++n_active;
        a += ev[e].delta;
        if (a == 0) --n_active;
      }
      if (n_active == 0 || e == ev.size()) continue;
      steps += members.size();
      const uint32_t end = ev[e].at - 1;
      std::vector<int32_t> targets;
      for (uint32_t m = 0; m < members.size(); ++m)
        if (active[m] > 0) targets.push_back(n.states[static_cast<size_t>(members[m])].out);
      const uint32_t to = id_of(closure.of(std::move(targets)));
      if (!edges.empty() && edges.back().to == to && edges.back().hi + 1 == at)
        edges.back().hi = end;
      else
        edges.push_back({at, end, to});
    }
    raw.push_back(std::move(edges));
  }
  if (subsets.size() > JsonRegex::kMaxStates) return too_many_states();

  // Pruning: live states reach an accepting one; only they are kept.
  const size_t total = subsets.size();
  std::vector<std::vector<uint32_t>> from(total);
  std::vector<uint8_t> live(total, 0);
  std::vector<uint32_t> work;
  for (uint32_t s = 0; s < total; ++s) {
    for (const JsonRegex::Edge& e : raw[s]) from[e.to].push_back(s);
    if (std::binary_search(subsets[s].begin(), subsets[s].end(), n.accept)) {
      live[s] = 1;
      work.push_back(s);
    }
  }
  while (!work.empty()) {
    const uint32_t s = work.back();
    work.pop_back();
    for (uint32_t p : from[s])
      if (!live[p]) live[p] = 1, work.push_back(p);
  }
  JsonRegex re;
  re.min_length_ = min_length;
  re.max_length_ = max_length;
  std::vector<uint32_t> renumber(total, JsonRegex::kNone);
  uint32_t kept = 0;
  for (uint32_t s = 0; s < total; ++s)
    if (live[s]) renumber[s] = kept++;
  re.first_.push_back(0);
  for (uint32_t s = 0; s < total; ++s) {
    if (!live[s]) continue;
    for (const JsonRegex::Edge& e : raw[s])
      if (live[e.to]) re.edges_.push_back({e.lo, e.hi, renumber[e.to]});
    re.first_.push_back(static_cast<uint32_t>(re.edges_.size()));
    re.accepting_.push_back(std::binary_search(subsets[s].begin(), subsets[s].end(), n.accept));
  }
  re.start_ = renumber[0];
  re.free_.assign(kept, 0);

  // The length table, within its limit.
  if ((min_length > 0 || max_length != JsonRegex::kUnbounded) && kept > 0) {
    const uint64_t cap = std::min<uint64_t>(max_length, uint64_t{min_length} + kept);
    const uint64_t bits = uint64_t{kept} * (cap + 1);
    if (bits > JsonRegex::kMaxLengthBits)
      return make_error(
          "with minLength %u and maxLength %s the pattern's length table would have %llu bits "
          "(%u DFA states x %llu lengths), more than %llu: lengths this long beside this "
          "pattern are not supported",
          min_length,
          max_length == JsonRegex::kUnbounded ? "none" : std::to_string(max_length).c_str(),
          static_cast<unsigned long long>(bits), kept, static_cast<unsigned long long>(cap + 1),
          static_cast<unsigned long long>(JsonRegex::kMaxLengthBits));
    re.cap_ = static_cast<uint32_t>(cap);
    re.build_lengths();
  } else {
    // All code points (surrogates aside) back to the state itself.
    for (uint32_t s = 0; s < kept; ++s) {
      const std::span<const JsonRegex::Edge> es = re.edges(s);
      re.free_[s] = re.accepting_[s] && es.size() == 2 && es[0].lo == 0 && es[0].hi == 0xD7FF &&
                    es[1].lo == 0xE000 && es[1].hi == 0x10FFFF && es[0].to == s && es[1].to == s;
    }
  }
  return re;
}

// Bit l of state s: column by column, l from the l - 1 of the states its
// edges lead to. O(cap x edges).
void JsonRegex::build_lengths() {
  const size_t n = states();
  words_ = cap_ / 64 + 1;  // bits 0..cap_, and rank() at cap_ + 1
  bits_.assign(n * words_, 0);
  std::vector<uint8_t> prev(accepting_), cur(n);
  for (uint32_t l = 0;; ++l) {
    for (size_t s = 0; s < n; ++s)
      if (prev[s]) bits_[s * words_ + l / 64] |= uint64_t{1} << (l % 64);
    if (l == cap_) break;
    for (size_t s = 0; s < n; ++s) {
      uint8_t any = 0;
      for (uint32_t e = first_[s]; e < first_[s + 1] && !any; ++e) any = prev[edges_[e].to];
      cur[s] = any;
    }
    prev.swap(cur);
  }
  before_.assign(n * words_, 0);
  for (size_t s = 0; s < n; ++s) {
    uint32_t c = 0;
    for (size_t w = 0; w < words_; ++w) {
      before_[s * words_ + w] = c;
      c += static_cast<uint32_t>(std::popcount(bits_[s * words_ + w]));
    }
  }
}

uint32_t JsonRegex::rank(uint32_t s, uint32_t i) const {
  const size_t w = size_t{s} * words_ + i / 64;
  const uint64_t below = i % 64 == 0 ? 0 : bits_[w] & ((uint64_t{1} << (i % 64)) - 1);
  return before_[w] + static_cast<uint32_t>(std::popcount(below));
}

bool JsonRegex::any_length(uint32_t s, uint32_t a, uint32_t b) const {
  return rank(s, b + 1) > rank(s, a);
}

bool JsonRegex::can_end(uint32_t s, uint32_t chars) const {
  if (words_ == 0) return true;  // no lengths: every state is live
  if (max_length_ != kUnbounded && chars > max_length_) return false;
  const uint32_t a = chars >= min_length_ ? 0 : min_length_ - chars;
  uint32_t b = cap_;
  if (max_length_ != kUnbounded) b = std::min(b, max_length_ - chars);
  return a <= b && any_length(s, a, b);
}

uint32_t JsonRegex::next(uint32_t s, uint32_t cp) const {
  const std::span<const Edge> es = edges(s);
  const auto it = std::lower_bound(es.begin(), es.end(), cp,
                                   [](const Edge& e, uint32_t c) { return e.hi < c; });
  return it != es.end() && it->lo <= cp ? it->to : kNone;
}

bool JsonRegex::can_take(uint32_t s, uint32_t lo, uint32_t hi, uint32_t chars, uint32_t* to) const {
  const std::span<const Edge> es = edges(s);
  auto it = std::lower_bound(es.begin(), es.end(), lo,
                             [](const Edge& e, uint32_t c) { return e.hi < c; });
  for (; it != es.end() && it->lo <= hi; ++it) {
    if (can_end(it->to, chars)) {
      *to = it->to;
      return true;
    }
  }
  return false;
}

bool JsonRegex::matches(std::string_view utf8) const {
  uint32_t s = start_, chars = 0;
  for (size_t i = 0; i < utf8.size() && s != kNone; ++chars) {
    const Utf8Char c = utf8_next(utf8, i);
    if (c.cp == kInvalidCodepoint) return false;
    s = next(s, c.cp);
    i += c.len;
  }
  return s != kNone && ends(s, chars);
}

}  // namespace ls
