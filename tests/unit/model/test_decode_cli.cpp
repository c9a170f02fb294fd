// Acceptance tests of `layerstream decode`, run as the user runs it: the
// built binary (LS_BINARY) on a tiny synthetic Q8_0 model, stdout and stderr
// captured to files. Determinism (greedy and seeded sampling, across thread
// counts), --dump-logits against the library's own logits, and bad input:
// every error must exit non-zero, by return and not by a signal, with a
// message on stderr that names the problem.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "io/gguf_writer.h"        // defines: GgufWriter
#include "model/cpu_backend.h"     // defines: CpuBackend
#include "model/model.h"           // defines: open_model()
#include "model/session.h"         // defines: Session
#include "model/synth.h"           // defines: synth_write()
#include "tests/unit/ls_binary.h"  // defines: LS_BINARY

using namespace ls;

namespace {

namespace fs = std::filesystem;

const char* const kPrompt = "The quick brown fox jumps over the lazy dog";

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag) {
    path = fs::temp_directory_path() / ("ls_" + tag + "_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

// The directory and the tiny Q8_0 model every case shares (written once).
const TempDir& temp_dir() {
  static TempDir dir("decode_cli");
  return dir;
}

const std::string& tiny_model() {
  static const std::string path = [] {
    SynthOptions opt;
    opt.shape = *synth_preset("tiny");
    opt.quant = *synth_quant_from_name("q8_0");
    opt.seed = 1;
    opt.threads = 2;
    opt.quiet = true;
    const std::string p = temp_dir().file("tiny-q8_0.gguf");
    const Status st = synth_write(opt, p);
    REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().message));
    return p;
  }();
  return path;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct RunResult {
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it
  std::string out, err;
  bool exited_with_error() const { return signal == 0 && exit_code > 0; }
};

// Run `layerstream decode ARGS...`; `exec` so that the wait status is the
// binary's own, not the shell's (a crash shows up as a signal).
RunResult run_decode(const std::vector<std::string>& args,
                     const std::string& stdin_file = "/dev/null") {
  static int n = 0;
  const std::string out = temp_dir().file("out" + std::to_string(n) + ".txt");
  const std::string err = temp_dir().file("err" + std::to_string(n) + ".txt");
  ++n;
  std::string cmd = "exec ";
  cmd += shell_quote(LS_BINARY);
  cmd += " decode";
  for (const std::string& a : args) (cmd += ' ') += shell_quote(a);
  (cmd += " <" + shell_quote(stdin_file) + " >") += shell_quote(out);
  (cmd += " 2>") += shell_quote(err);
  const int status = std::system(cmd.c_str());
  RunResult r;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

std::string describe(const RunResult& r) {
  return "exit " + std::to_string(r.exit_code) + ", signal " + std::to_string(r.signal) +
         "\n--- stderr:\n" + r.err + "--- stdout (tail):\n" +
         r.out.substr(r.out.size() > 400 ? r.out.size() - 400 : 0);
}

// The ids that --ids prints on the last line of stdout.
std::vector<int32_t> parse_ids(const std::string& out) {
  std::string s = out;
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  const size_t nl = s.rfind('\n');
  std::istringstream line(nl == std::string::npos ? s : s.substr(nl + 1));
  std::vector<int32_t> ids;
  int64_t v;
  while (line >> v) ids.push_back(static_cast<int32_t>(v));
  return ids;
}

// A successful decode's ids (fails the test on an error exit).
std::vector<int32_t> decode_ids(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"-m",    tiny_model(),          "-p",
                                   kPrompt, "--no-display-prompt", "--ids"};
  args.insert(args.end(), extra.begin(), extra.end());
  const RunResult r = run_decode(args);
  INFO(describe(r));
  REQUIRE(r.signal == 0);
  REQUIRE(r.exit_code == 0);
  const std::vector<int32_t> ids = parse_ids(r.out);
  REQUIRE(!ids.empty());
  return ids;
}

// An error case: non-zero exit by return, a message naming `what`, no crash.
// The command's own errors start with "error:"; CLI11's parse errors do not.
void check_fails(const std::vector<std::string>& args, const std::vector<std::string>& what,
                 bool command_error = true) {
  const RunResult r = run_decode(args);
  MESSAGE("exit " << r.exit_code << ": " << r.err.substr(0, r.err.find('\n')));
  INFO(describe(r));
  CHECK(r.signal == 0);
  CHECK(r.exit_code > 0);
  CHECK(r.exit_code < 128);  // not a shell-reported signal either
  if (command_error) CHECK(r.err.find("error: ") != std::string::npos);
  for (const std::string& w : what) {
    INFO("stderr should name: " << w);
    CHECK(r.err.find(w) != std::string::npos);
  }
  for (const char* crash : {"terminate called", "Assertion", "Sanitizer", "core dumped"})
    CHECK(r.err.find(crash) == std::string::npos);
}

std::string base_name(const std::string& path) {
  return fs::path(path).filename().string();
}

}  // namespace

TEST_CASE("decode: greedy ids are identical run to run and for 1, 2 and 3 threads") {
  const std::vector<std::string> greedy = {"--temp", "0", "-n", "32"};
  auto with_threads = [&](const char* t) {
    std::vector<std::string> a = greedy;
    a.insert(a.end(), {"-t", t});
    return decode_ids(a);
  };
  const std::vector<int32_t> a = with_threads("2");
  CHECK(a.size() <= 32);
  CHECK(with_threads("2") == a);
  CHECK(with_threads("1") == a);
  CHECK(with_threads("3") == a);
  MESSAGE("greedy: " << a.size() << " ids, identical for -t 2 (twice), 1 and 3");
}

TEST_CASE("decode: seeded sampling is identical run to run, and the seed matters") {
  const std::vector<std::string> s7 = {"--temp", "0.8", "--seed", "7", "-n", "32", "-t", "2"};
  const std::vector<int32_t> a = decode_ids(s7);
  CHECK(decode_ids(s7) == a);
  const std::vector<int32_t> b =
      decode_ids({"--temp", "0.8", "--seed", "8", "-n", "32", "-t", "2"});
  CHECK(b != a);  // else the seed is ignored (or sampling is greedy)
  MESSAGE("seed 7: " << a.size() << " ids, identical twice; seed 8 differs: " << (b != a));
}

TEST_CASE("decode: --dump-logits writes one row per generated token, equal to the library's") {
  const std::string dump = temp_dir().file("logits.f32");
  const int n = 6;
  const std::vector<int32_t> ids = decode_ids({"--temp", "0", "-n", std::to_string(n), "-t", "2",
                                               "--kv-type", "f32", "--dump-logits", dump});
  REQUIRE(ids.size() <= static_cast<size_t>(n));  // fewer only if an end-of-generation token came

  auto mr = open_model(tiny_model());
  REQUIRE_MESSAGE(mr.has_value(), (mr ? "" : mr.error().message));
  const Model& m = **mr;
  const size_t n_vocab = m.config().n_vocab;
  // Rows: the prompt's last position, then one per generated token fed back
  // (the last one is not fed): 1 + (generated - 1).
  const size_t rows = ids.size();
  const std::string bytes = read_file(dump);
  REQUIRE(bytes.size() == rows * n_vocab * sizeof(float));
  const float* dumped = reinterpret_cast<const float*>(bytes.data());

  // The library, as the command drives it: same tokens, threads and cache type.
  const std::vector<int32_t> prompt =
      m.tokenizer->encode(kPrompt, m.tokenizer->add_bos_default(), false);
  CpuBackend be(m.config(), m.globals(), 256, 1, KvType::F32, 2);
  Session s(m, be, 256);
  auto lg = s.feed(prompt);
  REQUIRE_MESSAGE(lg.has_value(), (lg ? "" : lg.error().message));
  for (size_t r = 0; r < rows; ++r) {
    if (r > 0) {
      lg = s.feed(std::span<const int32_t>(&ids[r - 1], 1));
      REQUIRE(lg.has_value());
    }
    double max_diff = 0, max_ref = 0;
    size_t argmax = 0;
    for (size_t j = 0; j < n_vocab; ++j) {
      max_diff = std::max(max_diff, std::fabs(double(dumped[r * n_vocab + j]) - double((*lg)[j])));
      max_ref = std::max(max_ref, std::fabs(double((*lg)[j])));
      if (dumped[r * n_vocab + j] > dumped[r * n_vocab + argmax]) argmax = j;
    }
    if (r == 0)
      MESSAGE("dump row 0 vs library: max |diff| = " << max_diff << " (max |logit| " << max_ref
                                                     << "); " << rows << " rows of " << n_vocab);
    INFO("row " << r);
    CHECK(max_diff == 0.0);                         // same code, same threads: bit for bit
    CHECK(static_cast<int32_t>(argmax) == ids[r]);  // greedy sampled each row's argmax
  }
}

TEST_CASE(
    "decode: --logit-bias bans or moves a token, the penalties change the ids; bad ones refused") {
  const std::vector<int32_t> plain = decode_ids({"-n", "6", "--temp", "0"});
  const std::string first = std::to_string(plain[0]);
  // Banned: the greedy first token never comes.
  for (const std::string& ban : {first + "-inf", first + "-100"}) {
    const std::vector<int32_t> b = decode_ids({"-n", "6", "--temp", "0", "--logit-bias", ban});
    CHECK(std::find(b.begin(), b.end(), plain[0]) == b.end());
  }
  // A large bias makes a token the greedy choice at every step; -99 does not ban.
  const std::vector<int32_t> up = decode_ids({"-n", "4", "--temp", "0", "-l", "7+100"});
  CHECK(up == std::vector<int32_t>(4, 7));
  const std::vector<int32_t> near = decode_ids({"-n", "6", "--temp", "0", "-l", "7+0.0"});
  CHECK(near == plain);
  // A strong presence penalty over the whole context: no token twice.
  const std::vector<int32_t> pres = decode_ids({"-n", "12", "--temp", "0", "--presence-penalty",
                                                "1000", "--repeat-last-n", "-1", "--no-bos"});
  std::vector<int32_t> sorted = pres;
  std::sort(sorted.begin(), sorted.end());
  CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
  // Bad values, each named.
  check_fails({"-m", tiny_model(), "-p", "x", "-l", "12x1"}, {"--logit-bias", "12x1"});
  check_fails({"-m", tiny_model(), "-p", "x", "-l", "12+nan"}, {"--logit-bias"});
  check_fails({"-m", tiny_model(), "-p", "x", "-l", "12+101"}, {"at most 100"});
  check_fails({"-m", tiny_model(), "-p", "x", "-l", "99999999+1"},
              {"99999999", "outside the vocabulary"});
  check_fails({"-m", tiny_model(), "-p", "x", "--presence-penalty", "nan"},
              {"--presence-penalty", "finite"});
}

TEST_CASE("decode: a GGUF of another architecture is refused by name") {
  const std::string path = temp_dir().file("gpt2-model.gguf");
  GgufWriter w;
  w.set_str("general.architecture", "gpt2");
  w.set_u32("gpt2.block_count", 1);
  w.add_tensor("token_embd.weight", GgmlType::F32, {8, 4});
  REQUIRE(w.create(path).ok());
  std::vector<float> zeros(32, 0.0f);
  REQUIRE(w.write_tensor(0, {reinterpret_cast<const uint8_t*>(zeros.data()), 128}).ok());
  REQUIRE(w.finish().ok());
  check_fails({"-m", path, "-p", "hi", "-n", "1"}, {base_name(path), "gpt2"});
}

TEST_CASE("decode: a vocabulary-only GGUF is refused") {
  std::string path =
      std::string(LS_SOURCE_DIR) + "/../shared/testdata/llama.cpp-vocab/ggml-vocab-llama-spm.gguf";
  if (!fs::exists(path)) {  // write one: llama metadata and a vocabulary, no tensors
    path = temp_dir().file("vocab-only.gguf");
    GgufWriter w;
    w.set_str("general.architecture", "llama");
    w.set_str("tokenizer.ggml.model", "llama");
    w.set_arr_str("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a"});
    w.set_arr_f32("tokenizer.ggml.scores", {0, 0, 0, -1});
    w.set_arr_i32("tokenizer.ggml.token_type", {2, 3, 3, 1});
    REQUIRE(w.create(path).ok());
    REQUIRE(w.finish().ok());
  }
  check_fails({"-m", path, "-p", "hi", "-n", "1"}, {base_name(path)});
}

TEST_CASE("decode: a prompt longer than -c is refused, naming the context") {
  std::string prompt;
  for (int i = 0; i < 20; ++i) prompt += "word ";
  check_fails({"-m", tiny_model(), "-c", "8", "-p", prompt, "-n", "4", "-t", "2"},
              {"context", "-c 8"});
}

TEST_CASE("decode: --cpu-layers N on the CPU backend is refused, saying why") {
  check_fails({"-m", tiny_model(), "--backend", "cpu", "--cpu-layers", "3", "-p", "hi", "-n", "1"},
              {"--cpu-layers 3", "CPU backend"});
}

TEST_CASE("decode: -n -1 is refused") {
  check_fails({"-m", tiny_model(), "-p", "hi", "-n", "-1"}, {"-n"});
}

TEST_CASE("decode: a missing model file is refused by name") {
  const std::string path = temp_dir().file("no-such-model.gguf");
  check_fails({"-m", path, "-p", "hi", "-n", "1"}, {"no-such-model.gguf"});
}

TEST_CASE("decode: an unknown flag is refused by name") {
  check_fails({"-m", tiny_model(), "-p", "hi", "--no-such-flag"}, {"--no-such-flag"}, false);
}

TEST_CASE("decode: a truncated model file is refused by name") {
  const std::string whole = read_file(tiny_model());
  const std::string path = temp_dir().file("truncated-tiny.gguf");
  {
    std::ofstream out(path, std::ios::binary);
    out.write(whole.data(), static_cast<std::streamsize>(whole.size() / 2));
  }
  REQUIRE(fs::file_size(path) == whole.size() / 2);
  check_fails({"-m", path, "-p", "hi", "-n", "1"}, {base_name(path)});
}

// --parallel: the ids of "[seq N ids] ..." lines, by sequence number.
std::map<int, std::vector<int32_t>> parse_parallel_ids(const std::string& out) {
  std::map<int, std::vector<int32_t>> ids;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    int n = 0;
    if (std::sscanf(line.c_str(), "[seq %d ids]", &n) != 1) continue;
    std::istringstream rest(line.substr(line.find(']') + 1));
    for (int64_t v; rest >> v;) ids[n].push_back(static_cast<int32_t>(v));
  }
  return ids;
}

TEST_CASE("decode: --parallel runs each line of -f as its own sequence, as it runs alone") {
  const std::vector<std::string> lines = {"The quick brown fox", "Hello",
                                          "jumps over the lazy dog and then some more words", "A",
                                          "lazy dog"};
  const std::string path = temp_dir().file("prompts.txt");
  {
    std::ofstream f(path);
    for (const auto& l : lines) f << l << "\n\n";  // blank lines are skipped
  }
  const RunResult r = run_decode(
      {"-m", tiny_model(), "-f", path, "--parallel", "3", "-n", "6", "--temp", "0", "--ids"});
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("5 sequences, 3 at once") != std::string::npos);
  const auto got = parse_parallel_ids(r.out);
  REQUIRE(got.size() == lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const RunResult one = run_decode({"-m", tiny_model(), "-p", lines[i], "--no-display-prompt",
                                      "-n", "6", "--temp", "0", "--ids"});
    REQUIRE(one.exit_code == 0);
    CHECK_MESSAGE(got.at(static_cast<int>(i) + 1) == parse_ids(one.out), "sequence " << i + 1);
  }
}

TEST_CASE("decode: --parallel with --chat, an empty prompt file, or 0 is refused") {
  check_fails({"-m", tiny_model(), "--parallel", "2", "--chat"}, {"--chat", "--parallel"});
  const std::string empty = temp_dir().file("empty-prompts.txt");
  {
    std::ofstream f(empty);
    f << "\n\n";
  }
  check_fails({"-m", tiny_model(), "--parallel", "2", "-f", empty},
              {"empty-prompts.txt", "no prompt"});
  check_fails({"-m", tiny_model(), "--parallel", "0", "-p", "hi"}, {"--parallel"}, false);
}

TEST_CASE("decode: --kv-blocks: a pool of 2 blocks runs 5 sequences as they run alone") {
  // Prompts of a few tokens and 6 more: each stays in one block of 16
  // positions, so 2 run at once and the rest wait for a block.
  const std::vector<std::string> lines = {"A", "Hi", "cat", "dog", "sun"};
  const std::string path = temp_dir().file("kv-blocks-prompts.txt");
  {
    std::ofstream f(path);
    for (const auto& l : lines) f << l << "\n";
  }
  const RunResult r = run_decode({"-m", tiny_model(), "-f", path, "--parallel", "4", "--kv-blocks",
                                  "2", "-n", "6", "--temp", "0", "--ids"});
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  // The plan prints the pool: its blocks and its bytes.
  CHECK(r.err.find("KV cache (2 blocks of 16 positions; 4 sequences of up to") !=
        std::string::npos);
  CHECK(r.err.find("kv cache full") == std::string::npos);
  const auto got = parse_parallel_ids(r.out);
  REQUIRE(got.size() == lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const RunResult one = run_decode({"-m", tiny_model(), "-p", lines[i], "--no-display-prompt",
                                      "-n", "6", "--temp", "0", "--ids"});
    REQUIRE(one.exit_code == 0);
    CHECK_MESSAGE(got.at(static_cast<int>(i) + 1) == parse_ids(one.out), "sequence " << i + 1);
  }
}

TEST_CASE(
    "decode: --kv-blocks past what the sequences can use, or a prompt past the pool, is refused") {
  check_fails({"-m", tiny_model(), "-c", "64", "--parallel", "2", "--kv-blocks", "9", "-p", "hi"},
              {"--kv-blocks 9", "at most 8 blocks"});
  std::string prompt;
  for (int i = 0; i < 20; ++i) prompt += "word ";
  check_fails({"-m", tiny_model(), "-c", "256", "--kv-blocks", "1", "-p", prompt, "-n", "4"},
              {"key/value blocks", "the pool has 1"});
}

TEST_CASE("decode: --ubatch-size below --parallel is refused, naming both") {
  // Every running sequence puts a token in each step, so a step cap below
  // them would send steps past the device's activations (step_tokens_max).
  check_fails({"-m", tiny_model(), "--parallel", "4", "--ubatch-size", "3", "-p", "hi"},
              {"--ubatch-size 3", "--parallel 4"});
}

TEST_CASE("bench: --batch reports a row per width, in all and per sequence, beside its bound") {
  const std::string out = temp_dir().file("bench-batch.txt");
  const std::string cmd = "exec " + shell_quote(LS_BINARY) + " bench -m " +
                          shell_quote(tiny_model()) + " --backend cpu -t 2 -n 4 --batch 1,3 >" +
                          shell_quote(out) + " 2>/dev/null";
  const int status = std::system(cmd.c_str());
  const std::string text = read_file(out);
  INFO(text);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(text.find("| batch | tok/s per sequence | tok/s |") != std::string::npos);
  for (const char* w : {"\n| 1 | ", "\n| 3 | "}) CHECK(text.find(w) != std::string::npos);
  CHECK(text.find("error") == std::string::npos);
}

TEST_CASE("bench: a bad --batch or --sweep value is refused before the model loads") {
  for (const char* bad : {"1,x", "0", "8,-2"}) {
    const std::string out = temp_dir().file("bench-bad-batch.txt");
    const std::string cmd = "exec " + shell_quote(LS_BINARY) + " bench -m " +
                            shell_quote(tiny_model()) + " --backend cpu -t 2 -n 4 --batch " +
                            shell_quote(bad) + " >" + shell_quote(out) + " 2>&1";
    const int status = std::system(cmd.c_str());
    const std::string text = read_file(out);
    INFO(bad << ": " << text);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 1);
    CHECK(text.find("--batch") != std::string::npos);
    CHECK(text.find("is not a positive integer") != std::string::npos);
    // Nothing ran: no plan, no table.
    CHECK(text.find("tier plan") == std::string::npos);
    CHECK(text.find("| batch |") == std::string::npos);
  }
}

TEST_CASE("decode --draft: greedy output is plain greedy decoding's, for every draft kind") {
  const std::vector<std::string> greedy = {"--temp", "0", "-n", "40", "-t", "2"};
  const std::vector<int32_t> plain = decode_ids(greedy);
  // The replay draft: plain's own ids, 30 % of positions made wrong.
  const std::string ids_file = temp_dir().file("plain.ids");
  {
    std::ofstream f(ids_file);
    for (int32_t t : plain) f << t << ' ';
  }
  struct Kind {
    std::string draft;
    std::vector<std::string> k;
  };
  const std::vector<Kind> kinds = {
      {"lookup", {"--draft-min", "4", "--draft-max", "4"}},
      {"replay:" + ids_file + ":0.7", {"--draft-min", "1", "--draft-max", "1"}},
      {"replay:" + ids_file + ":0.7", {"--draft-min", "5", "--draft-max", "5"}},
      {"replay:" + ids_file + ":1", {"--draft-min", "8", "--draft-max", "8"}},
      // The model as its own draft: every proposal stands (the all-accepted path).
      {tiny_model(), {"--draft-min", "3", "--draft-max", "3", "--draft-p-min", "0"}},
      // Self-speculation: the model without two of its layers.
      {"self:1,2", {"--draft-min", "3", "--draft-max", "3", "--draft-p-min", "0"}},
      {"lookup", {}},  // K chosen by the run
  };
  for (const Kind& k : kinds) {
    std::vector<std::string> a = greedy;
    a.insert(a.end(), {"--draft", k.draft});
    a.insert(a.end(), k.k.begin(), k.k.end());
    CAPTURE(k.draft);
    const RunResult r = run_decode([&] {
      std::vector<std::string> full = {"-m",    tiny_model(),          "-p",
                                       kPrompt, "--no-display-prompt", "--ids"};
      full.insert(full.end(), a.begin(), a.end());
      return full;
    }());
    INFO(describe(r));
    REQUIRE(r.exit_code == 0);
    CHECK(parse_ids(r.out) == plain);
    const size_t at = r.err.find("speculative (");
    REQUIRE(at != std::string::npos);
    MESSAGE(r.err.substr(at, r.err.find('\n', at) - at));
    CHECK(r.err.find("left the replay file") == std::string::npos);
    if (k.draft.rfind("replay:", 0) == 0 && k.draft.back() == '7') {
      // Both paths were taken: drafts that stood and drafts that did not.
      CHECK(r.err.find(" 0 accepted") == std::string::npos);
      CHECK(r.err.find("(100.0 %)") == std::string::npos);
    }
  }
}

TEST_CASE(
    "synth --tied: greedy tokens that no arithmetic flips, so replay's acceptance is its own") {
  // A random model with an output head of its own has nearly flat logits:
  // a verify step's width changes its arithmetic (on CUDA) and so near-ties,
  // and a replay draft of the plain run's ids then stops predicting the
  // target (the 70b in session 21). Tied, the head is the embedding, and
  // the residual stream keeps the last token's: it comes again by a wide
  // margin, whatever the arithmetic.
  const std::string model = temp_dir().file("tiny-tied-q4_k_m.gguf");
  const std::string cmd = "exec " + shell_quote(LS_BINARY) + " synth -q -t 2 --preset tiny " +
                          "--quant q4_k_m --tied -o " + shell_quote(model) + " >/dev/null 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  {
    auto m = open_model(model);
    REQUIRE(m.has_value());
    CHECK((*m)->file->find_tensor("output.weight") == nullptr);
  }
  auto ids_of = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> a = {"-m",    model, "-p", kPrompt,  "--no-display-prompt",
                                  "--ids", "-n",  "48", "--temp", "0"};
    a.insert(a.end(), extra.begin(), extra.end());
    const RunResult r = run_decode(a);
    INFO(describe(r));
    REQUIRE(r.exit_code == 0);
    return parse_ids(r.out);
  };
  const std::vector<int32_t> plain = ids_of({"-t", "2"});
  REQUIRE(plain.size() == 48);
  CHECK(std::count(plain.begin(), plain.end(), plain[0]) == 48);  // one token, again and again
  CHECK(ids_of({"-t", "1", "--act", "f32"}) == plain);
  const std::string ids_file = temp_dir().file("tied.ids");
  {
    std::ofstream f(ids_file);
    for (int32_t t : plain) f << t << ' ';
  }
  std::vector<std::string> a = {"-m",    model, "-p", kPrompt,  "--no-display-prompt",
                                "--ids", "-n",  "48", "--temp", "0",
                                "-t",    "2"};
  a.insert(a.end(),
           {"--draft", "replay:" + ids_file + ":0.7", "--draft-min", "4", "--draft-max", "4"});
  const RunResult r = run_decode(a);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(parse_ids(r.out) == plain);
  CHECK(r.err.find("left the replay file") == std::string::npos);
  // Drafts that stood and drafts that did not.
  CHECK(r.err.find(" 0 accepted") == std::string::npos);
  CHECK(r.err.find("(100.0 %)") == std::string::npos);
}

TEST_CASE("decode --draft replay: a run whose output leaves the file says where") {
  const std::vector<std::string> greedy = {"--temp", "0", "-n", "24", "-t", "2"};
  std::vector<int32_t> ids = decode_ids(greedy);
  REQUIRE(ids.size() > 12);
  ids[12] = ids[12] == 1 ? 2 : 1;  // not what the target emits there
  const std::string ids_file = temp_dir().file("left.ids");
  {
    std::ofstream f(ids_file);
    for (int32_t t : ids) f << t << ' ';
  }
  std::vector<std::string> a = {"-m", tiny_model(), "-p", kPrompt, "--no-display-prompt", "--ids"};
  a.insert(a.end(),
           {"--draft", "replay:" + ids_file + ":1", "--draft-min", "4", "--draft-max", "4"});
  a.insert(a.end(), greedy.begin(), greedy.end());
  const RunResult r = run_decode(a);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("left the replay file's at output token 12:") != std::string::npos);
}

TEST_CASE("decode --draft: bad drafts are refused by name") {
  const std::string m = tiny_model();
  check_fails({"-m", m, "-p", "x", "--draft", "replay:/nonexistent/ids:0.7"}, {"/nonexistent/ids"});
  check_fails({"-m", m, "-p", "x", "--draft", "replay:" + m + ":1.5"}, {"replay:FILE:ALPHA"});
  check_fails({"-m", m, "-p", "x", "--draft", "self"}, {"--draft self", "self:LIST"});
  check_fails({"-m", m, "-p", "x", "--draft", "self:9"}, {"--skip-layers 9"});
  check_fails({"-m", m, "-p", "x", "--draft", "lookup", "--draft-max", "0"}, {"--draft-max"});
  check_fails({"-m", m, "-p", "x", "--draft", "lookup", "--parallel", "2"}, {"--parallel"});
  check_fails({"-m", m, "-p", "x", "--draft", "/nonexistent/draft.gguf"},
              {"/nonexistent/draft.gguf"});
}

TEST_CASE("decode --draft --chat: each turn's reply is plain greedy decoding's") {
  const std::string turns = temp_dir().file("turns.txt");
  std::ofstream(turns) << "Who made the heaven?\nAnd the earth?\nAnd the sea?\n\n";
  // The trained default model (beside the binary): a random model's greedy
  // choice hardly depends on what the cache holds, a trained one's does.
  const std::string model =
      (fs::path(LS_BINARY).parent_path() / "layerstream-default.gguf").string();
  if (!fs::exists(model)) {
    MESSAGE("SKIPPED: no default model beside the binary (" << model << ")");
    return;
  }
  auto chat = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> a = {"-m", model, "--chat", "-n", "16", "--temp", "0", "-t", "2"};
    a.insert(a.end(), extra.begin(), extra.end());
    const RunResult r = run_decode(a, turns);
    INFO(describe(r));
    REQUIRE(r.exit_code == 0);
    return r.out;
  };
  const std::string plain = chat({});
  CHECK(!plain.empty());
  CHECK(chat({"--draft", "lookup", "--draft-min", "3", "--draft-max", "3"}) == plain);
  CHECK(chat({"--draft", model, "--draft-min", "2", "--draft-max", "2", "--draft-p-min", "0"}) ==
        plain);
}

// A chat longer than the context goes on, as llama.cpp's does: the oldest
// turns are dropped (the system prompt stays) and the rest computed again;
// a single turn that cannot fit is an error that says so.
TEST_CASE("decode --chat: a full context drops the oldest turns and the chat goes on") {
  const std::string turns = temp_dir().file("long_chat.txt");
  std::ofstream(turns) << "And God said\nLet there be light\nAnd the evening and the morning\n"
                          "were the first day\nand God saw the light\n\n";
  const std::string model =
      (fs::path(LS_BINARY).parent_path() / "layerstream-default.gguf").string();
  if (!fs::exists(model)) {
    MESSAGE("SKIPPED: no default model beside the binary (" << model << ")");
    return;
  }
  const RunResult r = run_decode({"-m", model, "--chat", "-c", "96", "-n", "30", "--temp", "0",
                                  "-t", "2", "--system", "Answer as the King James Bible."},
                                 turns);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("turn 5:") != std::string::npos);
  CHECK(r.err.find("is full: the oldest") != std::string::npos);
  // One turn longer than the whole context.
  const std::string big = temp_dir().file("big_turn.txt");
  {
    std::ofstream f(big);
    for (int i = 0; i < 40; ++i) f << "and the light ";
    f << "\n\n";
  }
  const RunResult b = run_decode({"-m", model, "--chat", "-c", "64", "-n", "8", "-t", "2"}, big);
  INFO(describe(b));
  CHECK(b.exited_with_error());
  CHECK(b.err.find("more than the context (-c 64)") != std::string::npos);
}

TEST_CASE("decode --skip-layers: the same ids from every tier; bad specs refused by name") {
  const std::vector<std::string> g = {"--temp", "0", "-n", "16", "-t", "2", "--skip-layers", "1,2"};
  auto with = [&](const char* tiers) {
    std::vector<std::string> a = g;
    a.insert(a.end(), {"--tiers", tiers});
    return decode_ids(a);
  };
  const std::vector<int32_t> resident = with("A");
  CHECK(with("B") == resident);                                           // streamed from RAM
  CHECK(with("C") == resident);                                           // read from storage
  CHECK(decode_ids({"--temp", "0", "-n", "16", "-t", "2"}) != resident);  // it does skip
  const std::string m = tiny_model();
  check_fails({"-m", m, "-p", "x", "--skip-layers", "4"}, {"--skip-layers 4", "(0..3)"});
  check_fails({"-m", m, "-p", "x", "--skip-layers", "0-3"}, {"leaves none"});
  check_fails({"-m", m, "-p", "x", "--skip-layers", "auto:1"}, {"layerstream calibrate"});
}
