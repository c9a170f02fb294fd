// Tokenizer tests. The exactness tests replay llama.cpp's test vectors
// (../shared/testdata/llama.cpp-vocab: 46 strings per vocabulary, encoded
// without BOS and without special-token parsing); without that folder (a
// user's clone) they say so and pass. The built-in vocabulary and the error
// paths need no data.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <vector>

#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "model/tokenizer.h"
#include "model/unicode.h"
#include "tests/unit/ls_binary.h"
#include "tests/unit/sanitizer_subset.h"

using namespace ls;

namespace {

const std::string kVocabDir = LS_SOURCE_DIR "/../shared/testdata/llama.cpp-vocab";

bool exists(const std::string& path) {
  return std::ifstream(path).good();
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

struct Vectors {
  std::vector<std::string> text;
  std::vector<std::vector<int32_t>> ids;
};

Vectors read_vectors(const std::string& gguf) {
  Vectors v;
  const std::string inp = slurp(gguf + ".inp"), sep = "\n__ggml_vocab_test__\n";
  for (size_t a = 0;;) {
    const size_t b = inp.find(sep, a);
    if (b == std::string::npos) break;
    v.text.push_back(inp.substr(a, b - a));
    a = b + sep.size();
  }
  std::stringstream out(slurp(gguf + ".out"));
  for (std::string line; std::getline(out, line);) {
    std::stringstream ls(line);
    std::vector<int32_t> ids;
    for (int32_t id; ls >> id;) ids.push_back(id);
    v.ids.push_back(std::move(ids));
  }
  return v;
}

// A loaded vocabulary file, or null (and a message) when the data is absent.
struct Loaded {
  std::shared_ptr<GgufFile> file;
  std::unique_ptr<Tokenizer> tok;
  double load_ms = 0;
};
Loaded load_vocab(const char* name) {
  Loaded l;
  const std::string path = kVocabDir + "/ggml-vocab-" + name + ".gguf";
  if (!exists(path)) {
    MESSAGE("skipped: " << path << " is absent (it lives in the project's shared/ folder)");
    return l;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto f = GgufFile::open(path);
  REQUIRE_MESSAGE(f.has_value(), (f ? "" : f.error().message));
  auto t = Tokenizer::from_gguf(**f);
  REQUIRE_MESSAGE(t.has_value(), (t ? "" : t.error().message));
  l.load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  l.file = *f;
  l.tok = std::move(*t);
  return l;
}

std::string ids_str(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += (s.empty() ? "" : " ") + std::to_string(id);
  return s;
}

// Decode token by token; for text that is valid UTF-8, check that nothing
// pushed ends inside a character.
std::string stream_decode(const Tokenizer& tok, const std::vector<int32_t>& ids,
                          bool valid_utf8 = true) {
  Detokenizer d(tok);
  std::string all;
  for (int32_t id : ids) {
    const std::string part = d.push(id);
    if (valid_utf8 && !part.empty()) {
      // A part never ends with a lead byte waiting for its continuation.
      const auto last = static_cast<uint8_t>(part.back());
      CHECK_FALSE((last >= 0xC2 && last <= 0xF4));
    }
    all += part;
  }
  return all + d.flush();
}

void check_vectors(const char* name) {
  Loaded l = load_vocab(name);
  if (!l.tok) return;
  const Vectors v = read_vectors(l.file->path());
  REQUIRE(v.text.size() == 46);
  REQUIRE(v.ids.size() == v.text.size());
  int pass = 0;
  for (size_t i = 0; i < v.text.size(); ++i) {
    const std::vector<int32_t> got = l.tok->encode(v.text[i], false, false);
    CHECK_MESSAGE(ids_str(got) == ids_str(v.ids[i]), "vector " << i << ": '" << v.text[i] << "'");
    pass += got == v.ids[i];
  }
  MESSAGE(std::string(name) << ": " << pass << "/" << v.text.size() << " test vectors exact; load "
                            << l.load_ms << " ms");
}

// A GGUF file in memory with the given metadata (the bytes must outlive it).
std::shared_ptr<GgufFile> parse_file(const GgufWriter& w, std::vector<uint8_t>& bytes,
                                     const std::string& name) {
  bytes = w.header_bytes();
  auto f = GgufFile::parse(bytes, name);
  REQUIRE_MESSAGE(f.has_value(), (f ? "" : f.error().message));
  return *f;
}

std::unique_ptr<Tokenizer> builtin(uint32_t n_vocab, std::vector<uint8_t>& bytes) {
  GgufWriter w;
  REQUIRE(write_builtin_vocab(w, n_vocab).ok());
  auto f = parse_file(w, bytes, "builtin.gguf");
  auto t = Tokenizer::from_gguf(*f);
  REQUIRE_MESSAGE(t.has_value(), (t ? "" : t.error().message));
  return std::move(*t);
}

const char* kEnglish =
    "The model reads the whole prompt first, and then it writes its answer one token at a "
    "time. Most of the words in a sentence like this one are common, so a vocabulary that "
    "has learnt them needs far fewer tokens than there are bytes in the text.";

}  // namespace

TEST_CASE("tokenizer: llama-spm reproduces llama.cpp's test vectors") {
  check_vectors("llama-spm");
}

TEST_CASE("tokenizer: llama-bpe reproduces llama.cpp's test vectors") {
  check_vectors("llama-bpe");
}

TEST_CASE("tokenizer: BOS, EOS, EOT and the end-of-generation set") {
  Loaded bpe = load_vocab("llama-bpe");
  Loaded spm = load_vocab("llama-spm");
  if (!bpe.tok || !spm.tok) return;
  const Tokenizer& b = *bpe.tok;
  CHECK(b.family() == TokenizerFamily::Llama3Bpe);
  CHECK(b.n_vocab() == 128256);
  CHECK(b.bos() == 128000);
  CHECK(b.eos() == 128001);
  CHECK(b.eot() == 128009);
  CHECK(b.add_bos_default());
  CHECK(b.find("<|start_header_id|>") == 128006);
  CHECK(b.find("<|no such token|>") == -1);
  CHECK(b.is_eog(128001));
  CHECK(b.is_eog(128009));
  CHECK(b.is_eog(b.find("<|eom_id|>")) == (b.find("<|eom_id|>") >= 0));
  CHECK_FALSE(b.is_eog(128000));
  CHECK_FALSE(b.is_eog(9906));
  CHECK(b.encode("", true, false) == std::vector<int32_t>{128000});
  CHECK(b.encode("", false, false).empty());
  CHECK(b.encode("Hello world", true, false) == std::vector<int32_t>{128000, 9906, 1917});
  CHECK(b.piece(128000) == "<|begin_of_text|>");
  CHECK(b.piece(1917) == " world");

  const Tokenizer& s = *spm.tok;
  CHECK(s.family() == TokenizerFamily::Llama2Spm);
  CHECK(s.n_vocab() == 32000);
  CHECK(s.bos() == 1);
  CHECK(s.eos() == 2);
  CHECK(s.eot() == -1);
  CHECK(s.add_bos_default());
  CHECK(s.is_eog(2));
  CHECK_FALSE(s.is_eog(1));
  CHECK(s.encode("", true, false) == std::vector<int32_t>{1});
  CHECK(s.encode("Hello world", true, false) == std::vector<int32_t>{1, 15043, 3186});
  CHECK(s.piece(15043) == " Hello");
  CHECK(s.piece(13) == "\n");  // <0x0A>
  CHECK(s.piece(1) == "<s>");
}

TEST_CASE("tokenizer: special tokens are parsed only when asked") {
  Loaded bpe = load_vocab("llama-bpe");
  Loaded spm = load_vocab("llama-spm");
  if (!bpe.tok || !spm.tok) return;
  const Tokenizer& b = *bpe.tok;
  const std::string chat = "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>";
  const std::vector<int32_t> on = b.encode(chat, true, true);
  REQUIRE(on.size() >= 6);
  CHECK(on[0] == 128000);
  CHECK(on[1] == 128006);
  CHECK(on.back() == 128009);
  CHECK(std::count(on.begin(), on.end(), 128007) == 1);
  // The text between the specials is tokenized as it would be alone.
  CHECK(std::vector<int32_t>(on.begin() + 2, on.begin() + 3) == b.encode("user", false, false));
  const std::vector<int32_t> off = b.encode(chat, false, false);
  for (int32_t id : off) CHECK(id < 128000);
  CHECK(detokenize(b, off) == chat);  // taken as plain text, it round-trips

  const Tokenizer& s = *spm.tok;
  // After a special token SPM text gets its leading space again, as in llama.cpp.
  CHECK(s.encode("<s>Hello</s>", false, true) == std::vector<int32_t>{1, 15043, 2});
  const std::vector<int32_t> plain = s.encode("<s>Hello</s>", false, false);
  CHECK(std::count(plain.begin(), plain.end(), 1) == 0);
  CHECK(std::count(plain.begin(), plain.end(), 2) == 0);
}

TEST_CASE("tokenizer: the detokenizer holds back UTF-8 split across byte tokens") {
  Loaded bpe = load_vocab("llama-bpe");
  Loaded spm = load_vocab("llama-spm");
  if (!bpe.tok || !spm.tok) return;
  const std::string llama = "\xF0\x9F\xA6\x99";  // U+1F999, four bytes
  for (const Tokenizer* t : {bpe.tok.get(), spm.tok.get()}) {
    std::vector<int32_t> bytes;  // one byte token per byte
    for (char c : llama) {
      if (t->family() == TokenizerFamily::Llama2Spm) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", static_cast<uint8_t>(c));
        bytes.push_back(t->find(name));
      } else {
        std::string s;
        utf8_append(s, byte_to_codepoint(static_cast<uint8_t>(c)));
        bytes.push_back(t->find(s));
      }
      REQUIRE(bytes.back() >= 0);
    }
    Detokenizer d(*t);
    CHECK(d.push(bytes[0]) == "");
    CHECK(d.push(bytes[1]) == "");
    CHECK(d.push(bytes[2]) == "");
    CHECK(d.push(bytes[3]) == llama);
    CHECK(d.flush() == "");
    // An unfinished character comes out at flush().
    Detokenizer e(*t);
    CHECK(e.push(bytes[0]) == "");
    CHECK(e.flush() == llama.substr(0, 1));
  }
}

TEST_CASE("tokenizer: decoding the test strings gives them back") {
  Loaded bpe = load_vocab("llama-bpe");
  Loaded spm = load_vocab("llama-spm");
  if (!bpe.tok || !spm.tok) return;
  const Vectors v = read_vectors(bpe.file->path());
  for (const std::string& s : v.text) {
    // BPE: exact, with or without BOS.
    CHECK(stream_decode(*bpe.tok, bpe.tok->encode(s, false, false)) == s);
    CHECK(stream_decode(*bpe.tok, bpe.tok->encode(s, true, false)) == s);
    // SPM: exact from BOS (the prepended space is dropped); a stream that
    // does not start at BOS is a continuation and keeps that space.
    CHECK(stream_decode(*spm.tok, spm.tok->encode(s, true, false)) == s);
    CHECK(stream_decode(*spm.tok, spm.tok->encode(s, false, false)) == (s.empty() ? "" : " " + s));
  }
}

TEST_CASE("tokenizer: random text round-trips") {
  Loaded bpe = load_vocab("llama-bpe");
  Loaded spm = load_vocab("llama-spm");
  if (!bpe.tok || !spm.tok) return;
  uint64_t state = 42;
  const auto rnd = [&](uint32_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(state >> 33) % n;
  };
  const uint32_t pool[] = {' ',   ' ',    '\n',    '\t',   'a',  'Z',   '7',    '\'',   '.', 0xE9,
                           0x416, 0x4E2D, 0x1F999, 0x3000, 0xA0, 0x661, 0x200D, 0xFE0F, 's'};
  for (int iter = 0; iter < 300; ++iter) {
    std::string s;
    const uint32_t len = rnd(40);
    for (uint32_t i = 0; i < len; ++i)
      utf8_append(s, rnd(3) ? pool[rnd(std::size(pool))] : 'a' + rnd(26));
    CHECK(stream_decode(*bpe.tok, bpe.tok->encode(s, true, false)) == s);
    CHECK(stream_decode(*spm.tok, spm.tok->encode(s, true, false)) == s);
    // Byte-level BPE keeps any bytes, valid UTF-8 or not.
    std::string raw;
    for (uint32_t i = 0; i < len; ++i) raw += static_cast<char>(rnd(256));
    CHECK(stream_decode(*bpe.tok, bpe.tok->encode(raw, false, false), false) == raw);
  }
}

TEST_CASE("tokenizer: encoding a few KB takes milliseconds") {
  // Sanitizers slow this code 5-20x; the bounds are for optimized builds.
  constexpr double kSlowdown = ls::test::kSanitizerBuild ? 20 : 1;
  Loaded bpe = load_vocab("llama-bpe");
  Loaded spm = load_vocab("llama-spm");
  if (!bpe.tok || !spm.tok) return;
  const Vectors v = read_vectors(bpe.file->path());
  std::string text;
  while (text.size() < 8192)
    for (const std::string& s : v.text) text += s + "\n";
  // One 4 KB word with no whole-word token: every merge goes through the queue.
  uint32_t x = 1;
  for (int i = 0; i < 4096; ++i) text += static_cast<char>('a' + (x = x * 1103515245 + 12345) % 26);
  for (const Tokenizer* t : {bpe.tok.get(), spm.tok.get()}) {
    double best = 1e9;
    size_t n = 0;
    for (int rep = 0; rep < 5; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      n = t->encode(text, true, false).size();
      best = std::min(
          best,
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    MESSAGE((t->family() == TokenizerFamily::Llama3Bpe ? "bpe" : "spm")
            << ": " << text.size() << " bytes -> " << n << " tokens in " << best
            << " ms (bound: " << 50 * kSlowdown << " ms)");
    CHECK(best < 50.0 * kSlowdown);
  }
  MESSAGE("vocab load (open + from_gguf): bpe " << bpe.load_ms << " ms, spm " << spm.load_ms
                                                << " ms (bound: " << 1000 * kSlowdown << " ms)");
  CHECK(bpe.load_ms < 1000.0 * kSlowdown);
}

TEST_CASE("tokenizer: the built-in vocabulary round-trips and compresses English") {
  std::vector<uint8_t> bytes;
  auto t = builtin(512, bytes);
  CHECK(t->family() == TokenizerFamily::Llama3Bpe);
  CHECK(t->n_vocab() == 512);
  CHECK(t->bos() == t->find("<|begin_of_text|>"));
  CHECK(t->eos() == t->find("<|end_of_text|>"));
  CHECK(t->eot() == t->find("<|eot_id|>"));
  CHECK(t->find("<|start_header_id|>") == t->bos() + 6);
  CHECK(t->find("<|end_header_id|>") == t->bos() + 7);
  CHECK(t->eot() == t->bos() + 9);
  CHECK(t->bos() >= 256 + 64);  // room was left for merges
  CHECK(t->find("<|reserved_special_token_0|>") == t->bos() + 2);
  CHECK(t->type(511) == TokenType::Control);
  CHECK(t->is_eog(t->eot()));
  CHECK(t->add_bos_default());

  const std::string english = kEnglish;
  const std::vector<int32_t> ids = t->encode(english, false, false);
  MESSAGE("built-in 512: " << english.size() << " bytes -> " << ids.size() << " tokens");
  CHECK(ids.size() * 2 < english.size());
  CHECK(detokenize(*t, ids) == english);
  CHECK(t->encode("<|eot_id|>", false, true) == std::vector<int32_t>{t->eot()});

  // Any bytes round-trip, through byte tokens where no merge applies.
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  CHECK(detokenize(*t, t->encode(all, false, false)) == all);
  const std::string mixed =
      "na\xC3\xAFve caf\xC3\xA9 \xE2\x82\xAC"
      "5 \xF0\x9F\xA6\x99!\n\n\tx";
  CHECK(detokenize(*t, t->encode(mixed, true, false)) == mixed);

  // A Llama-3-sized one: all the merges the built-in text teaches, then
  // reserved specials up to n_vocab.
  auto big = builtin(128256, bytes);
  CHECK(big->n_vocab() == 128256);
  const std::vector<int32_t> big_ids = big->encode(english, false, false);
  MESSAGE("built-in 128256: " << english.size() << " bytes -> " << big_ids.size() << " tokens");
  CHECK(big_ids.size() <= ids.size());
  CHECK(detokenize(*big, big_ids) == english);
  CHECK(big->type(128255) == TokenType::Control);
  CHECK(big->piece(128255).rfind("<|reserved_special_token_", 0) == 0);

  GgufWriter w;
  const Status small = write_builtin_vocab(w, 511);
  REQUIRE_FALSE(small.ok());
  CHECK(small.error().message.find("512") != std::string::npos);
}

TEST_CASE("tokenizer: errors name the file and the tokenizer key") {
  std::vector<uint8_t> bytes;
  {
    GgufWriter w;
    w.set_str("general.architecture", "llama");
    auto f = parse_file(w, bytes, "no_vocab.gguf");
    auto t = Tokenizer::from_gguf(*f);
    REQUIRE_FALSE(t.has_value());
    CHECK(t.error().message.find("no_vocab.gguf") != std::string::npos);
    CHECK(t.error().message.find("tokenizer.ggml.model") != std::string::npos);
  }
  {
    GgufWriter w;
    w.set_str("tokenizer.ggml.model", "bert");
    auto f = parse_file(w, bytes, "bert.gguf");
    auto t = Tokenizer::from_gguf(*f);
    REQUIRE_FALSE(t.has_value());
    CHECK(t.error().message.find("bert.gguf") != std::string::npos);
    CHECK(t.error().message.find("'bert' is not supported") != std::string::npos);
  }
  {
    GgufWriter w;
    REQUIRE(write_builtin_vocab(w, 512).ok());
    w.set_str("tokenizer.ggml.pre", "qwen2");
    auto f = parse_file(w, bytes, "qwen.gguf");
    auto t = Tokenizer::from_gguf(*f);
    REQUIRE_FALSE(t.has_value());
    CHECK(t.error().message.find("tokenizer.ggml.pre = 'qwen2'") != std::string::npos);
  }
  {
    GgufWriter w;
    w.set_str("tokenizer.ggml.model", "llama");
    auto f = parse_file(w, bytes, "no_tokens.gguf");
    auto t = Tokenizer::from_gguf(*f);
    REQUIRE_FALSE(t.has_value());
    CHECK(t.error().message.find("tokenizer.ggml.tokens") != std::string::npos);
  }
  {
    GgufWriter w;
    REQUIRE(write_builtin_vocab(w, 512).ok());
    w.set_u32("tokenizer.ggml.eos_token_id", 100000);
    auto f = parse_file(w, bytes, "bad_eos.gguf");
    auto t = Tokenizer::from_gguf(*f);
    REQUIRE_FALSE(t.has_value());
    CHECK(t.error().message.find("tokenizer.ggml.eos_token_id") != std::string::npos);
  }
}

TEST_CASE("tokenizer: copy_vocab carries a vocabulary into another file") {
  Loaded spm = load_vocab("llama-spm");
  if (!spm.tok) return;
  GgufWriter w;
  w.set_str("general.architecture", "llama");
  auto n = copy_vocab(*spm.file, w);
  REQUIRE(n.has_value());
  CHECK(*n == 32000);
  std::vector<uint8_t> bytes;
  auto f = parse_file(w, bytes, "copy.gguf");
  auto t = Tokenizer::from_gguf(*f);
  REQUIRE(t.has_value());
  const std::string s = "Hello, y'all! How are you \xF0\x9F\x98\x81 ?";
  CHECK((*t)->encode(s, true, false) == spm.tok->encode(s, true, false));

  GgufWriter w2;
  auto bad = copy_vocab(*f, w2);  // fine
  CHECK(bad.has_value());
  GgufWriter none;
  none.set_str("general.architecture", "llama");
  auto g = parse_file(none, bytes, "none.gguf");
  GgufWriter w3;
  auto err = copy_vocab(*g, w3);
  REQUIRE_FALSE(err.has_value());
  CHECK(err.error().message.find("none.gguf") != std::string::npos);
}

TEST_CASE("tokenizer: layerstream tokenize prints the ids on one line") {
  const std::string path = "test_tokenize_cli.gguf";
  GgufWriter w;
  REQUIRE(write_builtin_vocab(w, 512).ok());
  REQUIRE(w.create(path).ok());
  REQUIRE(w.finish().ok());
  auto f = GgufFile::open(path);
  REQUIRE(f.has_value());
  auto t = Tokenizer::from_gguf(**f);
  REQUIRE(t.has_value());

  const auto run = [](const std::string& cmd, int& status) {
    std::string out;
    FILE* p = popen(cmd.c_str(), "r");
    REQUIRE(p);
    char buf[4096];
    for (size_t k; (k = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, k);
    status = pclose(p);
    return out;
  };
  int status = 0;
  const std::string text = "Hello, world! The model reads the prompt.";
  std::string want;
  for (int32_t id : (*t)->encode(text, true, false))
    want += (want.empty() ? "" : " ") + std::to_string(id);
  const std::string bin = LS_BINARY;
  CHECK(run(bin + " tokenize -m " + path + " '" + text + "'", status) == want + "\n");
  CHECK(WEXITSTATUS(status) == 0);
  // stdin, without BOS, and with pieces.
  want.clear();
  for (int32_t id : (*t)->encode("the cat", false, false))
    want += (want.empty() ? "" : " ") + std::to_string(id);
  CHECK(run("printf 'the cat' | " + bin + " tokenize -m " + path + " --no-bos", status) ==
        want + "\n");
  const std::string pieces =
      run(bin + " tokenize -m " + path + " --pieces --special 'a<|eot_id|>'", status);
  CHECK(pieces.find(std::to_string((*t)->eot()) + ":'<|eot_id|>'") != std::string::npos);
  CHECK(pieces.find(std::to_string((*t)->bos()) + ":'<|begin_of_text|>'") == 0);

  // Errors: exit 1 with a message naming the file.
  const std::string err = run(bin + " tokenize -m /nonexistent.gguf hi 2>&1", status);
  CHECK(WEXITSTATUS(status) == 1);
  CHECK(err.find("/nonexistent.gguf") != std::string::npos);
  GgufWriter nv;
  nv.set_str("general.architecture", "llama");
  REQUIRE(nv.create("test_tokenize_novocab.gguf").ok());
  REQUIRE(nv.finish().ok());
  const std::string err2 = run(bin + " tokenize -m test_tokenize_novocab.gguf hi 2>&1", status);
  CHECK(WEXITSTATUS(status) == 1);
  CHECK(err2.find("tokenizer.ggml.model") != std::string::npos);
  std::remove(path.c_str());
  std::remove("test_tokenize_novocab.gguf");
}
