#include "model/json_schema_nfa.h"

namespace ls {

namespace {

// Whether some path from start takes every byte of rest. The first path of
// each fork is stepped in place; the others (forks are rare: value starts
// that anyOf branches share) replay the bytes before the fork on a copy
// and recurse, so a byte costs no copy.
bool takes(const JsonSchemaGrammar& start, std::string_view rest) {
  JsonSchemaGrammar g = start;
  for (size_t i = 0; i < rest.size(); ++i) {
    const uint8_t b = static_cast<uint8_t>(rest[i]);
    int n = 1;
    const bool ok = g.step_path(b, 0, &n);
    for (int c = 1; c < n; ++c) {
      JsonSchemaGrammar h = start;
      int m = 1;
      for (size_t j = 0; j < i; ++j) h.step_path(static_cast<uint8_t>(rest[j]), 0, &m);
      if (h.step_path(b, c, &m) && takes(h, rest.substr(i + 1))) return true;
    }
    if (!ok) return false;
  }
  return true;
}

}  // namespace

bool JsonSchemaNfa::feed(std::string_view bytes) {
  std::vector<JsonSchemaGrammar> next;
  for (char ch : bytes) {
    const uint8_t b = static_cast<uint8_t>(ch);
    next.clear();
    auto keep = [&](const JsonSchemaGrammar& g) {
      for (const JsonSchemaGrammar& h : next)
        if (h.same(g)) return;
      next.push_back(g);
    };
    for (const JsonSchemaGrammar& p : paths_) {
      int n = 1;
      for (int c = 0; c < n; ++c) {
        JsonSchemaGrammar g = p;
        if (g.step_path(b, c, &n)) keep(g);
      }
    }
    if (next.empty()) return false;
    paths_.swap(next);
  }
  return true;
}

bool JsonSchemaNfa::accepts(std::string_view bytes) const {
  for (const JsonSchemaGrammar& p : paths_)
    if (takes(p, bytes)) return true;
  return false;
}

bool JsonSchemaNfa::complete() const {
  for (const JsonSchemaGrammar& p : paths_)
    if (p.complete()) return true;
  return false;
}

bool JsonSchemaNfa::closed() const {
  for (const JsonSchemaGrammar& p : paths_)
    if (!p.closed()) return false;
  return true;
}

}  // namespace ls
