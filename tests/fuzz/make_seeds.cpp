// Writes the fuzzer's seed corpus: small valid GGUF files covering every
// metadata value type, nested arrays, several tensor types, v2 and v3, a
// vocabulary without tensors, the bare header and an empty tensor.
// Usage: make_gguf_seeds DIR   (the committed seeds are in tests/fuzz/corpus;
// named without .gguf, which .gitignore keeps out of the tree)
#include <cstdio>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "tests/unit/io/gguf_samples.h"

using namespace ls;

namespace {

bool write_seed(const std::string& dir, const std::string& name, const std::vector<uint8_t>& b) {
  // Every seed must parse: a seed the reader rejects teaches the fuzzer little.
  auto f = GgufFile::parse(b, name);
  if (!f) {
    std::fprintf(stderr, "make_gguf_seeds: %s\n", f.error().message.c_str());
    return false;
  }
  const std::string path = dir + "/" + name;
  FILE* out = std::fopen(path.c_str(), "wb");
  if (!out || std::fwrite(b.data(), 1, b.size(), out) != b.size() || std::fclose(out) != 0) {
    std::fprintf(stderr, "make_gguf_seeds: %s: cannot write\n", path.c_str());
    return false;
  }
  std::printf("%s: %zu bytes\n", path.c_str(), b.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  bool ok = true;

  GgufWriter full;  // every value type and five tensors
  test::gguf_add_every_value(full);
  test::gguf_add_sample_tensors(full);
  ok &= write_seed(dir, "every_value_v3", test::gguf_file_bytes(full));
  full.set_version(2);
  ok &= write_seed(dir, "every_value_v2", test::gguf_file_bytes(full));

  GgufWriter meta;  // metadata only, ending right after it (a vocabulary)
  meta.set_str("general.architecture", "llama");
  meta.set_arr_str("tokenizer.ggml.tokens", {"<s>", "</s>", "a", "b"});
  meta.set_arr_f32("tokenizer.ggml.scores", {0, 0, -1, -2});
  meta.set_arr_i32("tokenizer.ggml.token_type", {3, 3, 1, 1});
  meta.set_str("tokenizer.ggml.model", "llama");  // last, so the file ends in a non-zero byte
  std::vector<uint8_t> vocab = test::gguf_file_bytes(meta);
  while (!vocab.empty() && vocab.back() == 0) vocab.pop_back();  // drop the padding
  ok &= write_seed(dir, "vocab_only", vocab);

  std::vector<uint8_t> header = {'G', 'G', 'U', 'F', 3, 0, 0, 0};
  header.resize(24, 0);
  ok &= write_seed(dir, "header_only", header);

  GgufWriter tensors;  // quantized types, alignment 64, an empty tensor
  tensors.set_alignment(64);
  tensors.add_tensor("q8", GgmlType::Q8_0, {32, 2});
  tensors.add_tensor("q6k", GgmlType::Q6_K, {256});
  tensors.add_tensor("empty", GgmlType::F32, {0, 3});
  tensors.add_tensor("i32", GgmlType::I32, {3, 1});
  tensors.set_version(2);
  ok &= write_seed(dir, "tensors_align64_v2", test::gguf_file_bytes(tensors));

  GgufWriter nested;  // arrays nested 15 deep (the reader allows 16)
  GgufValue v = test::gguf_string_array({"deep"});
  for (int d = 0; d < 14; ++d) v = test::gguf_nested_array({v, test::gguf_nested_array({})});
  nested.set("nested", v);
  ok &= write_seed(dir, "nested_arrays", test::gguf_file_bytes(nested));
  return ok ? 0 : 1;
}
