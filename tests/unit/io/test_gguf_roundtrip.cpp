#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <iterator>

#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "tests/unit/io/gguf_samples.h"

using namespace ls;

TEST_CASE("gguf: writer output parses back with every value kept") {
  GgufWriter w;
  w.set_str("general.architecture", "llama");
  w.set_u32("llama.block_count", 3);
  w.set_f32("llama.rope.freq_base", 500000.0f);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
  w.set_arr_str("tokenizer.ggml.tokens", {"a", "b", ""});
  w.set_arr_f32("tokenizer.ggml.scores", {0.5f, -1.0f, 2.0f});
  w.add_tensor("t0", GgmlType::F32, {4, 3});
  w.add_tensor("t1", GgmlType::F16, {8});
  const std::string path = "test_roundtrip.gguf";
  REQUIRE(w.create(path).ok());
  std::vector<float> t0(12);
  for (int i = 0; i < 12; ++i) t0[i] = float(i) * 0.5f;
  std::vector<uint16_t> t1(8, 0x3c00);  // 1.0 in half
  REQUIRE(w.write_tensor(0, {reinterpret_cast<uint8_t*>(t0.data()), 48}).ok());
  REQUIRE(w.write_tensor(1, {reinterpret_cast<uint8_t*>(t1.data()), 16}).ok());
  REQUIRE(w.finish().ok());

  auto f = GgufFile::open(path);
  REQUIRE_MESSAGE(f.has_value(), (f ? "" : f.error().message));
  CHECK((*f)->version() == 3);
  CHECK(*(*f)->get_string("general.architecture") == "llama");
  CHECK(*(*f)->get_int("llama.block_count") == 3);
  CHECK(*(*f)->get_float("llama.rope.freq_base") == 500000.0);
  CHECK(*(*f)->get_bool("tokenizer.ggml.add_bos_token"));
  auto toks = (*f)->get_array("tokenizer.ggml.tokens");
  REQUIRE(toks.has_value());
  CHECK((*toks)->strings == std::vector<std::string>{"a", "b", ""});
  auto scores = (*f)->get_array("tokenizer.ggml.scores");
  CHECK((*scores)->number(1) == -1.0);
  REQUIRE((*f)->tensors().size() == 2);
  const GgufTensor* a = (*f)->find_tensor("t0");
  REQUIRE(a);
  CHECK(a->shape == std::vector<uint64_t>{4, 3});
  CHECK(a->bytes == 48);
  CHECK(a->offset % 32 == 0);
  auto d = (*f)->tensor_data(*a);
  CHECK(reinterpret_cast<const float*>(d.data())[5] == 2.5f);
  CHECK((*f)->get_int("missing.key").has_value() == false);
  CHECK((*f)->get_int("general.architecture").error().message.find("should be an integer") !=
        std::string::npos);
  std::remove(path.c_str());
}

TEST_CASE("gguf: every value type round-trips, nested arrays included, as v3 and v2") {
  for (uint32_t version : {3u, 2u}) {
    CAPTURE(version);
    GgufWriter w;
    w.set_version(version);
    test::gguf_add_every_value(w);
    test::gguf_add_sample_tensors(w);
    const std::vector<uint8_t> bytes = test::gguf_file_bytes(w);
    auto f = GgufFile::parse(bytes, "every_value.gguf");
    REQUIRE_MESSAGE(f.has_value(), (f ? "" : f.error().message));
    const GgufFile& g = **f;
    CHECK(g.version() == version);
    auto val = [&](const char* k) -> const GgufValue& {
      const GgufValue* v = g.find(k);
      REQUIRE_MESSAGE(v, k);
      return *v;
    };
    CHECK(val("t.u8").type == GgufType::UINT8);
    CHECK(val("t.u8").u == 200);
    CHECK(val("t.i8").i == -100);
    CHECK(val("t.u16").u == 60000);
    CHECK(val("t.i16").i == -30000);
    CHECK(val("t.u32").u == 4000000000u);
    CHECK(val("t.i32").i == -2000000000);
    CHECK(val("t.f32").f == 1.5);
    CHECK(*g.get_bool("t.bool"));
    CHECK(*g.get_string("t.str") == "h\xc3\xa9llo \"q\"\n");
    CHECK(val("t.u64").u == 0x8000000000000005ull);
    CHECK(val("t.u64").as_double() == 9223372036854775808.0);  // not negative
    CHECK(!g.get_int("t.u64").has_value());                    // out of int64_t range
    CHECK(*g.get_int("t.i64") == -4611686018427387904ll);
    CHECK(*g.get_float("t.f64") == 3.141592653589793);
    const std::pair<const char*, GgufType> types[] = {
        {"t.u8", GgufType::UINT8},     {"t.i8", GgufType::INT8},
        {"t.u16", GgufType::UINT16},   {"t.i16", GgufType::INT16},
        {"t.u32", GgufType::UINT32},   {"t.i32", GgufType::INT32},
        {"t.f32", GgufType::FLOAT32},  {"t.bool", GgufType::BOOL},
        {"t.str", GgufType::STRING},   {"t.u64", GgufType::UINT64},
        {"t.i64", GgufType::INT64},    {"t.f64", GgufType::FLOAT64},
        {"t.arr.u8", GgufType::ARRAY}, {"t.arr.nested", GgufType::ARRAY}};
    for (const auto& [k, type] : types) CHECK(val(k).type == type);
    CHECK(val("t.arr.u8").arr->integer(2) == 255);
    CHECK(val("t.arr.i8").arr->integer(0) == -128);
    CHECK(val("t.arr.u16").arr->integer(1) == 65535);
    CHECK(val("t.arr.i16").arr->integer(0) == -32768);
    CHECK(val("t.arr.u32").arr->integer(1) == 4294967295ll);
    CHECK(val("t.arr.i32").arr->integer(2) == -7);
    CHECK(val("t.arr.f32").arr->number(1) == -1.0);
    CHECK(val("t.arr.bool").arr->integer(1) == 0);
    CHECK(val("t.arr.bool").arr->integer(2) == 1);
    CHECK(val("t.arr.str").arr->strings == std::vector<std::string>{"a", "", "ccc"});
    CHECK(val("t.arr.u64").arr->number(0) == 18446744073709551615.0);
    CHECK(val("t.arr.i64").arr->integer(0) == -9);
    CHECK(val("t.arr.f64").arr->number(0) == 1e300);
    CHECK(val("t.arr.f64").arr->integer(0) == INT64_MAX);  // saturates, no UB
    CHECK(val("t.arr.empty").arr->count == 0);
    CHECK(val("t.arr.empty").arr->elem_type == GgufType::UINT32);
    const GgufArray& nested = *val("t.arr.nested").arr;
    REQUIRE(nested.arrays.size() == 3);
    CHECK(nested.arrays[0].arr->integer(1) == 2);
    CHECK(nested.arrays[1].arr->integer(0) == 3);
    CHECK(nested.arrays[2].arr->count == 0);
    const GgufArray& n3 = *val("t.arr.nested3").arr;
    REQUIRE(n3.arrays.size() == 2);
    CHECK(n3.arrays[0].arr->arrays[0].arr->strings == std::vector<std::string>{"x", "y"});
    CHECK(n3.arrays[1].arr->count == 0);
    CHECK(val("t.arr.nested").to_string() ==
          "[array x 3] [int32 x 2] 1, 2, [int32 x 1] 3, "
          "[int32 x 0]");
    CHECK(val("t.arr.u64").to_string() == "[uint64 x 2] 18446744073709551615, 1");

    // Written back from what was read, the header is byte for byte the same.
    GgufWriter again;
    again.set_version(version);
    for (const auto& [k, v] : g.metadata()) again.set(k, v);
    for (const GgufTensor& t : g.tensors()) again.add_tensor(t.name, t.type, t.shape);
    CHECK(again.header_bytes() == w.header_bytes());
    for (size_t i = 0; i < g.tensors().size(); ++i)
      CHECK(g.tensors()[i].rel_offset == w.tensor_offset(i));
  }
}
