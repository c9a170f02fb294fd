// Small Hugging Face Llama checkpoints, written by the tests' own code (not
// the project's): a safetensors writer, HF's tensor names, Q/K rows put in
// HF's order by the reshape llama.cpp's converter undoes, F32/F16/BF16
// values, one or more shards with model.safetensors.index.json, config.json,
// and a tokenizer.json (with tokenizer_config.json) of a GGUF's vocabulary,
// as the `tokenizers` library writes a Llama 3 tokenizer. The checkpoints are
// a synth model's weights taken apart, so a conversion can be compared with
// the model it came from. Used by test_convert.cpp and test_convert_errors.cpp.
// defines: Dir, slurp(), run_tool(), source_shape(), synth_f32(), f32_data(), hf_name(),
//          hf_rows_of_gguf(), HfTensor, store(), make_hf_tensor(), write_safetensors(),
//          write_tokenizer(), hf_config(), Checkpoint, make_checkpoint()
#pragma once

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "io/gguf.h"               // defines: GgufFile
#include "kernels/half.h"          // defines: fp32_to_fp16, fp16_to_fp32
#include "model/synth.h"           // defines: SynthShape, synth_write()
#include "tests/unit/ls_binary.h"  // defines: LS_BINARY

namespace ls::test {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

// A folder under the working directory, removed with everything in it.
struct Dir {
  fs::path path;
  explicit Dir(const std::string& tag) {
    path = fs::current_path() / ("ls_test_convert_" + tag + "_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `layerstream ARGS`; returns the exit code (-1 for a signal), stderr in *err.
inline int run_tool(const Dir& dir, const std::string& args, std::string* err) {
  const std::string err_path = dir.file("stderr.txt");
  const std::string cmd =
      std::string("exec ") + LS_BINARY + " " + args + " </dev/null >/dev/null 2>" + err_path;
  const int status = std::system(cmd.c_str());
  *err = slurp(err_path);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// ---- The source model -----------------------------------------------------------------

inline SynthShape source_shape(bool tied) {
  SynthShape s = *synth_preset("tiny");  // 256 wide, 4 heads of 64, 2 kv heads, llama3 rope
  s.name = tied ? "tied" : "untied";
  s.n_layer = 2;
  s.tied = tied;
  return s;
}

inline std::string synth_f32(const Dir& dir, const SynthShape& s, uint64_t seed) {
  SynthOptions opt;
  opt.shape = s;
  opt.quant = *synth_quant_from_name("f32");
  opt.seed = seed;
  opt.threads = 2;
  opt.quiet = true;
  const std::string p = dir.file("source-" + s.name + ".gguf");
  const Status st = synth_write(opt, p);
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().message));
  return p;
}

inline std::vector<float> f32_data(const GgufFile& f, const GgufTensor& t) {
  REQUIRE(t.type == GgmlType::F32);
  std::vector<float> v(t.elements());
  std::memcpy(v.data(), f.tensor_data(t).data(), t.bytes);
  return v;
}

// ---- HF's layout, written here ---------------------------------------------------------

inline const char* const kLayerNames[][2] = {
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

inline std::string hf_name(const std::string& gguf) {
  if (gguf == "token_embd.weight") return "model.embed_tokens.weight";
  if (gguf == "output_norm.weight") return "model.norm.weight";
  if (gguf == "output.weight") return "lm_head.weight";
  for (int l = 0; l < 2; ++l)
    for (auto& n : kLayerNames)
      if (gguf == "blk." + std::to_string(l) + "." + n[0])
        return "model.layers." + std::to_string(l) + "." + n[1];
  FAIL("no HF name for " << gguf);
  return "";
}

// GGUF rows -> HF rows. llama.cpp's converter makes GGUF's Q/K from HF's by
// viewing the (rows, n_in) weight as (heads, 2, d/2, n_in) and swapping axes
// 1 and 2 into (heads, d/2, 2, n_in): gguf[h][i][j] = hf[h][j][i]. So HF's
// element at (h, j, i) is GGUF's at (h, i, j).
inline std::vector<float> hf_rows_of_gguf(const std::vector<float>& g, uint64_t heads,
                                          uint64_t n_in) {
  const uint64_t d = g.size() / n_in / heads;
  std::vector<float> hf(g.size());
  for (uint64_t h = 0; h < heads; ++h)
    for (uint64_t j = 0; j < 2; ++j)
      for (uint64_t i = 0; i < d / 2; ++i)
        for (uint64_t x = 0; x < n_in; ++x)
          hf[((h * 2 + j) * (d / 2) + i) * n_in + x] = g[((h * (d / 2) + i) * 2 + j) * n_in + x];
  return hf;
}

// One HF tensor: its values (as stored, widened back to float) and its bytes.
struct HfTensor {
  std::string name, dtype;
  std::vector<uint64_t> shape;
  std::vector<float> values;
  std::vector<uint8_t> bytes;
};

// x stored as dtype: its bits (little-endian) and the value read back.
inline float store(const std::string& dtype, float x, std::vector<uint8_t>* bytes) {
  if (dtype == "F32") {
    const auto* b = reinterpret_cast<const uint8_t*>(&x);
    if (bytes) bytes->insert(bytes->end(), b, b + 4);
    return x;
  }
  const uint16_t h = dtype == "F16" ? fp32_to_fp16(x) : fp32_to_bf16(x);
  if (bytes) {
    bytes->push_back(static_cast<uint8_t>(h));
    bytes->push_back(static_cast<uint8_t>(h >> 8));
  }
  if (dtype == "F16") return fp16_to_fp32(h);
  const uint32_t wide = static_cast<uint32_t>(h) << 16;  // bf16 is f32's top half
  float bf;
  std::memcpy(&bf, &wide, 4);
  return bf;
}

inline HfTensor make_hf_tensor(const std::string& name, const std::string& dtype,
                               std::vector<uint64_t> shape, const std::vector<float>& v) {
  HfTensor t{name, dtype, std::move(shape), {}, {}};
  for (float x : v) t.values.push_back(store(dtype, x, &t.bytes));
  return t;
}

// This file's safetensors writer; `edit` may change the header before it is written.
inline void write_safetensors(const std::string& path, const std::vector<const HfTensor*>& ts,
                              const std::function<void(json&)>& edit = {}) {
  json h;
  h["__metadata__"] = {{"format", "pt"}};
  uint64_t at = 0;
  for (const HfTensor* t : ts) {
    h[t->name] = {
        {"dtype", t->dtype}, {"shape", t->shape}, {"data_offsets", {at, at + t->bytes.size()}}};
    at += t->bytes.size();
  }
  if (edit) edit(h);
  std::string head = h.dump();
  head.append((8 - head.size() % 8) % 8, ' ');
  std::ofstream out(path, std::ios::binary);
  for (int k = 0; k < 8; ++k)
    out.put(static_cast<char>(static_cast<uint64_t>(head.size()) >> (8 * k)));
  out << head;
  for (const HfTensor* t : ts)
    out.write(reinterpret_cast<const char*>(t->bytes.data()),
              static_cast<std::streamsize>(t->bytes.size()));
}

inline constexpr const char* kLlama3Regex =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

// tokenizer.json (and tokenizer_config.json) of a GGUF's vocabulary, as the
// `tokenizers` library writes a Llama 3 tokenizer.
inline void write_tokenizer(const std::string& dir, const GgufFile& f, bool pair_merges) {
  const GgufArray& toks = **f.get_array("tokenizer.ggml.tokens");
  const GgufArray& types = **f.get_array("tokenizer.ggml.token_type");
  const GgufArray& merges = **f.get_array("tokenizer.ggml.merges");
  json vocab = json::object(), added = json::array(), mj = json::array();
  for (uint64_t i = 0; i < toks.count; ++i) {
    if (types.integer(i) == 3)
      added.push_back({{"id", i},
                       {"content", toks.strings[i]},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", false},
                       {"special", true}});
    else
      vocab[toks.strings[i]] = i;
  }
  for (const std::string& m : merges.strings) {
    if (!pair_merges) {
      mj.push_back(m);
    } else {
      const size_t sp = m.find(' ', 1);
      mj.push_back({m.substr(0, sp), m.substr(sp + 1)});
    }
  }
  const std::string bos = toks.strings[*f.get_int("tokenizer.ggml.bos_token_id")];
  json tok = {{"version", "1.0"},
              {"truncation", nullptr},
              {"padding", nullptr},
              {"added_tokens", added},
              {"normalizer", nullptr},
              {"pre_tokenizer",
               {{"type", "Sequence"},
                {"pretokenizers",
                 {{{"type", "Split"},
                   {"pattern", {{"Regex", kLlama3Regex}}},
                   {"behavior", "Isolated"},
                   {"invert", false}},
                  {{"type", "ByteLevel"},
                   {"add_prefix_space", false},
                   {"trim_offsets", true},
                   {"use_regex", false}}}}}},
              {"post_processor",
               {{"type", "TemplateProcessing"},
                {"single",
                 {{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}},
                  {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}}}},
              {"decoder", {{"type", "ByteLevel"}}},
              {"model",
               {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"byte_fallback", false},
                {"ignore_merges", true},
                {"vocab", vocab},
                {"merges", mj}}}};
  std::ofstream(dir + "/tokenizer.json") << tok.dump(1);
  json cfg = {
      {"bos_token", bos},
      {"eos_token", toks.strings[*f.get_int("tokenizer.ggml.eos_token_id")]},
      {"chat_template", "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}"}};
  std::ofstream(dir + "/tokenizer_config.json") << cfg.dump(1);
}

inline json hf_config(const SynthShape& s, const GgufFile& f) {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"hidden_size", s.n_embd},
          {"intermediate_size", s.n_ff},
          {"num_attention_heads", s.n_head},
          {"num_key_value_heads", s.n_head_kv},
          {"num_hidden_layers", s.n_layer},
          {"vocab_size", s.n_vocab},
          {"max_position_embeddings", s.n_ctx},
          {"rms_norm_eps", 1e-5},
          {"rope_theta", s.rope_base},
          {"rope_scaling",
           {{"rope_type", "llama3"},
            {"factor", s.rope_factor},
            {"low_freq_factor", s.rope_low},
            {"high_freq_factor", s.rope_high},
            {"original_max_position_embeddings", s.rope_orig_ctx}}},
          {"hidden_act", "silu"},
          {"attention_bias", false},
          {"mlp_bias", false},
          {"tie_word_embeddings", s.tied},
          {"bos_token_id", *f.get_int("tokenizer.ggml.bos_token_id")},
          {"eos_token_id", *f.get_int("tokenizer.ggml.eos_token_id")},
          {"torch_dtype", "float32"}};
}

// A checkpoint: the source model's tensors in HF's layout as `dtype`.
struct Checkpoint {
  std::string dir;
  std::vector<HfTensor> tensors;  // in GGUF order, rope_freqs left out
  const HfTensor& at(const std::string& name) const {
    for (const HfTensor& t : tensors)
      if (t.name == name) return t;
    FAIL("no tensor " << name);
    return tensors[0];
  }
};

inline Checkpoint make_checkpoint(const std::string& dir, const SynthShape& s, const GgufFile& f,
                                  const std::string& dtype, int shards, bool pair_merges = false) {
  fs::create_directories(dir);
  Checkpoint ck;
  ck.dir = dir;
  for (const GgufTensor& t : f.tensors()) {
    if (t.name == "rope_freqs.weight") continue;
    std::vector<float> v = f32_data(f, t);
    if (t.name.ends_with("attn_q.weight")) v = hf_rows_of_gguf(v, s.n_head, t.shape[0]);
    if (t.name.ends_with("attn_k.weight")) v = hf_rows_of_gguf(v, s.n_head_kv, t.shape[0]);
    ck.tensors.push_back(
        make_hf_tensor(hf_name(t.name), dtype, {t.shape.rbegin(), t.shape.rend()}, v));
  }
  if (shards == 1) {
    std::vector<const HfTensor*> all;
    for (const HfTensor& t : ck.tensors) all.push_back(&t);
    write_safetensors(dir + "/model.safetensors", all);
  } else {
    json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", json::object()}};
    for (int k = 0; k < shards; ++k) {
      char name[64];
      std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", k + 1, shards);
      std::vector<const HfTensor*> part;
      for (size_t i = k; i < ck.tensors.size(); i += shards) {
        part.push_back(&ck.tensors[i]);
        index["weight_map"][ck.tensors[i].name] = name;
      }
      write_safetensors(dir + "/" + name, part);
    }
    std::ofstream(dir + "/model.safetensors.index.json") << index.dump(1);
  }
  std::ofstream(dir + "/config.json") << hf_config(s, f).dump(1);
  write_tokenizer(dir, f, pair_merges);
  return ck;
}

}  // namespace ls::test
