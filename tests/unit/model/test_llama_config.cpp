// The Llama config reader's rope scaling, which must read a file as llama.cpp
// does: Llama 3 scaling is the rope_freqs.weight tensor (no key says so), the
// scaling type defaults to "linear" with llama.rope.scaling.factor as its
// factor. Files layerstream wrote before, with llama.rope.scaling.type
// "llama3", still load and compute the same logits.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "io/gguf.h"               // defines: GgufFile
#include "io/gguf_writer.h"        // defines: GgufWriter
#include "model/cpu_backend.h"     // defines: CpuBackend
#include "model/llama_config.h"    // defines: load_llama()
#include "model/model.h"           // defines: open_model()
#include "model/session.h"         // defines: Session
#include "model/synth.h"           // defines: synth_write()
#include "tests/unit/ls_binary.h"  // defines: LS_BINARY

using namespace ls;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("ls_config_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

// The tiny preset (2 layers, f32): Llama 3.1 scaling with an original context
// of 256, so that several of the 32 divisors are neither 1 nor the factor.
std::string synth_tiny(const TempDir& dir) {
  SynthOptions o;
  o.shape = *synth_preset("tiny");
  o.shape.n_layer = 2;
  o.quant = *synth_quant_from_name("f32");
  o.threads = 2;
  o.quiet = true;
  const std::string p = dir.file("new.gguf");
  const Status st = synth_write(o, p);
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().message));
  return p;
}

// A copy of `src` with its metadata edited by `edit` and the tensors for
// which `keep` is true, their bytes unchanged.
std::string rewrite(const std::string& src_path, const std::string& out_path,
                    const std::function<void(GgufWriter&)>& edit,
                    const std::function<bool(const std::string&)>& keep) {
  auto src = *GgufFile::open(src_path);
  GgufWriter w;
  for (const auto& [k, v] : src->metadata())
    if (k != "general.alignment") w.set(k, v);
  edit(w);
  std::vector<const GgufTensor*> kept;
  for (const GgufTensor& t : src->tensors()) {
    if (!keep(t.name)) continue;
    w.add_tensor(t.name, t.type, t.shape);
    kept.push_back(&t);
  }
  REQUIRE(w.create(out_path).ok());
  for (size_t i = 0; i < kept.size(); ++i)
    REQUIRE(w.write_tensor(i, src->tensor_data(*kept[i])).ok());
  REQUIRE(w.finish().ok());
  return out_path;
}

// The keys of the files layerstream's synth wrote before: llama.cpp aborts on
// the type, and would take the factor as a linear one.
void old_llama3_keys(GgufWriter& w) {
  w.set_str("llama.rope.scaling.type", "llama3");
  w.set_f32("llama.rope.scaling.factor", 8.0f);
  w.set_f32("llama.rope.scaling.low_freq_factor", 1.0f);
  w.set_f32("llama.rope.scaling.high_freq_factor", 4.0f);
  w.set_u32("llama.rope.scaling.original_context_length", 256);
}

bool all(const std::string&) {
  return true;
}
bool no_rope_freqs(const std::string& name) {
  return name != "rope_freqs.weight";
}

Expected<LlamaModelInfo> config_of(const std::string& path) {
  auto f = GgufFile::open(path);
  REQUIRE_MESSAGE(f.has_value(), (f ? "" : f.error().message));
  return load_llama(**f);
}

// The last position's logits for a 12-token prompt, on the CPU backend.
std::vector<float> logits_of(const std::string& path) {
  auto m = open_model(path);
  REQUIRE_MESSAGE(m.has_value(), (m ? "" : m.error().message));
  const uint32_t n_ctx = 32;
  CpuBackend be((*m)->config(), (*m)->globals(), n_ctx, 1, KvType::F32, 2);
  Session s(**m, be, n_ctx);
  const std::vector<int32_t> prompt = {1, 300, 7, 42, 511, 2, 300, 99, 128, 5, 260, 17};
  auto lg = s.feed(prompt);
  REQUIRE_MESSAGE(lg.has_value(), (lg ? "" : lg.error().message));
  return std::vector<float>(*lg, *lg + (*m)->config().n_vocab);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `layerstream ARGS` as the user runs it; stdout to *out, the exit code back.
int run_tool(const TempDir& dir, const std::string& args, std::string* out) {
  const std::string out_path = dir.file("stdout.txt");
  const std::string cmd =
      std::string("exec ") + LS_BINARY + " " + args + " </dev/null >" + out_path + " 2>&1";
  const int status = std::system(cmd.c_str());
  *out = slurp(out_path);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE(
    "model config: synth's Llama 3.1 scaling is rope_freqs.weight, with no rope scaling key") {
  TempDir dir;
  const std::string p = synth_tiny(dir);
  auto f = *GgufFile::open(p);
  for (const auto& kv : f->metadata()) {
    const std::string& k = kv.first;
    CAPTURE(k);
    CHECK(k.rfind("llama.rope.scaling.", 0) != 0);
    CHECK(k != "llama.rope.scale_linear");
  }
  // The parameters stay under our own names, for `export`.
  CHECK(f->find(kLlama3RopeFactorKey));
  CHECK(*f->get_int(kLlama3RopeOrigCtxKey) == 256);
  const GgufTensor* rf = f->find_tensor("rope_freqs.weight");
  REQUIRE(rf);
  CHECK(rf->type == GgmlType::F32);
  CHECK(rf->shape == std::vector<uint64_t>{32});
  // Divisors: 1 for the fastest dimension, the factor (8) for the slowest.
  float first, last;
  std::memcpy(&first, f->tensor_data(*rf).data(), 4);
  std::memcpy(&last, f->tensor_data(*rf).data() + 31 * 4, 4);
  CHECK(first == 1.0f);
  CHECK(last == 8.0f);
  auto m = load_llama(*f);
  REQUIRE(m.has_value());
  CHECK(m->config.rope_scaling == RopeScalingKind::Llama3);
  CHECK(m->config.has_rope_freqs);
  CHECK(m->config.rope_freq_scale == 1.0f);
}

TEST_CASE("model config: an old file with rope scaling type 'llama3' reads and computes the same") {
  TempDir dir;
  const std::string fresh = synth_tiny(dir);
  const std::string old = rewrite(fresh, dir.file("old.gguf"), old_llama3_keys, all);
  auto a = config_of(fresh);
  auto b = config_of(old);
  REQUIRE_MESSAGE(b.has_value(), (b ? "" : b.error().message));
  const LlamaConfig &ca = a->config, &cb = b->config;
  CHECK(cb.rope_scaling == RopeScalingKind::Llama3);
  CHECK(cb.rope_scaling == ca.rope_scaling);
  CHECK(cb.rope_freq_scale == ca.rope_freq_scale);  // the factor key is not a linear factor here
  CHECK(cb.has_rope_freqs == ca.has_rope_freqs);
  CHECK(cb.n_rot == ca.n_rot);
  CHECK(cb.rope_freq_base == ca.rope_freq_base);
  const std::vector<float> la = logits_of(fresh), lb = logits_of(old);
  REQUIRE(la.size() == lb.size());
  CHECK(std::memcmp(la.data(), lb.data(), la.size() * 4) == 0);
  // The comparison can fail: without the tensor the logits differ.
  const std::string plain = rewrite(
      fresh, dir.file("plain.gguf"), [](GgufWriter&) {}, no_rope_freqs);
  const std::vector<float> lc = logits_of(plain);
  CHECK(std::memcmp(la.data(), lc.data(), la.size() * 4) != 0);
}

TEST_CASE(
    "model config: rope scaling type 'llama3' without rope_freqs.weight names what is missing") {
  TempDir dir;
  const std::string fresh = synth_tiny(dir);
  const std::string p = rewrite(fresh, dir.file("nofreqs.gguf"), old_llama3_keys, no_rope_freqs);
  auto m = config_of(p);
  REQUIRE_FALSE(m.has_value());
  const std::string& msg = m.error().message;
  CHECK(msg.find("nofreqs.gguf") != std::string::npos);
  CHECK(msg.find("'llama3'") != std::string::npos);
  CHECK(msg.find("rope_freqs.weight") != std::string::npos);
}

TEST_CASE("model config: linear rope scaling as llama.cpp reads it") {
  TempDir dir;
  const std::string fresh = synth_tiny(dir);
  auto scaling = [&](const std::string& name, const std::function<void(GgufWriter&)>& edit) {
    return config_of(rewrite(fresh, dir.file(name), edit, no_rope_freqs));
  };
  {
    // No type: llama.cpp's default is "linear", so the factor applies.
    auto m =
        scaling("factor.gguf", [](GgufWriter& w) { w.set_f32("llama.rope.scaling.factor", 4); });
    REQUIRE(m.has_value());
    CHECK(m->config.rope_scaling == RopeScalingKind::Linear);
    CHECK(m->config.rope_freq_scale == 0.25f);
  }
  {
    auto m =
        scaling("old_name.gguf", [](GgufWriter& w) { w.set_f32("llama.rope.scale_linear", 2); });
    REQUIRE(m.has_value());
    CHECK(m->config.rope_freq_scale == 0.5f);
  }
  {
    auto m = scaling("none.gguf", [](GgufWriter& w) {
      w.set_str("llama.rope.scaling.type", "none");
      w.set_f32("llama.rope.scaling.factor", 4);
    });
    REQUIRE(m.has_value());
    CHECK(m->config.rope_scaling == RopeScalingKind::None);
    CHECK(m->config.rope_freq_scale == 1.0f);
  }
  {
    // A type with no factor: llama.cpp scales by 1.
    auto m = scaling("nofactor.gguf",
                     [](GgufWriter& w) { w.set_str("llama.rope.scaling.type", "linear"); });
    REQUIRE(m.has_value());
    CHECK(m->config.rope_scaling == RopeScalingKind::None);
  }
  {
    auto m =
        scaling("yarn.gguf", [](GgufWriter& w) { w.set_str("llama.rope.scaling.type", "yarn"); });
    REQUIRE_FALSE(m.has_value());
    CHECK(m.error().message.find("yarn.gguf") != std::string::npos);
    CHECK(m.error().message.find("'yarn' is not supported") != std::string::npos);
  }
  {
    auto m =
        scaling("small.gguf", [](GgufWriter& w) { w.set_f32("llama.rope.scaling.factor", 0.5f); });
    REQUIRE_FALSE(m.has_value());
    CHECK(m.error().message.find("llama.rope.scaling.factor") != std::string::npos);
  }
}

TEST_CASE("inspect: shows the Llama 3.1 scaling of new and old files") {
  TempDir dir;
  const std::string fresh = synth_tiny(dir);
  const std::string old = rewrite(fresh, dir.file("old.gguf"), old_llama3_keys, all);
  for (const std::string& p : {fresh, old}) {
    CAPTURE(p);
    std::string out;
    REQUIRE(run_tool(dir, "inspect " + p, &out) == 0);
    CHECK(out.find("with rope_freqs (Llama 3.1 scaling)") != std::string::npos);
    REQUIRE(run_tool(dir, "inspect --json " + p, &out) == 0);
    CHECK(out.find("\"rope_scaling\": \"llama3\"") != std::string::npos);
  }
}
