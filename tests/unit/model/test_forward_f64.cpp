// Acceptance test of the CPU decode path: an independent float64 Llama
// forward, written from the math (not from model/cpu_backend.cpp or
// kernels/ref/ops.cpp), checks the logits of our float32 CpuBackend on tiny
// synthetic F32 models — for the prompt as one batch and token by token.
//
// Metric, per compared position: max_j |ours_j - ref_j| / max_j |ref_j| over
// the n_vocab logits j; the test reports the worst position and requires it
// to be at most 1e-5. The reference reads the GGUF's metadata and F32 tensor
// bytes itself, so a shared misreading of the file is the only way both can
// be wrong together.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "io/gguf.h"            // defines: GgufFile, GgufTensor
#include "model/cpu_backend.h"  // defines: CpuBackend
#include "model/model.h"        // defines: Model, open_model()
#include "model/session.h"      // defines: Session
#include "model/synth.h"        // defines: SynthOptions, synth_preset(), synth_write()
#include "tests/unit/model/ref_llama_f64.h"  // defines: RefModel, ref_forward(), rel_err()

using namespace ls;

namespace {

constexpr double kTolerance = 1e-5;  // max |ours - ref| / max |ref|, per position

// The reference model and forward: tests/unit/model/ref_llama_f64.h.
using namespace ls::test;

double meta_number(const GgufFile& f, const std::string& key, double fallback) {
  const GgufValue* v = f.find(key);
  return v ? v->as_double() : fallback;
}

// An F32 tensor of exactly `shape` (ne[0] first), widened to double.
std::vector<double> read_f32(const GgufFile& f, const std::string& name,
                             const std::vector<uint64_t>& shape) {
  const GgufTensor* t = f.find_tensor(name);
  REQUIRE_MESSAGE(t != nullptr, name);
  REQUIRE_MESSAGE(t->type == GgmlType::F32, name);
  REQUIRE_MESSAGE(t->shape == shape, name);
  size_t n = 1;
  for (uint64_t d : shape) n *= d;
  const std::span<const uint8_t> bytes = f.tensor_data(*t);
  REQUIRE(bytes.size() == n * sizeof(float));
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) {
    float x;
    std::memcpy(&x, bytes.data() + i * sizeof(float), sizeof x);  // the file is little-endian
    out[i] = x;
  }
  return out;
}

RefModel load_ref(const std::string& path) {
  auto fr = GgufFile::open(path);
  REQUIRE_MESSAGE(fr.has_value(), (fr ? "" : fr.error().message));
  const GgufFile& f = **fr;
  REQUIRE(*f.get_string("general.architecture") == "llama");
  RefModel m;
  m.n_layer = static_cast<size_t>(*f.get_int("llama.block_count"));
  m.n_embd = static_cast<size_t>(*f.get_int("llama.embedding_length"));
  m.n_ff = static_cast<size_t>(*f.get_int("llama.feed_forward_length"));
  m.n_head = static_cast<size_t>(*f.get_int("llama.attention.head_count"));
  m.n_head_kv = static_cast<size_t>(meta_number(f, "llama.attention.head_count_kv", m.n_head));
  m.head_dim = m.n_embd / m.n_head;
  m.n_rot = static_cast<size_t>(meta_number(f, "llama.rope.dimension_count", m.head_dim));
  m.eps = *f.get_float("llama.attention.layer_norm_rms_epsilon");
  m.rope_base = meta_number(f, "llama.rope.freq_base", 10000.0);
  if (f.find("llama.rope.scaling.type") && *f.get_string("llama.rope.scaling.type") == "linear")
    m.pos_scale = 1.0 / *f.get_float("llama.rope.scaling.factor");
  const GgufTensor* emb = f.find_tensor("token_embd.weight");
  REQUIRE(emb != nullptr);
  REQUIRE(emb->shape.size() == 2);
  m.n_vocab = emb->shape[1];

  const uint64_t e = m.n_embd, q = m.n_head * m.head_dim, kv = m.n_head_kv * m.head_dim;
  m.token_embd = read_f32(f, "token_embd.weight", {e, m.n_vocab});
  m.output_norm = read_f32(f, "output_norm.weight", {e});
  m.output =
      f.find_tensor("output.weight") ? read_f32(f, "output.weight", {e, m.n_vocab}) : m.token_embd;
  m.rope_freqs = f.find_tensor("rope_freqs.weight")
                     ? read_f32(f, "rope_freqs.weight", {m.n_rot / 2})
                     : std::vector<double>(m.n_rot / 2, 1.0);
  for (size_t l = 0; l < m.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    RefLayer L;
    L.attn_norm = read_f32(f, p + "attn_norm.weight", {e});
    L.wq = read_f32(f, p + "attn_q.weight", {e, q});
    L.wk = read_f32(f, p + "attn_k.weight", {e, kv});
    L.wv = read_f32(f, p + "attn_v.weight", {e, kv});
    L.wo = read_f32(f, p + "attn_output.weight", {q, e});
    L.ffn_norm = read_f32(f, p + "ffn_norm.weight", {e});
    L.w_gate = read_f32(f, p + "ffn_gate.weight", {e, m.n_ff});
    L.w_up = read_f32(f, p + "ffn_up.weight", {e, m.n_ff});
    L.w_down = read_f32(f, p + "ffn_down.weight", {m.n_ff, e});
    m.layers.push_back(std::move(L));
  }
  return m;
}

// A temporary directory, removed with everything in it.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& tag) {
    path =
        std::filesystem::temp_directory_path() / ("ls_" + tag + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

std::string write_model(const TempDir& dir, const SynthShape& shape, uint64_t seed) {
  SynthOptions opt;
  opt.shape = shape;
  opt.quant = *synth_quant_from_name("f32");
  opt.seed = seed;
  opt.threads = 2;
  opt.quiet = true;
  const std::string path = dir.file(shape.name + ".gguf");
  const Status st = synth_write(opt, path);
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().message));
  return path;
}

// A prompt of n token ids spread over the vocabulary, with repeats (a
// repeated token at two positions differs only through rope and attention).
std::vector<int32_t> test_tokens(size_t n, size_t n_vocab) {
  std::vector<int32_t> t;
  uint64_t x = 12345;
  for (size_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    t.push_back(static_cast<int32_t>((x >> 33) % n_vocab));
  }
  t[n / 2] = t[1];
  return t;
}

struct Errors {
  double batch_last = 0;  // the prompt as one batch: its last position
  double per_token = 0;   // one token at a time: the worst position
};

// Ours against the reference on `path`: the whole prompt as one batch, then
// the same tokens one at a time in a second session.
Errors compare(const std::string& path, const std::vector<int32_t>& tokens,
               const std::vector<std::vector<double>>& ref) {
  auto mr = open_model(path);
  REQUIRE_MESSAGE(mr.has_value(), (mr ? "" : mr.error().message));
  const Model& m = **mr;
  const uint32_t n_ctx = 64;
  Errors err;
  {
    CpuBackend be(m.config(), m.globals(), n_ctx, 1, KvType::F32, 2);
    Session s(m, be, n_ctx);
    auto lg = s.feed(tokens);
    REQUIRE_MESSAGE(lg.has_value(), (lg ? "" : lg.error().message));
    err.batch_last = rel_err(*lg, ref.back());
  }
  {
    CpuBackend be(m.config(), m.globals(), n_ctx, 1, KvType::F32, 2);
    Session s(m, be, n_ctx);
    for (size_t t = 0; t < tokens.size(); ++t) {
      auto lg = s.feed(std::span<const int32_t>(&tokens[t], 1));
      REQUIRE_MESSAGE(lg.has_value(), (lg ? "" : lg.error().message));
      const double e = rel_err(*lg, ref[t]);
      INFO("position " << t);
      CHECK(e <= kTolerance);
      err.per_token = std::max(err.per_token, e);
    }
  }
  return err;
}

void check_model(const std::string& label, const SynthShape& shape, uint64_t seed) {
  TempDir dir("fwd");
  const std::string path = write_model(dir, shape, seed);
  const RefModel ref = load_ref(path);
  const std::vector<int32_t> tokens = test_tokens(16, ref.n_vocab);
  const auto logits = ref_forward(ref, tokens);
  const Errors e = compare(path, tokens, logits);
  MESSAGE(label << ": max |ours - ref| / max |ref| = " << e.batch_last
                << " (16-token batch, last position), " << e.per_token
                << " (token by token, worst of 16 positions); tolerance " << kTolerance);
  CHECK(e.batch_last <= kTolerance);
  CHECK(e.per_token <= kTolerance);
}

}  // namespace

TEST_CASE("forward: tiny preset (GQA, Llama 3.1 rope_freqs) matches the float64 reference") {
  const SynthShape s = *synth_preset("tiny");
  REQUIRE(s.llama31_rope);
  REQUIRE(s.n_head_kv < s.n_head);
  check_model("tiny", s, 1);
}

TEST_CASE("forward: custom shape without rope_freqs (n_rot = head_dim, GQA group 3)") {
  SynthShape s = *synth_preset("tiny");
  s.name = "norope31";
  s.llama31_rope = false;
  s.n_layer = 3;
  s.n_embd = 192;  // head_dim 32
  s.n_head = 6;
  s.n_head_kv = 2;
  s.n_ff = 320;
  s.rope_base = 10000.0f;
  check_model("custom, no rope_freqs", s, 2);
}

TEST_CASE("forward: tied output head (no output.weight) matches the float64 reference") {
  SynthShape s = *synth_preset("tiny");
  s.name = "tied";
  s.tied = true;
  TempDir dir("fwd_tied");
  const std::string path = write_model(dir, s, 3);
  {
    auto f = GgufFile::open(path);
    REQUIRE(f.has_value());
    REQUIRE((*f)->find_tensor("output.weight") == nullptr);  // the case under test
  }
  const RefModel ref = load_ref(path);
  const std::vector<int32_t> tokens = test_tokens(16, ref.n_vocab);
  const Errors e = compare(path, tokens, ref_forward(ref, tokens));
  MESSAGE("tied: max |ours - ref| / max |ref| = " << e.batch_last << " (batch, last), "
                                                  << e.per_token << " (token by token, worst)");
  CHECK(e.batch_last <= kTolerance);
  CHECK(e.per_token <= kTolerance);
}

// The comparison can fail: one changed weight, or a reference with a common
// Llama mistake, moves the logits far beyond the tolerance. (If the metric or
// the reference were blind to these, the cases above would prove nothing.)
TEST_CASE("forward: the reference comparison detects a perturbed weight and wrong conventions") {
  TempDir dir("fwd_neg");
  const std::string path = write_model(dir, *synth_preset("tiny"), 1);
  const RefModel ref = load_ref(path);
  const std::vector<int32_t> tokens = test_tokens(16, ref.n_vocab);
  const auto good = ref_forward(ref, tokens);

  auto worst = [&](const std::vector<std::vector<double>>& other) {
    double w = 0;
    for (size_t t = 0; t < good.size(); ++t) w = std::max(w, rel_err(other[t].data(), good[t]));
    return w;
  };

  RefModel bad = ref;  // a copy: one weight of layer 2's key projection
  bad.layers[2].wk[7 * bad.n_embd + 3] += 0.05;
  const double d_weight = worst(ref_forward(bad, tokens));
  RefVariant neox;
  neox.neox_rope = true;
  const double d_neox = worst(ref_forward(ref, tokens, neox));
  RefVariant modulo;
  modulo.gqa_modulo = true;
  const double d_gqa = worst(ref_forward(ref, tokens, modulo));
  RefVariant nofreq;
  nofreq.no_rope_freqs = true;
  const double d_freqs = worst(ref_forward(ref, tokens, nofreq));
  MESSAGE("sensitivity (worst position): one weight +0.05: "
          << d_weight << ", NeoX rope: " << d_neox << ", GQA h % n_kv: " << d_gqa
          << ", rope_freqs ignored: " << d_freqs);
  CHECK(d_weight > 10 * kTolerance);
  CHECK(d_neox > 10 * kTolerance);
  CHECK(d_gqa > 10 * kTolerance);
  CHECK(d_freqs > 10 * kTolerance);
}
