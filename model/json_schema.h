// JSON Schema, the subset that clients of structured outputs send (OpenAI's
// strict response_format "json_schema", pydantic's model_json_schema(),
// llama.cpp's --json-schema), compiled into a graph of nodes that a byte
// automaton walks (model/json_schema_grammar.h).
//
// Supported: type (one or a list), enum, const, properties, required,
// additionalProperties (false, true, or a schema), items, minItems, maxItems,
// minLength, maxLength, format (date, time, date-time, uuid by their own
// automaton; email, hostname, ipv4, ipv6, duration, uri as patterns, with
// the lengths: model/json_string_format.h), pattern (an ECMA-262 regular
// expression, unanchored, as a DFA over code points with the string's
// lengths: model/json_regex.h; not beside format), minimum, maximum, exclusiveMinimum, exclusiveMaximum
// (numbers under bounds are written without an exponent:
// model/json_number_bounds.h), anyOf (any branches: pydantic's unions of
// models; the automaton follows every branch a value may still be in),
// oneOf whose branches start with different bytes (a value's first byte
// picks its one branch: the nullable pattern [{...}, {"type": "null"}]) or
// are objects told apart by a tag (each requires a property whose const or
// enum values no other branch's has: pydantic's discriminated unions, whose
// OpenAPI 'discriminator' note is accepted beside oneOf and anyOf), $ref to #/$defs/X or
// #/definitions/X (recursion too). Annotations are ignored. Anything else is refused, with the
// keyword and its JSON pointer, so a client never gets output that silently breaks a rule it asked
// for.
//
// enum and const values match their compact serialization (nlohmann's
// dump(): canonical escapes, UTF-8 as is): the model writes them that way.
// Property names likewise match in their canonical escaped form.
// defines: JsonSchema, compile_json_schema()
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/json_number_bounds.h"
#include "model/json_regex.h"
#include "model/json_string_format.h"
#include "runtime/status.h"

namespace ls {

struct JsonSchema {
  // What a value may start with: one bit per class of first byte.
  enum Start : uint8_t {
    kObject = 1,  // '{'
    kArray = 2,   // '['
    kString = 4,  // '"'
    kNumber = 8,  // '-' or a digit
    kTrue = 16,   // 't'
    kFalse = 32,  // 'f'
    kNull = 64,   // 'n'
  };
  // A minimum nesting depth no value has (an unsatisfiable node).
  static constexpr uint16_t kNever = 0xFFFF;
  static constexpr uint32_t kUnbounded = 0xFFFFFFFFu;
  static constexpr size_t kMaxProperties = 64;  // a used-key bit each (a uint64_t)

  struct Node {
    enum Kind : uint8_t { Typed, Enum, AnyOf, Ref };
    Kind kind = Typed;
    // Typed: which value classes may start (kNumber with integer_only: no
    // fraction, no exponent), and the rules of each.
    uint8_t types = 0;
    bool integer_only = false;
    JsonNumberBounds bounds;  // number: minimum, maximum and their exclusive forms
    uint32_t min_length = 0, max_length = kUnbounded;  // string, in characters
    JsonStringFormat format = JsonStringFormat::None;  // string: date, time, date-time, uuid
                                                       // (the others are a pattern)
    int32_t pattern = -1;  // string: its pattern in JsonSchema::patterns (-1: none)
    int32_t items = -1;    // array: the items' node
    uint32_t min_items = 0, max_items = kUnbounded;
    // object: property names as the model writes them (quoted, escaped),
    // sorted so that the names a key's prefix matches form a range; their
    // nodes in the same order; which of them are required (a bit each); the
    // node of other keys' values, -1 when no other key may come.
    std::vector<std::string> keys;
    std::vector<int32_t> key_nodes;
    uint64_t required = 0;
    int32_t additional = -1;
    // Enum: the values' compact serializations, sorted (a prefix's matches
    // form a range).
    std::vector<std::string> values;
    // AnyOf: the branches, which start with different bytes. Ref: target.
    std::vector<int32_t> branches;
    int32_t target = -1;

    // From the analysis: the least nesting depth of a value as an object,
    // as an array and of any value (kNever: none); what a value may start
    // with (only classes that some value completes).
    uint16_t object_depth = kNever, array_depth = kNever, depth = kNever;
    uint8_t starts = 0;
  };
  std::vector<Node> nodes;
  int32_t root = -1;
  // The strings' patterns, each compiled with its node's minLength and maxLength.
  std::vector<JsonRegex> patterns;

  // The most nodes a value's first byte can leave open (anyOf branches
  // that begin alike, after refs and nested anyOf): more is refused.
  static constexpr int kMaxPaths = 16;
  // The nodes a value whose first byte is b may be read by, following refs
  // and anyOf branches, into out (at most kMaxPaths); how many (0: no value
  // of node n starts with b). More than one where anyOf branches begin
  // alike: the automaton then follows each (model/json_schema_nfa.h). -1
  // past kMaxPaths (the compiler refuses such a schema).
  int resolve(int32_t n, uint8_t b, int32_t* out) const;
};

// The schema class of a value's first byte (0 for a byte no value starts with).
uint8_t json_start_class(uint8_t b);

// The compiled schema, or an error naming the keyword and where it is
// ("json schema: 'multipleOf' at /properties/n is not supported"; a
// pattern's also the construct: "json schema: 'pattern' at /properties/id:
// the backreference \1 at character 5 is not supported").
Expected<std::shared_ptr<const JsonSchema>> compile_json_schema(const nlohmann::json& schema);
// From text (a parse error is an error too).
Expected<std::shared_ptr<const JsonSchema>> compile_json_schema(std::string_view text);

}  // namespace ls
