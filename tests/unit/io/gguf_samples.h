// Sample GGUF files built with GgufWriter: metadata of every value type
// (nested arrays too) and a few tensors of different types. The reader's
// tests break them byte by byte; tests/fuzz/make_seeds.cpp writes them out as
// the fuzzer's seed corpus.
// defines: gguf_scalar(), gguf_array(), gguf_add_every_value(),
//          gguf_add_sample_tensors(), gguf_file_bytes()
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "io/gguf_writer.h"

namespace ls::test {

// A scalar of any numeric type or bool; X is converted to the type's field.
template <typename T>
GgufValue gguf_scalar(GgufType type, T x) {
  GgufValue v;
  v.type = type;
  switch (type) {
    case GgufType::INT8:
    case GgufType::INT16:
    case GgufType::INT32:
    case GgufType::INT64:
      v.i = static_cast<int64_t>(x);
      break;
    case GgufType::FLOAT32:
    case GgufType::FLOAT64:
      v.f = static_cast<double>(x);
      break;
    default:
      v.u = static_cast<uint64_t>(x);
      break;
  }
  return v;
}

inline GgufValue gguf_string(const std::string& s) {
  GgufValue v;
  v.type = GgufType::STRING;
  v.s = s;
  return v;
}

// A numeric array of element type ET from values of C type T (T must match ET's size).
template <typename T>
GgufValue gguf_array(GgufType et, const std::vector<T>& xs) {
  GgufValue v;
  v.type = GgufType::ARRAY;
  v.arr = std::make_shared<GgufArray>();
  v.arr->elem_type = et;
  v.arr->count = xs.size();
  v.arr->raw.resize(xs.size() * sizeof(T));
  if (!xs.empty()) std::memcpy(v.arr->raw.data(), xs.data(), v.arr->raw.size());
  return v;
}

inline GgufValue gguf_string_array(const std::vector<std::string>& xs) {
  GgufValue v;
  v.type = GgufType::ARRAY;
  v.arr = std::make_shared<GgufArray>();
  v.arr->elem_type = GgufType::STRING;
  v.arr->count = xs.size();
  v.arr->strings = xs;
  return v;
}

inline GgufValue gguf_nested_array(const std::vector<GgufValue>& xs) {
  GgufValue v;
  v.type = GgufType::ARRAY;
  v.arr = std::make_shared<GgufArray>();
  v.arr->elem_type = GgufType::ARRAY;
  v.arr->count = xs.size();
  v.arr->arrays = xs;
  return v;
}

// Metadata of every value type: each scalar, an array of each scalar type,
// strings, empty arrays and arrays nested two and three deep. Keys start "t.".
inline void gguf_add_every_value(GgufWriter& w) {
  w.set_str("general.architecture", "llama");
  w.set("t.u8", gguf_scalar(GgufType::UINT8, 200));
  w.set("t.i8", gguf_scalar(GgufType::INT8, -100));
  w.set("t.u16", gguf_scalar(GgufType::UINT16, 60000));
  w.set("t.i16", gguf_scalar(GgufType::INT16, -30000));
  w.set("t.u32", gguf_scalar(GgufType::UINT32, 4000000000u));
  w.set("t.i32", gguf_scalar(GgufType::INT32, -2000000000));
  w.set("t.f32", gguf_scalar(GgufType::FLOAT32, 1.5f));
  w.set("t.bool", gguf_scalar(GgufType::BOOL, 1));
  w.set("t.str", gguf_string("h\xc3\xa9llo \"q\"\n"));
  w.set("t.u64", gguf_scalar(GgufType::UINT64, 0x8000000000000005ull));
  w.set("t.i64", gguf_scalar(GgufType::INT64, -4611686018427387904ll));
  w.set("t.f64", gguf_scalar(GgufType::FLOAT64, 3.141592653589793));
  w.set("t.arr.u8", gguf_array<uint8_t>(GgufType::UINT8, {0, 1, 255}));
  w.set("t.arr.i8", gguf_array<int8_t>(GgufType::INT8, {-128, 0, 127}));
  w.set("t.arr.u16", gguf_array<uint16_t>(GgufType::UINT16, {0, 65535}));
  w.set("t.arr.i16", gguf_array<int16_t>(GgufType::INT16, {-32768, 32767}));
  w.set("t.arr.u32", gguf_array<uint32_t>(GgufType::UINT32, {7, 4294967295u}));
  w.set("t.arr.i32", gguf_array<int32_t>(GgufType::INT32, {-5, 6, -7}));
  w.set("t.arr.f32", gguf_array<float>(GgufType::FLOAT32, {0.5f, -1.0f, 2.0f}));
  w.set("t.arr.bool", gguf_array<uint8_t>(GgufType::BOOL, {1, 0, 1}));
  w.set("t.arr.str", gguf_string_array({"a", "", "ccc"}));
  w.set("t.arr.u64", gguf_array<uint64_t>(GgufType::UINT64, {0xffffffffffffffffull, 1}));
  w.set("t.arr.i64", gguf_array<int64_t>(GgufType::INT64, {-9, 9}));
  w.set("t.arr.f64", gguf_array<double>(GgufType::FLOAT64, {1e300, -0.25}));
  w.set("t.arr.empty", gguf_array<uint32_t>(GgufType::UINT32, {}));
  w.set("t.arr.nested", gguf_nested_array({gguf_array<int32_t>(GgufType::INT32, {1, 2}),
                                           gguf_array<int32_t>(GgufType::INT32, {3}),
                                           gguf_array<int32_t>(GgufType::INT32, {})}));
  w.set("t.arr.nested3", gguf_nested_array({gguf_nested_array({gguf_string_array({"x", "y"})}),
                                            gguf_nested_array({})}));
  w.set_alignment(32);
}

// Tensors of five types and one to four dimensions, none of them empty.
inline void gguf_add_sample_tensors(GgufWriter& w) {
  w.add_tensor("token_embd.weight", GgmlType::F32, {8, 4});          // 128 bytes
  w.add_tensor("blk.0.attn_q.weight", GgmlType::Q4_0, {64, 2});      // 4 blocks of 18
  w.add_tensor("blk.0.ffn_up.weight", GgmlType::Q4_K, {256, 1, 1});  // 1 block of 144
  w.add_tensor("output_norm.weight", GgmlType::F16, {8});            // 16 bytes
  w.add_tensor("blk.0.bf", GgmlType::BF16, {4, 2, 2, 1});            // 32 bytes
}

// The finished file in memory; tensor I's byte J is (I * 37 + J) & 0xff.
inline std::vector<uint8_t> gguf_file_bytes(const GgufWriter& w) {
  std::vector<uint8_t> b = w.header_bytes();
  const size_t data = b.size();
  b.resize(w.total_bytes(), 0);
  for (size_t i = 0; i < w.tensor_count(); ++i)
    for (uint64_t j = 0; j < w.tensor_bytes(i); ++j)
      b[data + w.tensor_offset(i) + j] = static_cast<uint8_t>((i * 37 + j) & 0xff);
  return b;
}

}  // namespace ls::test
