#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <iterator>

#include "io/gguf.h"
#include "io/gguf_writer.h"

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
