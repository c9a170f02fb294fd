// `layerstream export`, run as the user runs it (the built binary,
// LS_BINARY) on tiny synthetic models, its safetensors read back here with
// our own parser: the header (names, dtype, shapes, contiguous offsets), the
// bytes of every tensor against the GGUF, Q and K against the GGUF after
// re-applying GGUF's row permutation, a quantized tensor against
// dequantize_row, and config.json's values.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "io/gguf.h"               // defines: GgufFile
#include "kernels/ref/quant.h"     // defines: dequantize_row
#include "model/synth.h"           // defines: synth_write()
#include "tests/unit/ls_binary.h"  // defines: LS_BINARY

using namespace ls;

namespace {

namespace fs = std::filesystem;

struct ExportDir {
  fs::path path;
  ExportDir() {
    path = fs::temp_directory_path() / ("ls_export_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ExportDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `layerstream ARGS` (no shell quoting needed: our paths have no spaces
// or quotes); returns the exit code, -1 for a signal. stderr goes to *err.
int run_tool(const ExportDir& dir, const std::string& args, std::string* err) {
  const std::string err_path = dir.file("stderr.txt");
  const std::string cmd =
      std::string("exec ") + LS_BINARY + " " + args + " </dev/null >/dev/null 2>" + err_path;
  const int status = std::system(cmd.c_str());
  *err = slurp(err_path);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string synth(const ExportDir& dir, const std::string& name, const std::string& quant) {
  SynthOptions opt;
  opt.shape = *synth_preset("tiny");
  opt.shape.n_layer = 2;
  opt.quant = *synth_quant_from_name(quant);
  opt.threads = 2;
  opt.quiet = true;
  const std::string p = dir.file(name);
  const Status st = synth_write(opt, p);
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().message));
  return p;
}

struct Safetensors {
  std::string bytes;
  uint64_t header_len = 0;
  nlohmann::ordered_json header;
  const float* data(const std::string& name) const {
    const uint64_t at = header.at(name).at("data_offsets")[0].get<uint64_t>();
    return reinterpret_cast<const float*>(bytes.data() + 8 + header_len + at);
  }
};

Safetensors read_safetensors(const std::string& path) {
  Safetensors s;
  s.bytes = slurp(path);
  REQUIRE(s.bytes.size() >= 8);
  for (int k = 0; k < 8; ++k) s.header_len |= uint64_t(uint8_t(s.bytes[k])) << (8 * k);
  REQUIRE(8 + s.header_len <= s.bytes.size());
  CHECK((8 + s.header_len) % 8 == 0);  // the data starts aligned for f32 views
  s.header = nlohmann::ordered_json::parse(s.bytes.substr(8, s.header_len));
  return s;
}

std::vector<float> f32_of(const GgufFile& f, const GgufTensor& t) {
  std::vector<float> out(t.elements());
  const GgmlTypeTraits tr = ggml_traits(t.type);
  const uint64_t ne0 = t.shape[0], row_bytes = ne0 / tr.block_elems * tr.block_bytes;
  for (uint64_t r = 0; r < t.rows(); ++r)
    dequantize_row(t.type, f.tensor_data(t).data() + r * row_bytes, out.data() + r * ne0,
                   static_cast<int64_t>(ne0));
  return out;
}

const char* const kLayerNames[][2] = {
    {"attn_norm.weight", "input_layernorm.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight"},
    {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"},
    {"attn_output.weight", "self_attn.o_proj.weight"},
    {"ffn_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},
    {"ffn_down.weight", "mlp.down_proj.weight"},
};

}  // namespace

TEST_CASE("export: f32 safetensors under HF names, Q/K rows un-permuted, config.json") {
  ExportDir dir;
  const std::string gguf = synth(dir, "tiny-f32.gguf", "f32");
  std::string err;
  const std::string st_path = dir.file("model.safetensors"), cfg_path = dir.file("config.json");
  REQUIRE_MESSAGE(
      run_tool(dir, "export -m " + gguf + " --safetensors " + st_path + " --config " + cfg_path,
               &err) == 0,
      err);
  auto file = GgufFile::open(gguf);
  REQUIRE(file);
  const GgufFile& f = **file;
  const Safetensors st = read_safetensors(st_path);

  // Every GGUF tensor but rope_freqs under its HF name, in file order, with
  // HF's [out, in] shape (GGUF's reversed) and contiguous offsets.
  std::vector<std::pair<std::string, std::string>> names = {
      {"token_embd.weight", "model.embed_tokens.weight"}};
  for (int l = 0; l < 2; ++l)
    for (auto& n : kLayerNames)
      names.push_back({"blk." + std::to_string(l) + "." + n[0],
                       "model.layers." + std::to_string(l) + "." + n[1]});
  names.push_back({"output_norm.weight", "model.norm.weight"});
  names.push_back({"output.weight", "lm_head.weight"});
  CHECK(st.header.size() == names.size() + 1);  // + __metadata__
  CHECK(st.header.contains("__metadata__"));
  uint64_t at = 0;
  for (const auto& name : names) {
    const std::string &gg = name.first, &hf = name.second;
    INFO(hf);
    REQUIRE(st.header.contains(hf));
    const GgufTensor* t = f.find_tensor(gg);
    REQUIRE(t);
    const auto& e = st.header.at(hf);
    CHECK(e.at("dtype") == "F32");
    std::vector<uint64_t> shape(t->shape.rbegin(), t->shape.rend());
    CHECK(e.at("shape").get<std::vector<uint64_t>>() == shape);
    CHECK(e.at("data_offsets")[0].get<uint64_t>() == at);
    at += t->elements() * 4;
    CHECK(e.at("data_offsets")[1].get<uint64_t>() == at);
  }
  CHECK(8 + st.header_len + at == st.bytes.size());

  // Bytes: the same as the GGUF's, but for Q and K, whose rows within each
  // head of d = 64 go back to GGUF's order under gguf[h*d + 2i + j] =
  // hf[h*d + j*d/2 + i].
  const uint64_t d = 64;
  for (const auto& name : names) {
    const std::string &gg = name.first, &hf = name.second;
    INFO(hf);
    const GgufTensor& t = *f.find_tensor(gg);
    const float* got = st.data(hf);
    const auto* want = reinterpret_cast<const float*>(f.tensor_data(t).data());
    const bool qk = gg.ends_with("attn_q.weight") || gg.ends_with("attn_k.weight");
    if (!qk) {
      CHECK(std::memcmp(got, want, t.bytes) == 0);
      continue;
    }
    const uint64_t ne0 = t.shape[0], rows = t.rows();
    REQUIRE(rows % d == 0);
    CHECK(std::memcmp(got, want, t.bytes) != 0);  // the permutation is not the identity
    std::vector<float> back(t.elements());
    for (uint64_t h = 0; h < rows / d; ++h)
      for (uint64_t i = 0; i < d / 2; ++i)
        for (uint64_t j = 0; j < 2; ++j)
          std::memcpy(&back[(h * d + 2 * i + j) * ne0], got + (h * d + j * d / 2 + i) * ne0,
                      ne0 * 4);
    CHECK(std::memcmp(back.data(), want, t.bytes) == 0);
  }

  // config.json: the tiny preset's shape and its Llama 3.1 rope scaling.
  const auto cfg = nlohmann::json::parse(slurp(cfg_path));
  CHECK(cfg.at("hidden_size") == 256);
  CHECK(cfg.at("intermediate_size") == 768);
  CHECK(cfg.at("num_attention_heads") == 4);
  CHECK(cfg.at("num_key_value_heads") == 2);
  CHECK(cfg.at("num_hidden_layers") == 2);
  CHECK(cfg.at("vocab_size") == 512);
  CHECK(cfg.at("rms_norm_eps").get<double>() == 1e-5);
  CHECK(cfg.at("rope_theta").get<double>() == 500000.0);
  CHECK(cfg.at("tie_word_embeddings") == false);
  const auto& rs = cfg.at("rope_scaling");
  CHECK(rs.at("rope_type") == "llama3");
  CHECK(rs.at("factor").get<double>() == 8.0);
  CHECK(rs.at("low_freq_factor").get<double>() == 1.0);
  CHECK(rs.at("high_freq_factor").get<double>() == 4.0);
  CHECK(rs.at("original_max_position_embeddings") == 256);
  CHECK(cfg.at("rope_parameters").at("rope_theta").get<double>() == 500000.0);
}

TEST_CASE("export: a quantized model is dequantized as dequantize_row does") {
  ExportDir dir;
  const std::string gguf = synth(dir, "tiny-q8_0.gguf", "q8_0");
  std::string err;
  const std::string st_path = dir.file("model.safetensors");
  REQUIRE_MESSAGE(run_tool(dir, "export -m " + gguf + " --safetensors " + st_path, &err) == 0, err);
  auto file = GgufFile::open(gguf);
  REQUIRE(file);
  const GgufTensor* t = (*file)->find_tensor("blk.1.ffn_down.weight");
  REQUIRE(t);
  REQUIRE(t->type == GgmlType::Q8_0);
  const Safetensors st = read_safetensors(st_path);
  const std::vector<float> want = f32_of(**file, *t);
  CHECK(std::memcmp(st.data("model.layers.1.mlp.down_proj.weight"), want.data(), want.size() * 4) ==
        0);
  CHECK_FALSE(fs::exists(dir.file("config.json")));
}

TEST_CASE("export: bad input exits non-zero with a message naming the file") {
  ExportDir dir;
  std::string err;
  const std::string missing = dir.file("no-such.gguf");
  CHECK(run_tool(dir, "export -m " + missing + " --safetensors " + dir.file("x.safetensors"),
                 &err) == 1);
  CHECK(err.find("no-such.gguf") != std::string::npos);
  // Rope parameters that do not reproduce rope_freqs.weight are refused.
  SynthOptions opt;
  opt.shape = *synth_preset("tiny");
  opt.shape.n_layer = 1;
  opt.quant = *synth_quant_from_name("f32");
  opt.quiet = true;
  const std::string gguf = dir.file("tiny.gguf");
  REQUIRE(synth_write(opt, gguf).ok());
  // Patch the written original_context_length (256 -> 512) in place: same size.
  std::string bytes = slurp(gguf);
  const std::string key = kLlama3RopeOrigCtxKey;
  const size_t k = bytes.find(key);
  REQUIRE(k != std::string::npos);
  const size_t v = k + key.size() + 4;  // the u32 type tag, then the value
  uint32_t orig;
  std::memcpy(&orig, &bytes[v], 4);
  REQUIRE(orig == 256);
  orig = 512;
  std::memcpy(&bytes[v], &orig, 4);
  std::ofstream(gguf, std::ios::binary) << bytes;
  CHECK(run_tool(dir, "export -m " + gguf + " --safetensors " + dir.file("y.safetensors"), &err) ==
        1);
  CHECK(err.find("rope_freqs.weight") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.file("y.safetensors")));
}
