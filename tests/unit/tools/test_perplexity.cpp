// `layerstream perplexity`, run as the user runs it (LS_BINARY), on a tiny
// synthetic F32 model, against an independent computation here: the same
// windows (BOS first, as llama.cpp does) through the CPU backend with logits
// for every row, log-softmax and the running and final estimates in double.
// The printed values must agree to 1e-4 relative; the output must have
// llama.cpp's shape; prompt batches smaller than the window, --chunks and
// streamed tier plans (RAM, storage and CPU tiers) must give the same
// numbers; a text shorter than two windows is an error.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "model/cpu_backend.h"            // defines: CpuBackend
#include "model/model.h"                  // defines: open_model(), forward_resident()
#include "model/synth.h"                  // defines: synth_write()
#include "tests/unit/ls_binary.h"         // defines: LS_BINARY
#include "tests/unit/sanitizer_subset.h"  // defines: sanitizer_subset()

using namespace ls;

namespace {

namespace fs = std::filesystem;

constexpr int kCtx = 64;

struct Dir {
  fs::path path;
  Dir() {
    path = fs::current_path() / ("ls_test_perplexity_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

const Dir& dir() {
  static Dir d;
  return d;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Run {
  int rc;
  std::string out, err;
};

Run run_tool(const std::string& args) {
  const std::string o = dir().file("stdout.txt"), e = dir().file("stderr.txt");
  const std::string cmd =
      std::string("exec ") + LS_BINARY + " " + args + " </dev/null >" + o + " 2>" + e;
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(o), slurp(e)};
}

const std::string& model_path() {
  static const std::string p = [] {
    SynthOptions opt;
    opt.shape = *synth_preset("tiny");  // 4 layers, GQA, Llama 3.1 rope
    opt.quant = *synth_quant_from_name("f32");
    opt.seed = 21;
    opt.threads = 2;
    opt.quiet = true;
    const std::string path = dir().file("tiny-f32.gguf");
    const Status st = synth_write(opt, path);
    REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().message));
    return path;
  }();
  return p;
}

// English-like text of `sentences` varied sentences.
std::string text_file(const std::string& name, int sentences) {
  static const char* subj[] = {"The king", "A shepherd", "Her brother", "The people", "My son"};
  static const char* verb[] = {"went up to", "spoke unto", "looked upon", "dwelt in", "came to"};
  static const char* obj[] = {"the city", "the mountain", "Jerusalem", "the river", "his house"};
  std::string t;
  for (int i = 0; i < sentences; ++i)
    t += std::string(subj[i % 5]) + " " + verb[(i * 3 + 1) % 5] + " " + obj[(i * 7 + 2) % 5] +
         " in the " + std::to_string(i + 1) + "th year, and it was good.\n";
  const std::string p = dir().file(name);
  std::ofstream(p) << t;
  return p;
}

// Sentences of text for a test that wants `full` of them (about 33 tokens,
// half a window of 64, each). Sanitizer builds (tests/unit/sanitizer_subset.h)
// take 10, 5 windows: each window runs the same code in the tool and in the
// reference, so the Release run's 15 and 20 windows add no path, only time
// (the two cases took 107 s and 75 s, a third of the ASan run, most of it in
// the CLI). What the cases check still runs there: 4 or more windows, the
// batch splits (-b 16, -b 24, -b 32), --chunks 2 below the window count,
// every tier mix.
int sentences(int full) {
  return test::sanitizer_subset() ? 10 : full;
}

struct Estimate {
  std::vector<double> running;  // [1], [2], ...
  double ppl = 0, err = 0;
};

// llama.cpp's method, computed here from the CPU backend's logits of every row.
Estimate reference(const std::string& text, int n_ctx, int chunks) {
  auto mr = open_model(model_path());
  REQUIRE(mr.has_value());
  const Model& m = **mr;
  const int V = static_cast<int>(m.config().n_vocab);
  const std::vector<int32_t> toks = m.tokenizer->encode(text, true, false);
  REQUIRE(m.tokenizer->add_bos_default());
  REQUIRE(toks.size() >= static_cast<size_t>(2 * n_ctx));
  const int n_chunk = std::min<int>(chunks, static_cast<int>(toks.size() / n_ctx));
  Estimate e;
  double sum = 0, sum2 = 0;
  size_t n = 0;
  std::vector<float> logits(static_cast<size_t>(n_ctx) * V);
  for (int c = 0; c < n_chunk; ++c) {
    CpuBackend be(m.config(), m.globals(), n_ctx, 1, KvType::F32, 2, CpuAct::F32);
    Batch b;
    for (int p = 0; p < n_ctx; ++p)
      b.add(p == 0 ? m.tokenizer->bos() : toks[c * n_ctx + p], p, 0, true);
    REQUIRE(forward_resident(m, be, b, logits.data()).ok());
    for (int p = n_ctx / 2; p < n_ctx - 1; ++p) {
      const float* l = logits.data() + static_cast<size_t>(p) * V;
      double mx = l[0];
      for (int j = 1; j < V; ++j) mx = std::max(mx, static_cast<double>(l[j]));
      double z = 0;
      for (int j = 0; j < V; ++j) z += std::exp(l[j] - mx);
      const double nll = mx + std::log(z) - l[toks[c * n_ctx + p + 1]];
      sum += nll;
      sum2 += nll * nll;
      ++n;
    }
    e.running.push_back(std::exp(sum / n));
  }
  const double mean = sum / n;
  e.ppl = std::exp(mean);
  e.err = e.ppl * std::sqrt((sum2 / n - mean * mean) / (n - 1));
  return e;
}

// The tool's stdout: `[1]a,[2]b,...` then `Final estimate: PPL = p +/- e`.
Estimate parse(const std::string& out) {
  const std::regex shape(
      R"(^(\[\d+\]\d+\.\d{4},)+\nFinal estimate: PPL = \d+\.\d{4} \+/- \d+\.\d{5}\n$)");
  REQUIRE_MESSAGE(std::regex_match(out, shape), out);
  Estimate e;
  const std::regex item(R"(\[(\d+)\](\d+\.\d{4}),)");
  int want = 1;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), item); it != std::sregex_iterator();
       ++it, ++want) {
    CHECK(std::stoi((*it)[1]) == want);
    e.running.push_back(std::stod((*it)[2]));
  }
  const size_t f = out.find("PPL = ");
  std::sscanf(out.c_str() + f, "PPL = %lf +/- %lf", &e.ppl, &e.err);
  return e;
}

void check_close(const Estimate& got, const Estimate& want) {
  REQUIRE(got.running.size() == want.running.size());
  for (size_t i = 0; i < want.running.size(); ++i) {
    CAPTURE(i);
    CHECK(std::fabs(got.running[i] - want.running[i]) <= 1e-4 * want.running[i]);
  }
  CHECK(std::fabs(got.ppl - want.ppl) <= 1e-4 * want.ppl);
  CHECK(std::fabs(got.err - want.err) <= 1e-4 * want.err + 1e-5);
}

std::string args(const std::string& text, const std::string& more) {
  return "perplexity -m " + model_path() + " -f " + text + " -c " + std::to_string(kCtx) +
         " --backend cpu --kv-type f32 --act f32 -t 2 " + more;
}

}  // namespace

TEST_CASE("perplexity: llama.cpp's windows and estimates, equal to an independent computation") {
  const std::string text = text_file("text.txt", sentences(40));
  const Run r = run_tool(args(text, ""));
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(r.err.find("calculating perplexity over") != std::string::npos);
  const Estimate got = parse(r.out);
  const Estimate want = reference(slurp(text), kCtx, 1 << 30);
  REQUIRE(want.running.size() >= 4);
  MESSAGE("perplexity over " << want.running.size() << " windows of " << kCtx << ": tool "
                             << got.ppl << " +/- " << got.err << ", reference " << want.ppl
                             << " +/- " << want.err);
  check_close(got, want);

  // Prompt batches of 16 (4 per window, the first two unscored) and of 24
  // (uneven: the first unscored, the second scored from its 9th row, the
  // last one short).
  // Under the sanitizers (tests/unit/sanitizer_subset.h) the uneven batch only.
  for (const std::string b : {"-b 16", "-b 24"}) {
    if (test::sanitizer_subset() && b == "-b 16") continue;
    CAPTURE(b);
    const Run rb = run_tool(args(text, b));
    REQUIRE_MESSAGE(rb.rc == 0, rb.err);
    check_close(parse(rb.out), want);
  }

  // Steps smaller than the batch (--ubatch-size, the step cap): a batch's
  // scored rows come over several callbacks, in order.
  for (const std::string b : {"--ubatch-size 8", "-b 24 --ubatch-size 10"}) {
    if (test::sanitizer_subset() && b == "--ubatch-size 8") continue;
    CAPTURE(b);
    const Run rb = run_tool(args(text, b));
    REQUIRE_MESSAGE(rb.rc == 0, rb.err);
    check_close(parse(rb.out), want);
  }

  // --chunks: the first windows only.
  const Run rc = run_tool(args(text, "--chunks 2"));
  REQUIRE_MESSAGE(rc.rc == 0, rc.err);
  check_close(parse(rc.out), reference(slurp(text), kCtx, 2));
}

TEST_CASE("perplexity: streamed tier plans give the resident run's numbers") {
  const std::string text = text_file("text-tiers.txt", sentences(30));
  const Run resident = run_tool(args(text, "--tiers A -b 32"));
  REQUIRE_MESSAGE(resident.rc == 0, resident.err);
  parse(resident.out);
  // RAM, storage, CPU-tier and resident layers mixed, and everything from storage.
  for (const std::string tiers : {"BCHA", "C"}) {
    CAPTURE(tiers);
    const Run r = run_tool(args(text, "--tiers " + tiers + " -b 32"));
    REQUIRE_MESSAGE(r.rc == 0, r.err);
    CHECK(r.out == resident.out);
  }
}

TEST_CASE("perplexity: a text shorter than two windows is an error, as in llama.cpp") {
  const std::string text = text_file("short.txt", 2);
  const Run r = run_tool(args(text, ""));
  CHECK(r.rc == 1);
  CHECK_MESSAGE(r.err.find("you need at least 128 tokens to evaluate perplexity with a context "
                           "of 64") != std::string::npos,
                r.err);
  CHECK_MESSAGE(r.err.find("short.txt tokenizes to only") != std::string::npos, r.err);
  const Run missing = run_tool(args(dir().file("nope.txt"), ""));
  CHECK(missing.rc == 1);
  CHECK(missing.err.find("nope.txt: cannot read") != std::string::npos);
}

TEST_CASE("calibrate: a cosine per layer, a skip table, the JSON beside; bad input refused") {
  const std::string text = text_file("calib.txt", 12);
  const std::string out = dir().file("calib.json");
  const Run r = run_tool("calibrate -m " + model_path() + " -f " + text + " -c 32 --chunks 3 -o " +
                         out + " -t 2");
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const nlohmann::json j = nlohmann::json::parse(slurp(out));
  CHECK(j["cosine"].size() == 4);  // the tiny preset's layers
  for (const auto& c : j["cosine"]) {
    CHECK(c.get<double>() <= 1.0 + 1e-9);
    CHECK(c.get<double>() >= -1.0 - 1e-9);
  }
  REQUIRE(j["skip"].size() == 2);  // half the layers
  // Skipping the most similar layer first: the order is by cosine.
  const int first = j["order"][0].get<int>();
  for (const auto& c : j["cosine"]) CHECK(c.get<double>() <= j["cosine"][first].get<double>());
  CHECK(j["skip"][0]["layers"].size() == 1);
  CHECK(j["skip"][0]["top1_agreement"].get<double>() <= 1.0);
  CHECK(j["skip"][1]["bytes_saved"].get<uint64_t>() > j["skip"][0]["bytes_saved"].get<uint64_t>());
  CHECK(r.out.find("perplexity") != std::string::npos);
  // Bad input: a clear error and a non-zero exit.
  const Run missing = run_tool("calibrate -m " + model_path() + " -f /nonexistent/text.txt");
  CHECK(missing.rc != 0);
  CHECK(missing.err.find("/nonexistent/text.txt") != std::string::npos);
  const Run short_text = run_tool("calibrate -m " + model_path() + " -f " + text + " -c 100000");
  CHECK(short_text.rc != 0);
  CHECK(short_text.err.find("fewer than one window") != std::string::npos);
  const Run too_many = run_tool("calibrate -m " + model_path() + " -f " + text + " --max-skip 4");
  CHECK(too_many.rc != 0);
  CHECK(too_many.err.find("--max-skip") != std::string::npos);
}
