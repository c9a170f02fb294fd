// synth -> inspect round trips for every quant type and the mixtures, the
// mixtures' per-tensor types (llama.cpp's rule), the layer map, and the
// config's errors on malformed models.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>

#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "kernels/ref/quant.h"
#include "model/layer_map.h"
#include "model/llama_config.h"
#include "model/synth.h"
#include "tests/unit/sanitizer_subset.h"

using namespace ls;
namespace fs = std::filesystem;

namespace {

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("ls_test_" + name)).string();
}

SynthOptions small_options(const std::string& quant) {
  SynthOptions o;
  o.shape = *synth_preset("tiny");
  o.shape.n_layer = 8;  // 8 layers so the mixture rule has layers of both kinds
  o.quant = *synth_quant_from_name(quant);
  o.seed = 42;
  o.threads = 2;
  o.quiet = true;
  return o;
}

// Mean and standard deviation of a tensor's dequantized values.
std::pair<double, double> moments(const GgufFile& f, const GgufTensor& t) {
  std::vector<float> row(t.shape[0]);
  const uint64_t row_bytes = ggml_row_bytes(t.type, t.shape[0]);
  double s = 0, ss = 0;
  uint64_t n = 0;
  for (uint64_t r = 0; r < t.rows(); ++r) {
    dequantize_row(t.type, f.tensor_data(t).data() + r * row_bytes, row.data(), t.shape[0]);
    for (float v : row) {
      s += v;
      ss += double(v) * v;
      ++n;
    }
  }
  const double mean = s / n;
  return {mean, std::sqrt(ss / n - mean * mean)};
}

// Writes a and b to temporary paths and opens both; they must be the same size.
struct FilePair {
  std::string path_a, path_b;
  std::shared_ptr<GgufFile> a, b;
};
FilePair write_pair(const SynthOptions& a, const SynthOptions& b, const std::string& name) {
  FilePair p{temp_path(name + "_a.gguf"), temp_path(name + "_b.gguf"), nullptr, nullptr};
  REQUIRE(synth_write(a, p.path_a).ok());
  REQUIRE(synth_write(b, p.path_b).ok());
  auto fa = GgufFile::open(p.path_a), fb = GgufFile::open(p.path_b);
  REQUIRE(fa.has_value());
  REQUIRE(fb.has_value());
  p.a = *fa;
  p.b = *fb;
  REQUIRE(p.a->file_size() == p.b->file_size());
  return p;
}

}  // namespace

TEST_CASE("synth: every quant type and mixture round-trips through the reader") {
  const char* quants[] = {"f32",  "f16",  "bf16", "q8_0", "q4_0", "q4_1",  "q5_0",  "q5_1",
                          "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "q4_k_m", "q5_k_m"};
  for (const char* q : quants) {
    // Under the sanitizers (tests/unit/sanitizer_subset.h) the single types
    // only: a mixture writes with the same quantizers (its rule has its own
    // test below, without writing).
    if (test::sanitizer_subset() && std::string(q).find("_k_m") != std::string::npos) continue;
    CAPTURE(q);
    SynthOptions o = small_options(q);
    const std::string path = temp_path(std::string("synth_") + q + ".gguf");
    Status st = synth_write(o, path);
    REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().message));
    auto f = GgufFile::open(path);
    REQUIRE_MESSAGE(f.has_value(), (f ? "" : f.error().message));
    auto m = load_llama(**f);
    REQUIRE_MESSAGE(m.has_value(), (m ? "" : m.error().message));
    CHECK(m->config.n_layer == 8);
    CHECK(m->config.n_embd == 256);
    CHECK(m->config.n_head_kv == 2);
    CHECK(m->config.has_rope_freqs);
    // Every planned tensor is there with the planned type and shape.
    const auto plan = synth_tensor_plan(o.shape, o.quant);
    REQUIRE((*f)->tensors().size() == plan.size());
    for (const SynthTensor& t : plan) {
      const GgufTensor* g = (*f)->find_tensor(t.name);
      REQUIRE(g);
      CHECK(g->type == t.type);
      CHECK(g->shape == t.shape);
    }
    // Weights have the intended scale: attn_q ~ N(0, 1/sqrt(256)).
    auto [mean, sd] = moments(**f, *(*f)->find_tensor("blk.0.attn_q.weight"));
    CHECK(std::fabs(mean) < 0.01);
    CHECK(sd == doctest::Approx(1.0 / 16).epsilon(0.15));
    // The norms are around 1.
    auto [nmean, nsd] = moments(**f, *(*f)->find_tensor("blk.0.attn_norm.weight"));
    CHECK(nmean == doctest::Approx(1.0).epsilon(0.05));
    fs::remove(path);
  }
}

TEST_CASE("synth: the same seed writes the same file, whatever the thread count") {
  SynthOptions a = small_options("q4_k_m"), b = a;
  b.threads = 1;
  const FilePair ab = write_pair(a, b, "seed");
  const std::string &pa = ab.path_a, &pb = ab.path_b;
  const GgufFile* fa = ab.a.get();
  CHECK(std::memcmp(fa->base(), ab.b->base(), fa->file_size()) == 0);
  SynthOptions c = a;
  c.seed = 43;
  const std::string pc = temp_path("seed_c.gguf");
  REQUIRE(synth_write(c, pc).ok());
  auto fc = GgufFile::open(pc);
  REQUIRE(fc.has_value());
  const GgufTensor* ta = fa->find_tensor("blk.0.attn_q.weight");
  const GgufTensor* tc = (*fc)->find_tensor("blk.0.attn_q.weight");
  CHECK(std::memcmp(fa->tensor_data(*ta).data(), (*fc)->tensor_data(*tc).data(), ta->bytes) != 0);
  for (auto& p : {pa, pb, pc}) fs::remove(p);
}

TEST_CASE("synth: --zero-layers writes the same file with the layers' matrices as holes") {
  SynthOptions a = small_options("q8_0");
  a.shape.n_layer = 2;
  SynthOptions z = a;
  z.zero_layers = true;
  const FilePair az = write_pair(a, z, "zero_layers");
  const std::string &pa = az.path_a, &pz = az.path_b;
  const GgufFile* fa = az.a.get();
  const GgufFile* fz = az.b.get();
  uint64_t layer_bytes = 0;
  int zeroed = 0, kept = 0;
  for (const GgufTensor& t : fa->tensors()) {
    const GgufTensor* u = fz->find_tensor(t.name);
    REQUIRE(u != nullptr);
    REQUIRE(u->offset == t.offset);
    REQUIRE(u->type == t.type);
    const auto da = fa->tensor_data(t), dz = fz->tensor_data(*u);
    const bool matrix = t.name.starts_with("blk.") && t.shape.size() == 2;
    if (matrix) {
      layer_bytes += t.bytes;
      ++zeroed;
      CHECK_MESSAGE(std::all_of(dz.begin(), dz.end(), [](uint8_t b) { return b == 0; }), t.name);
    } else {
      ++kept;
      CHECK_MESSAGE(std::memcmp(da.data(), dz.data(), t.bytes) == 0, t.name);
    }
  }
  CHECK(zeroed == 2 * 7);
  CHECK(kept > 2 * 2);  // the layers' norms, the embeddings, the head
  // Holes: the file takes on disk about what is not the layers' matrices
  // (file systems without holes, e.g. some overlays, store the zeros).
  struct stat st = {};
  REQUIRE(::stat(pz.c_str(), &st) == 0);
  const uint64_t on_disk = uint64_t(st.st_blocks) * 512;
  if (on_disk >= fz->file_size())
    MESSAGE("this file system stores holes as zeros: sparseness not checked");
  else
    CHECK(on_disk < fz->file_size() - layer_bytes + (1u << 20));
  for (auto& p : {pa, pz}) fs::remove(p);
}

TEST_CASE("synth: q4_k_m follows llama.cpp's mixture rule") {
  // 32 layers: use_more_bits(i, 32) is i < 4 || i >= 28 || (i - 4) % 3 == 2.
  SynthShape s = *synth_preset("tiny");
  s.n_layer = 32;
  const auto plan = synth_tensor_plan(s, *synth_quant_from_name("q4_k_m"));
  std::set<int> more;
  for (int i = 0; i < 32; ++i)
    if (i < 4 || i >= 28 || (i - 4) % 3 == 2) more.insert(i);
  for (const SynthTensor& t : plan) {
    CAPTURE(t.name);
    int layer = -1;
    std::sscanf(t.name.c_str(), "blk.%d.", &layer);
    if (t.shape.size() == 1) {
      CHECK(t.type == GgmlType::F32);
    } else if (t.name == "output.weight") {
      CHECK(t.type == GgmlType::Q6_K);
    } else if (t.name.find("attn_v") != std::string::npos ||
               t.name.find("ffn_down") != std::string::npos) {
      CHECK(t.type == (more.count(layer) ? GgmlType::Q6_K : GgmlType::Q4_K));
    } else {
      CHECK(t.type == GgmlType::Q4_K);
    }
  }
  // Tied output (the 1b preset): token_embd serves as the head and gets Q6_K.
  SynthShape tied = s;
  tied.tied = true;
  const auto plan2 = synth_tensor_plan(tied, *synth_quant_from_name("q4_k_m"));
  CHECK(plan2[0].name == "token_embd.weight");
  CHECK(plan2[0].type == GgmlType::Q6_K);
  // The 70b shape: attn_v that would be Q4_K is Q5_K.
  const auto p70 = synth_tensor_plan(*synth_preset("70b"), *synth_quant_from_name("q4_k_m"));
  for (const SynthTensor& t : p70)
    if (t.name == "blk.11.attn_v.weight") CHECK(t.type == GgmlType::Q5_K);  // (11-10)%3 != 2
}

TEST_CASE("synth: rows that are not a multiple of 256 fall back as llama.cpp does") {
  SynthShape s = *synth_preset("tiny");
  s.n_embd = 160;  // 5 heads of 32
  s.n_head = 5;
  s.n_head_kv = 5;
  s.n_ff = 416;  // 13 x 32
  const auto plan = synth_tensor_plan(s, *synth_quant_from_name("q4_k"));
  for (const SynthTensor& t : plan)
    if (t.shape.size() == 2) CHECK(t.type == GgmlType::Q5_0);
}

TEST_CASE("layer map: each layer's tensors coalesce into one contiguous range") {
  SynthOptions o = small_options("q4_k_m");
  const std::string path = temp_path("map.gguf");
  REQUIRE(synth_write(o, path).ok());
  auto f = GgufFile::open(path);
  REQUIRE(f.has_value());
  const LayerMap map = build_layer_map(**f, 8);
  REQUIRE(map.layers.size() == 8);
  uint64_t sum = map.globals.tensor_bytes;
  for (const LayerExtent& e : map.layers) {
    CAPTURE(e.layer);
    CHECK(e.tensors.size() == 9);
    CHECK(e.ranges.size() == 1);  // synth writes a layer's tensors back to back
    CHECK(e.range_bytes >= e.tensor_bytes);
    CHECK(e.range_bytes - e.tensor_bytes < 9 * (*f)->alignment());
    uint64_t t = 0;
    for (const GgufTensor* x : e.tensors) t += x->bytes;
    CHECK(t == e.tensor_bytes);
    sum += e.tensor_bytes;
  }
  CHECK(sum == map.total_tensor_bytes);
  // globals: token_embd, rope_freqs, output_norm, output.
  CHECK(map.globals.tensors.size() == 4);
  fs::remove(path);
}

TEST_CASE("model config: errors name what is wrong") {
  auto write = [](const std::string& name, auto&& fill) {
    GgufWriter w;
    fill(w);
    const std::string p = temp_path(name);
    REQUIRE(w.create(p).ok());
    std::vector<uint8_t> zeros;
    for (size_t i = 0; i < w.tensor_count(); ++i) {
      zeros.assign(w.tensor_bytes(i), 0);
      REQUIRE(w.write_tensor(i, zeros).ok());
    }
    REQUIRE(w.finish().ok());
    return p;
  };
  {
    const std::string p = write("arch.gguf", [](GgufWriter& w) {
      w.set_str("general.architecture", "gpt2");
      w.add_tensor("x", GgmlType::F32, {4});
    });
    auto m = load_llama(**GgufFile::open(p));
    REQUIRE_FALSE(m.has_value());
    CHECK(m.error().message.find("gpt2") != std::string::npos);
    fs::remove(p);
  }
  {
    const std::string p = write("novocab.gguf", [](GgufWriter& w) {
      w.set_str("general.architecture", "llama");
    });
    auto m = load_llama(**GgufFile::open(p));
    REQUIRE_FALSE(m.has_value());
    CHECK(m.error().message.find("no tensors") != std::string::npos);
    fs::remove(p);
  }
  {
    // A model whose attn_k has the wrong shape.
    SynthOptions o = small_options("f32");
    o.shape.n_layer = 1;
    const std::string good = temp_path("shape_src.gguf");
    REQUIRE(synth_write(o, good).ok());
    auto src = *GgufFile::open(good);
    const std::string p = write("shape.gguf", [&](GgufWriter& w) {
      for (const auto& [k, v] : src->metadata()) w.set(k, v);
      for (const GgufTensor& t : src->tensors()) {
        auto shape = t.shape;
        if (t.name == "blk.0.attn_k.weight") shape[1] = 64;
        w.add_tensor(t.name, t.type, shape);
      }
    });
    auto m = load_llama(**GgufFile::open(p));
    REQUIRE_FALSE(m.has_value());
    CHECK(m.error().message.find("blk.0.attn_k.weight") != std::string::npos);
    fs::remove(p);
    fs::remove(good);
  }
}
