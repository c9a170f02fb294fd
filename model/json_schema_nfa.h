// The automaton of a JSON schema whose anyOf branches may begin alike
// (pydantic's unions of models: two objects): the set of paths of
// JsonSchemaGrammar (model/json_schema_grammar.h) still open, each a whole
// copy of its state. A value start that several branches may read forks
// the path, a byte that a path cannot take ends it, and paths that meet
// again (the same state after the ambiguous value) are kept once. The
// bytes are accepted while any path remains, and a document is complete
// when one path is, so the language is the union of the branches', and
// no dead ends: each path has none.
//
// Where the schema has no such anyOf there is one path and this costs what
// the grammar does; accepts() copies paths on the stack, never the heap
// (the constrained sampler asks it about every token of a vocabulary).
// defines: JsonSchemaNfa
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "model/json_schema.h"
#include "model/json_schema_grammar.h"

namespace ls {

class JsonSchemaNfa {
 public:
  // schema outlives the automaton.
  explicit JsonSchemaNfa(const JsonSchema& schema) : paths_{JsonSchemaGrammar(schema)} {}

  // Bytes in place; false at the first that no path can take (the paths are
  // then those of the bytes before it).
  bool feed(std::string_view bytes);
  bool feed(uint8_t b) { return feed(std::string_view(reinterpret_cast<const char*>(&b), 1)); }
  // Every byte, on copies (this state unchanged).
  bool accepts(std::string_view bytes) const;
  // Some path has read a whole valid document.
  bool complete() const;
  // Every path is complete, and nothing but whitespace could follow.
  bool closed() const;
  size_t paths() const { return paths_.size(); }

 private:
  std::vector<JsonSchemaGrammar> paths_;
};

}  // namespace ls
