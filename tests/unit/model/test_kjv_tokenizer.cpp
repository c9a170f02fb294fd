// The shipped models' tokenizer (issue 16: byte-level BPE, Llama 3 split, 4096
// tokens, stored as `gpt2` / `llama-bpe`) read from the shipped target GGUF
// encodes the whole KJV validation text to exactly the ids the Hugging Face
// `tokenizers` library gave (tests/data/kjv/valid.ids: no BOS, special tokens
// not parsed, one id a line; tests/data/kjv/README.md).
#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "io/gguf.h"          // defines: GgufFile
#include "model/tokenizer.h"  // defines: Tokenizer, detokenize()

using namespace ls;

TEST_CASE(
    "tokenizer: the shipped KJV tokenizer encodes valid.txt to the tokenizers library's ids") {
  const std::string dir = LS_SOURCE_DIR;
  std::ifstream txt(dir + "/tests/data/kjv/valid.txt", std::ios::binary);
  REQUIRE(txt);
  const std::string text{std::istreambuf_iterator<char>(txt), {}};
  std::ifstream ids_in(dir + "/tests/data/kjv/valid.ids");
  REQUIRE(ids_in);
  std::vector<int32_t> want;
  for (int64_t v; ids_in >> v;) want.push_back(static_cast<int32_t>(v));
  REQUIRE(want.size() == 50113);  // tests/data/kjv/README.md

  auto f = GgufFile::open(dir + "/model/weights/kjv-target-q8_0.gguf");
  REQUIRE(f.has_value());
  auto t = Tokenizer::from_gguf(**f);
  REQUIRE(t.has_value());
  CHECK((*t)->family() == TokenizerFamily::Llama3Bpe);
  CHECK((*t)->n_vocab() == 4096);

  const std::vector<int32_t> got = (*t)->encode(text, false, false);
  size_t first_diff = 0;
  while (first_diff < got.size() && first_diff < want.size() && got[first_diff] == want[first_diff])
    ++first_diff;
  INFO("first difference at id " << first_diff << " of " << want.size());
  CHECK(got.size() == want.size());
  CHECK(first_diff == want.size());
  CHECK(detokenize(**t, got) == text);  // and back: byte-level BPE loses nothing
}
