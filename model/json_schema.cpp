#include "model/json_schema.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "model/json_grammar.h"

namespace ls {

namespace {

using nlohmann::json;

constexpr uint8_t kAllTypes = JsonSchema::kObject | JsonSchema::kArray | JsonSchema::kString |
                              JsonSchema::kNumber | JsonSchema::kTrue | JsonSchema::kFalse |
                              JsonSchema::kNull;

// Keywords that say nothing about which values are valid.
const std::set<std::string, std::less<>> kAnnotations = {
    "title",    "description", "default",  "examples",  "$schema", "$id",
    "$comment", "deprecated",  "readOnly", "writeOnly", "$defs",   "definitions"};

std::string where(const std::string& path) {
  return path.empty() ? "the top level" : path;
}

// A JSON pointer's reference token (RFC 6901: '~' and '/' escaped).
std::string pointer_token(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

uint16_t add_depth(uint16_t d) {
  return d >= JsonSchema::kNever - 1 ? JsonSchema::kNever : static_cast<uint16_t>(d + 1);
}

// The nesting depth of a value (a scalar 0, [] 1, [[]] 2).
uint16_t value_depth(const json& v) {
  uint16_t d = 0;
  if (v.is_object() || v.is_array()) {
    for (const auto& e : v) d = std::max(d, value_depth(e));
    d = add_depth(d);
  }
  return d;
}

class Compiler {
 public:
  explicit Compiler(const json& doc) : doc_(doc) {}

  Expected<std::shared_ptr<const JsonSchema>> run() {
    auto root = compile(doc_, "");
    if (!root) return root.error();
    out_->root = *root;
    analyse();
    if (auto st = check(); !st) return st.error();
    return std::shared_ptr<const JsonSchema>(std::move(out_));
  }

 private:
  using Node = JsonSchema::Node;

  Error unsupported(const std::string& key, const std::string& path) {
    return make_error("json schema: '%s' at %s is not supported", key.c_str(), where(path).c_str());
  }

  int32_t add(Node n, const std::string& path) {
    out_->nodes.push_back(std::move(n));
    paths_.push_back(path);
    return static_cast<int32_t>(out_->nodes.size() - 1);
  }

  // The node of the schema {} (any value), made once.
  int32_t any() {
    if (any_ >= 0) return any_;
    Node n;
    n.types = kAllTypes;
    any_ = add(n, "");
    out_->nodes[static_cast<size_t>(any_)].items = any_;
    out_->nodes[static_cast<size_t>(any_)].additional = any_;
    return any_;
  }

  Expected<uint32_t> count(const json& s, const char* key, const std::string& path) {
    const json& v = s.at(key);
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 0x7FFFFFFF)
      return make_error("json schema: '%s' at %s must be a non-negative integer", key,
                        where(path).c_str());
    return static_cast<uint32_t>(v.get<int64_t>());
  }

  Expected<int32_t> compile(const json& s, const std::string& path) {
    if (s.is_boolean()) {
      if (s.get<bool>()) return any();
      return add(Node{}, path);  // false: no value (types 0)
    }
    if (!s.is_object())
      return make_error("json schema: the schema at %s must be an object or a boolean",
                        where(path).c_str());
    static const std::set<std::string, std::less<>> kKnown = {"type",
                                                              "enum",
                                                              "const",
                                                              "properties",
                                                              "required",
                                                              "additionalProperties",
                                                              "items",
                                                              "minItems",
                                                              "maxItems",
                                                              "minLength",
                                                              "maxLength",
                                                              "anyOf",
                                                              "oneOf",
                                                              "$ref",
                                                              "minimum",
                                                              "maximum",
                                                              "exclusiveMinimum",
                                                              "exclusiveMaximum",
                                                              "multipleOf",
                                                              "format",
                                                              "pattern",
                                                              "discriminator"};
    for (const auto& [k, v] : s.items())
      if (!kKnown.count(k) && !kAnnotations.count(k)) return unsupported(k, path);
    // The keywords that decide the kind of node, and what may stand beside them.
    for (const char* head : {"$ref", "anyOf", "oneOf", "enum", "const"}) {
      if (!s.contains(head)) continue;
      for (const auto& [k, v] : s.items()) {
        if (k == head || kAnnotations.count(k)) continue;
        // OpenAPI's (and pydantic's) note of a union's tag: no rule of its
        // own; oneOf's branches are checked to differ in a tag (check()).
        if (k == "discriminator" &&
            (std::string_view(head) == "oneOf" || std::string_view(head) == "anyOf")) {
          if (!v.is_object() || !v.contains("propertyName") || !v.at("propertyName").is_string())
            return make_error(
                "json schema: 'discriminator' at %s must be an object with a string "
                "'propertyName'",
                where(path).c_str());
          continue;
        }
        const bool enum_head =
            std::string_view(head) == "enum" || std::string_view(head) == "const";
        if (enum_head && k == "type") continue;  // filters the values
        return make_error("json schema: '%s' beside '%s' at %s is not supported", k.c_str(), head,
                          where(path).c_str());
      }
      const std::string h = head;
      if (h == "$ref") return compile_ref(s.at("$ref"), path);
      if (h == "anyOf" || h == "oneOf") return compile_any_of(s.at(h), h, path);
      return compile_enum(s, h, path);
    }
    return compile_typed(s, path);
  }

  Expected<uint8_t> types_of(const json& s, const std::string& path, bool* integer_only) {
    *integer_only = false;
    if (!s.contains("type")) return kAllTypes;
    const json& t = s.at("type");
    std::vector<std::string> names;
    if (t.is_string()) {
      names.push_back(t.get<std::string>());
    } else if (t.is_array() && !t.empty()) {
      for (const auto& e : t) {
        if (!e.is_string()) break;
        names.push_back(e.get<std::string>());
      }
      if (names.size() != t.size()) names.clear();
    }
    if (names.empty())
      return make_error("json schema: 'type' at %s must be a type name or a list of them",
                        where(path).c_str());
    uint8_t types = 0;
    bool integer = false, number = false;
    for (const std::string& n : names) {
      if (n == "object")
        types |= JsonSchema::kObject;
      else if (n == "array")
        types |= JsonSchema::kArray;
      else if (n == "string")
        types |= JsonSchema::kString;
      else if (n == "number")
        number = true;
      else if (n == "integer")
        integer = true;
      else if (n == "boolean")
        types |= JsonSchema::kTrue | JsonSchema::kFalse;
      else if (n == "null")
        types |= JsonSchema::kNull;
      else
        return make_error("json schema: 'type' at %s names '%s', which is not a JSON type",
                          where(path).c_str(), n.c_str());
    }
    if (integer || number) types |= JsonSchema::kNumber;
    *integer_only = integer && !number;
    return types;
  }

  // A bound's value as an exact decimal (its shortest form: 0.3 is "0.3").
  // An exclusive one is closed at the next double inside it, so that a
  // number the automaton writes keeps to it after a client's validator
  // rounds it to double (json_number_bounds.h).
  Expected<JsonDecimal> bound(const json& s, const char* key, const std::string& path) {
    const json& v = s.at(key);
    if (!v.is_number())
      return make_error("json schema: '%s' at %s must be a number%s", key, where(path).c_str(),
                        v.is_boolean() ? " (draft 4's boolean form is not supported)" : "");
    const std::string_view k = key;
    const bool lower = k == "minimum" || k == "exclusiveMinimum";
    std::string text = v.dump();
    if (k.substr(0, 9) == "exclusive") {
      const double x = v.get<double>();
      text = json(std::nextafter(x, lower ? HUGE_VAL : -HUGE_VAL)).dump();
    }
    auto d = JsonDecimal::parse(text);
    if (!d) return d.error();
    // Numbers under bounds have at most 21 digits before the point.
    static const JsonDecimal kBig = *JsonDecimal::parse("1e20");
    JsonDecimal m = *d;
    m.neg = false;
    if (json_decimal_compare(m, kBig) > 0)
      return make_error(
          "json schema: '%s' at %s is %s; bounds beyond 1e20 in magnitude are not supported", key,
          where(path).c_str(), v.dump().c_str());
    return *d;
  }

  // minimum / exclusiveMinimum, maximum / exclusiveMaximum: the tighter of
  // each pair; multipleOf, a whole number (a fraction such as 0.01 is
  // refused: its multiples are decimals a client's validator divides in
  // doubles, where 0.07 / 0.01 is not 7).
  Expected<JsonNumberBounds> bounds_of(const json& s, const std::string& path) {
    JsonNumberBounds b;
    if (s.contains("multipleOf")) {
      const json& m = s.at("multipleOf");
      const double x = m.is_number() ? m.get<double>() : 0;
      if (!m.is_number() || !(x > 0))
        return make_error("json schema: 'multipleOf' at %s must be a number above 0",
                          where(path).c_str());
      if (x != std::floor(x) || x > static_cast<double>(JsonNumberBounds::kMaxStep))
        return make_error(
            "json schema: 'multipleOf' at %s is %s; only whole numbers from 1 to 2^53 are "
            "supported",
            where(path).c_str(), m.dump().c_str());
      b.step = m.is_number_unsigned() ? m.get<uint64_t>() : static_cast<uint64_t>(x);
      // Within +-2^53 (JsonNumberBounds::kMaxStep says why): the bounds below
      // tighten these where they are inside.
      static const JsonDecimal kTop = *JsonDecimal::parse("9007199254740992");
      b.has_min = b.has_max = true;
      b.min = JsonDecimal{true, kTop.digits, kTop.exp};
      b.max = kTop;
    }
    for (const char* key : {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}) {
      if (!s.contains(key)) continue;
      auto v = bound(s, key, path);
      if (!v) return v.error();
      const std::string_view k = key;
      const bool lower = k == "minimum" || k == "exclusiveMinimum";
      bool& has = lower ? b.has_min : b.has_max;
      JsonDecimal& at = lower ? b.min : b.max;
      const int c = has ? json_decimal_compare(*v, at) : 0;
      if (!has || (lower ? c > 0 : c < 0)) {
        has = true;
        at = *v;
      }
    }
    return b;
  }

  // A string's pattern, compiled with its lengths (read into n already):
  // its index in the schema's patterns.
  Expected<int32_t> pattern(const json& s, const Node& n, const std::string& path) {
    const json& p = s.at("pattern");
    if (!p.is_string())
      return make_error("json schema: 'pattern' at %s must be a string", where(path).c_str());
    // A format already fixes the text; both would need their product.
    if (n.format != JsonStringFormat::None)
      return make_error("json schema: 'pattern' beside 'format' at %s is not supported",
                        where(path).c_str());
    auto re = compile_json_regex(p.get<std::string>(), n.min_length, n.max_length);
    if (!re)
      return make_error("json schema: 'pattern' at %s: %s", where(path).c_str(),
                        re.error().message.c_str());
    out_->patterns.push_back(std::move(*re));
    return static_cast<int32_t>(out_->patterns.size() - 1);
  }

  Expected<int32_t> compile_typed(const json& s, const std::string& path) {
    Node n;
    auto types = types_of(s, path, &n.integer_only);
    if (!types) return types.error();
    n.types = *types;
    auto bounds = bounds_of(s, path);
    if (!bounds) return bounds.error();
    n.bounds = *bounds;
    // A format of json_format_pattern's (email, uri, ...): compiled below
    // as a pattern is, with the lengths.
    const JsonFormatPattern* format_re = nullptr;
    if (s.contains("format")) {
      const json& f = s.at("format");
      const std::string name = f.is_string() ? f.get<std::string>() : std::string();
      n.format = json_string_format_from_name(name);
      if (n.format == JsonStringFormat::None) format_re = json_format_pattern(name);
      if (n.format == JsonStringFormat::None && !format_re)
        return make_error(
            "json schema: 'format' %s at %s is not supported (date, time, date-time, uuid, "
            "email, hostname, ipv4, ipv6, duration, uri, uri-reference, json-pointer and "
            "relative-json-pointer are)",
            f.dump().c_str(), where(path).c_str());
      // Date, time and uuid fix the length, or most of it: lengths beside
      // them could leave a string no way to end.
      for (const char* k : {"minLength", "maxLength"})
        if (n.format != JsonStringFormat::None && s.contains(k))
          return make_error("json schema: '%s' beside 'format' at %s is not supported", k,
                            where(path).c_str());
    }
    if (s.contains("minLength")) {
      auto v = count(s, "minLength", path);
      if (!v) return v.error();
      n.min_length = *v;
    }
    if (s.contains("maxLength")) {
      auto v = count(s, "maxLength", path);
      if (!v) return v.error();
      n.max_length = *v;
    }
    if (s.contains("pattern")) {
      if (format_re)  // both would need their product
        return make_error("json schema: 'pattern' beside 'format' at %s is not supported",
                          where(path).c_str());
      auto p = pattern(s, n, path);
      if (!p) return p.error();
      n.pattern = *p;
    } else if (format_re) {
      // The format's own limit (a hostname's 253 characters) as a maxLength.
      if (format_re->max_chars != 0 && n.max_length > format_re->max_chars)
        n.max_length = format_re->max_chars;
      auto re = compile_json_regex(format_re->regex, n.min_length, n.max_length);
      if (!re)  // (the lengths leave no string: "minLength": 300 beside a hostname)
        return make_error("json schema: 'format' at %s: %s", where(path).c_str(),
                          re.error().message.c_str());
      out_->patterns.push_back(std::move(*re));
      n.pattern = static_cast<int32_t>(out_->patterns.size() - 1);
    }
    if (s.contains("minItems")) {
      auto v = count(s, "minItems", path);
      if (!v) return v.error();
      n.min_items = *v;
    }
    if (s.contains("maxItems")) {
      auto v = count(s, "maxItems", path);
      if (!v) return v.error();
      n.max_items = *v;
    }
    // Children are compiled after this node is added: a recursive $ref may
    // reach it while they are.
    const int32_t id = add(n, path);
    auto node = [&]() -> Node& { return out_->nodes[static_cast<size_t>(id)]; };
    if (s.contains("items")) {
      if (s.at("items").is_array())
        return make_error("json schema: 'items' at %s as a list (a tuple) is not supported",
                          where(path).c_str());
      auto items = compile(s.at("items"), path + "/items");
      if (!items) return items.error();
      node().items = *items;
    } else {
      node().items = any();
    }
    std::vector<std::pair<std::string, int32_t>> props;  // escaped name, node
    std::vector<std::string> names;
    if (s.contains("properties")) {
      const json& p = s.at("properties");
      if (!p.is_object())
        return make_error("json schema: 'properties' at %s must be an object", where(path).c_str());
      if (p.size() > JsonSchema::kMaxProperties)
        return make_error(
            "json schema: 'properties' at %s has %zu names; at most %zu are supported",
            where(path).c_str(), p.size(), JsonSchema::kMaxProperties);
      for (const auto& [k, v] : p.items()) {
        auto c = compile(v, path + "/properties/" + pointer_token(k));
        if (!c) return c.error();
        props.emplace_back(json(k).dump(), *c);
        names.push_back(k);
      }
    }
    std::vector<size_t> order(props.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return props[a].first < props[b].first; });
    for (size_t i : order) {
      node().keys.push_back(props[i].first);
      node().key_nodes.push_back(props[i].second);
    }
    if (s.contains("required")) {
      const json& r = s.at("required");
      if (!r.is_array())
        return make_error("json schema: 'required' at %s must be a list of names",
                          where(path).c_str());
      for (const auto& e : r) {
        if (!e.is_string())
          return make_error("json schema: 'required' at %s must be a list of names",
                            where(path).c_str());
        const std::string key = json(e.get<std::string>()).dump();
        const auto& keys = node().keys;
        const auto it = std::lower_bound(keys.begin(), keys.end(), key);
        // A required key that 'properties' does not name would need
        // bookkeeping of other keys; schemas that clients send name them.
        if (it == keys.end() || *it != key)
          return make_error(
              "json schema: 'required' at %s names '%s', which is not in 'properties'",
              where(path).c_str(), e.get<std::string>().c_str());
        node().required |= uint64_t{1} << (it - keys.begin());
      }
    }
    if (s.contains("additionalProperties")) {
      const json& a = s.at("additionalProperties");
      if (a.is_boolean() && !a.get<bool>()) {
        node().additional = -1;
      } else {
        auto c = compile(a, path + "/additionalProperties");
        if (!c) return c.error();
        node().additional = *c;
      }
    } else {
      node().additional = any();
    }
    return id;
  }

  Expected<int32_t> compile_enum(const json& s, const std::string& head, const std::string& path) {
    std::vector<json> values;
    if (head == "const") {
      values.push_back(s.at("const"));
    } else {
      if (!s.at("enum").is_array())
        return make_error("json schema: 'enum' at %s must be a list", where(path).c_str());
      for (const auto& v : s.at("enum")) values.push_back(v);
    }
    bool integer_only = false;
    auto types = types_of(s, path, &integer_only);
    if (!types) return types.error();
    Node n;
    n.kind = Node::Enum;
    uint16_t depth = 0;
    for (const json& v : values) {
      const std::string text = v.dump();
      // The class of the value's first byte stands for its type.
      const uint8_t c = json_start_class(static_cast<uint8_t>(text[0]));
      if (!(c & *types)) continue;
      if (integer_only && v.is_number_float()) continue;
      JsonGrammar g(false);
      if (!g.feed(text) || !g.complete())
        return make_error(
            "json schema: the '%s' value %s at %s is beyond what the JSON automaton reads",
            head.c_str(), text.c_str(), where(path).c_str());
      n.values.push_back(text);
      depth = std::max(depth, value_depth(v));
    }
    std::sort(n.values.begin(), n.values.end());
    n.values.erase(std::unique(n.values.begin(), n.values.end()), n.values.end());
    if (n.values.empty())
      return make_error("json schema: '%s' at %s allows no value", head.c_str(),
                        where(path).c_str());
    enum_depth_.resize(out_->nodes.size() + 1, 0);
    const int32_t id = add(n, path);
    enum_depth_[static_cast<size_t>(id)] = depth;
    return id;
  }

  Expected<int32_t> compile_any_of(const json& list, const std::string& head,
                                   const std::string& path) {
    if (!list.is_array() || list.empty())
      return make_error("json schema: '%s' at %s must be a non-empty list of schemas", head.c_str(),
                        where(path).c_str());
    Node n;
    n.kind = Node::AnyOf;
    const int32_t id = add(n, path);
    for (size_t i = 0; i < list.size(); ++i) {
      auto c = compile(list[i], path + "/" + head + "/" + std::to_string(i));
      if (!c) return c.error();
      out_->nodes[static_cast<size_t>(id)].branches.push_back(*c);
    }
    any_of_head_[id] = head;
    return id;
  }

  Expected<int32_t> compile_ref(const json& ref, const std::string& path) {
    if (!ref.is_string())
      return make_error("json schema: '$ref' at %s must be a string", where(path).c_str());
    const std::string r = ref.get<std::string>();
    if (r.empty() || r[0] != '#')
      return make_error(
          "json schema: '$ref' at %s is '%s'; only references within the schema (#/$defs/...) "
          "are supported",
          where(path).c_str(), r.c_str());
    if (auto it = refs_.find(r); it != refs_.end()) return it->second;
    const std::string pointer = r.substr(1);
    const json* target = nullptr;
    try {
      target = &doc_.at(json::json_pointer(pointer));
    } catch (const json::exception&) {
      return make_error("json schema: '$ref' at %s is '%s', which is not in the schema",
                        where(path).c_str(), r.c_str());
    }
    Node n;
    n.kind = Node::Ref;
    const int32_t id = add(n, path);
    refs_[r] = id;  // before the target: a recursive reference finds this node
    auto c = compile(*target, pointer);
    if (!c) return c.error();
    out_->nodes[static_cast<size_t>(id)].target = *c;
    return id;
  }

  // Least nesting depths and start classes, to a fixed point (recursive
  // schemas): a value is only begun where one can be completed.
  void analyse() {
    auto& nodes = out_->nodes;
    enum_depth_.resize(nodes.size(), 0);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = 0; i < nodes.size(); ++i) {
        Node& n = nodes[i];
        uint16_t od = JsonSchema::kNever, ad = JsonSchema::kNever, d = JsonSchema::kNever;
        uint8_t starts = 0;
        auto depth_of = [&](int32_t k) { return nodes[static_cast<size_t>(k)].depth; };
        switch (n.kind) {
          case Node::Typed: {
            if (n.types & JsonSchema::kObject) {
              uint16_t inner = 0;
              for (size_t k = 0; k < n.keys.size(); ++k)
                if (n.required >> k & 1) inner = std::max(inner, depth_of(n.key_nodes[k]));
              od = add_depth(inner);
            }
            if ((n.types & JsonSchema::kArray) && n.min_items <= n.max_items)
              ad = n.min_items == 0 ? 1 : add_depth(depth_of(n.items));
            starts = n.types & ~(JsonSchema::kObject | JsonSchema::kArray);
            if (n.min_length > n.max_length) starts &= ~JsonSchema::kString;
            // No string of the lengths matches the pattern.
            if (n.pattern >= 0 && !out_->patterns[static_cast<size_t>(n.pattern)].satisfiable())
              starts &= ~JsonSchema::kString;
            if (n.bounds.any() && !n.bounds.satisfiable(n.integer_only))
              starts &= ~JsonSchema::kNumber;
            if (starts) d = 0;
            if (od != JsonSchema::kNever) starts |= JsonSchema::kObject;
            if (ad != JsonSchema::kNever) starts |= JsonSchema::kArray;
            d = std::min({d, od, ad});
            break;
          }
          case Node::Enum:
            d = enum_depth_[i];
            for (const std::string& v : n.values)
              starts |= json_start_class(static_cast<uint8_t>(v[0]));
            break;
          case Node::AnyOf:
            for (int32_t b : n.branches) {
              d = std::min(d, depth_of(b));
              starts |= nodes[static_cast<size_t>(b)].starts;
            }
            break;
          case Node::Ref:
            d = depth_of(n.target);
            starts = nodes[static_cast<size_t>(n.target)].starts;
            break;
        }
        if (od != n.object_depth || ad != n.array_depth || d != n.depth || starts != n.starts) {
          n.object_depth = od;
          n.array_depth = ad;
          n.depth = d;
          n.starts = starts;
          changed = true;
        }
      }
    }
  }

  // The node a value of node n is read by, past refs.
  const Node& past_refs(int32_t n) const {
    const auto& nodes = out_->nodes;
    for (size_t hops = 0; hops <= nodes.size(); ++hops) {
      const Node& x = nodes[static_cast<size_t>(n)];
      if (x.kind != Node::Ref) return x;
      n = x.target;
    }
    return nodes[static_cast<size_t>(n)];  // a cycle of refs: check_paths refuses it
  }

  // No object is valid for both a and b: both require a property whose
  // values are const or enum, and no value is in both lists (a tagged
  // union's tag, pydantic's discriminator). So oneOf over them is anyOf.
  bool tagged_apart(int32_t a, int32_t b) const {
    const Node& x = past_refs(a);
    const Node& y = past_refs(b);
    if (x.kind != Node::Typed || y.kind != Node::Typed) return false;
    for (size_t i = 0; i < x.keys.size(); ++i) {
      if (!(x.required >> i & 1)) continue;
      const auto it = std::lower_bound(y.keys.begin(), y.keys.end(), x.keys[i]);
      if (it == y.keys.end() || *it != x.keys[i]) continue;
      const size_t j = static_cast<size_t>(it - y.keys.begin());
      if (!(y.required >> j & 1)) continue;
      const Node& vx = past_refs(x.key_nodes[i]);
      const Node& vy = past_refs(y.key_nodes[j]);
      if (vx.kind != Node::Enum || vy.kind != Node::Enum) continue;
      // Both value lists are sorted.
      bool meet = false;
      for (size_t p = 0, q = 0; p < vx.values.size() && q < vy.values.size() && !meet;) {
        if (vx.values[p] < vy.values[q])
          ++p;
        else if (vy.values[q] < vx.values[p])
          ++q;
        else
          meet = true;
      }
      if (!meet) return true;
    }
    return false;
  }

  Status check() {
    static const char* kClassNames[] = {"an object", "an array", "a string", "a number",
                                        "true",      "false",    "null"};
    const auto& nodes = out_->nodes;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Node& n = nodes[i];
      if (n.kind != Node::AnyOf) continue;
      // anyOf may hold branches that begin alike (the automaton follows
      // each); oneOf's exactly-one could not be kept that way.
      if (any_of_head_.at(static_cast<int32_t>(i)) == "anyOf") continue;
      for (size_t a = 0; a < n.branches.size(); ++a)
        for (size_t b = 0; b < a; ++b) {
          const uint8_t both = nodes[static_cast<size_t>(n.branches[a])].starts &
                               nodes[static_cast<size_t>(n.branches[b])].starts;
          if (!both) continue;
          // Objects told apart by a tag: followed as anyOf, as no value matches both.
          if (both == JsonSchema::kObject && tagged_apart(n.branches[a], n.branches[b])) continue;
          int bit = 0;
          while (!(both >> bit & 1)) ++bit;
          return make_error(
              "json schema: '%s' at %s has two branches that can both be %s; supported are "
              "branches that begin differently (object, array, string, number, true, false, "
              "null), objects that differ in a required property's const or enum values (a "
              "discriminator), or anyOf",
              any_of_head_.at(static_cast<int32_t>(i)).c_str(), where(paths_[i]).c_str(),
              kClassNames[bit]);
        }
    }
    if (auto st = check_paths(); !st) return st;
    const Node& root = nodes[static_cast<size_t>(out_->root)];
    if (root.depth == JsonSchema::kNever)
      return make_error("json schema: no JSON value matches the schema");
    if (root.depth > JsonGrammar::kMaxDepth)
      return make_error("json schema: every value nests deeper than %d", JsonGrammar::kMaxDepth);
    return ok();
  }

  // A value's first byte must not lead from a node back to itself through
  // refs and anyOf branches alone (left recursion: "#/$defs/a" being
  // anyOf [{"$ref": "#/$defs/a"}, ...] would never read a byte), nor leave
  // more than kMaxPaths nodes open.
  Status check_paths() {
    const auto& nodes = out_->nodes;
    enum : uint8_t { kNew, kOpen, kDone };
    std::vector<uint8_t> mark(nodes.size(), kNew);
    // Depth first over the edges that read nothing; kOpen nodes are on the path.
    std::vector<std::pair<int32_t, size_t>> path;
    auto edges = [&](int32_t n) -> const std::vector<int32_t>* {
      const Node& x = nodes[static_cast<size_t>(n)];
      if (x.kind == Node::AnyOf) return &x.branches;
      return nullptr;
    };
    for (size_t start = 0; start < nodes.size(); ++start) {
      if (mark[start] != kNew) continue;
      path.emplace_back(static_cast<int32_t>(start), 0);
      mark[start] = kOpen;
      while (!path.empty()) {
        auto& [n, next] = path.back();
        const Node& x = nodes[static_cast<size_t>(n)];
        int32_t to = -1;
        if (x.kind == Node::Ref && next == 0) {
          to = x.target;
        } else if (const auto* e = edges(n); e && next < e->size()) {
          to = (*e)[next];
        }
        ++next;
        if (to < 0) {
          mark[static_cast<size_t>(n)] = kDone;
          path.pop_back();
          continue;
        }
        if (!nodes[static_cast<size_t>(to)].starts) continue;  // no value: never taken
        if (mark[static_cast<size_t>(to)] == kOpen)
          return make_error(
              "json schema: the schema at %s refers back to itself before reading a value "
              "(left recursion)",
              where(paths_[static_cast<size_t>(to)]).c_str());
        if (mark[static_cast<size_t>(to)] == kNew) {
          mark[static_cast<size_t>(to)] = kOpen;
          path.emplace_back(to, 0);
        }
      }
    }
    int32_t open[JsonSchema::kMaxPaths];
    for (size_t i = 0; i < nodes.size(); ++i)
      for (int b : {'{', '[', '"', '0', 't', 'f', 'n'})
        if (out_->resolve(static_cast<int32_t>(i), static_cast<uint8_t>(b), open) < 0)
          return make_error(
              "json schema: anyOf at %s leaves more than %d branches open at a value's first "
              "byte",
              where(paths_[i]).c_str(), JsonSchema::kMaxPaths);
    return ok();
  }

  const json& doc_;
  std::unique_ptr<JsonSchema> out_ = std::make_unique<JsonSchema>();
  std::vector<std::string> paths_;       // each node's JSON pointer
  std::vector<uint16_t> enum_depth_;     // an Enum node's deepest value
  std::map<std::string, int32_t> refs_;  // "$ref" text -> its node
  std::map<int32_t, std::string> any_of_head_;
  int32_t any_ = -1;
};

}  // namespace

uint8_t json_start_class(uint8_t b) {
  switch (b) {
    case '{':
      return JsonSchema::kObject;
    case '[':
      return JsonSchema::kArray;
    case '"':
      return JsonSchema::kString;
    case 't':
      return JsonSchema::kTrue;
    case 'f':
      return JsonSchema::kFalse;
    case 'n':
      return JsonSchema::kNull;
    default:
      return b == '-' || (b >= '0' && b <= '9') ? JsonSchema::kNumber : 0;
  }
}

namespace {

// resolve's walk; false past kMaxPaths.
bool collect(const JsonSchema& s, int32_t n, uint8_t c, int32_t* out, int& k) {
  const JsonSchema::Node& x = s.nodes[static_cast<size_t>(n)];
  if (!(x.starts & c)) return true;
  if (x.kind == JsonSchema::Node::Ref) return collect(s, x.target, c, out, k);
  if (x.kind == JsonSchema::Node::AnyOf) {
    for (int32_t br : x.branches)
      if (!collect(s, br, c, out, k)) return false;
    return true;
  }
  for (int i = 0; i < k; ++i)
    if (out[i] == n) return true;  // reached by two branches: one path
  if (k == JsonSchema::kMaxPaths) return false;
  out[k++] = n;
  return true;
}

}  // namespace

// The compiler refused left recursion (check_paths), so the walk ends.
int JsonSchema::resolve(int32_t n, uint8_t b, int32_t* out) const {
  const uint8_t c = json_start_class(b);
  if (c == 0) return 0;
  int k = 0;
  return collect(*this, n, c, out, k) ? k : -1;
}

Expected<std::shared_ptr<const JsonSchema>> compile_json_schema(const nlohmann::json& schema) {
  return Compiler(schema).run();
}

Expected<std::shared_ptr<const JsonSchema>> compile_json_schema(std::string_view text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return make_error("json schema: not JSON: %s", e.what());
  }
  return compile_json_schema(j);
}

}  // namespace ls
