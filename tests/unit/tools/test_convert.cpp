// `layerstream convert`, run as the user runs it (the built binary,
// LS_BINARY), on small Hugging Face Llama checkpoints written here: a synth
// model's weights (2 layers, GQA, Llama 3.1 rope scaling) taken apart into
// HF's layout by this file's own code — its own safetensors writer, its own
// HF names, Q/K rows put in HF's order by the reshape llama.cpp's converter
// undoes, written out as F32, F16 or BF16, in one or two shards — with a
// config.json and a tokenizer.json of the synth model's vocabulary.
//
// What the cases prove:
//  - every converted tensor equals the synth model's (bit for bit from F32;
//    from F16/BF16, the synth value rounded to that type), so convert's
//    Q/K permutation is the inverse of the reshape written here; rope_freqs
//    equals HF's llama3 frequencies computed here; tied embeddings leave no
//    output.weight; the tokenizer is the synth one again;
//  - the converted model's logits (the CPU backend) equal an independent
//    float64 forward run on the HF tensors with HF's own rope convention
//    (rotate_half: RefVariant::neox_rope), to the 1e-5 of the forward test,
//    and bit for bit the synth model's logits: the permutation is right;
//  - quantized outputs get synth's per-tensor types and quantize_row's bytes;
//  - export then convert gives the synth model back;
//  - each bad input is exit 1, a message naming the file and the problem,
//    and nothing left in the output folder.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "io/gguf.h"                         // defines: GgufFile
#include "kernels/half.h"                    // defines: fp32_to_fp16, fp16_to_fp32
#include "kernels/ref/quant.h"               // defines: quantize_row
#include "model/cpu_backend.h"               // defines: CpuBackend
#include "model/model.h"                     // defines: open_model()
#include "model/session.h"                   // defines: Session
#include "model/synth.h"                     // defines: synth_write(), synth_tensor_plan()
#include "model/tokenizer.h"                 // defines: Tokenizer
#include "tests/unit/model/ref_llama_f64.h"  // defines: RefModel, ref_forward(), rel_err()

using namespace ls;
using namespace ls::test;

namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

constexpr double kTolerance = 1e-5;  // as tests/unit/model/test_forward_f64.cpp

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

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `layerstream ARGS`; returns the exit code (-1 for a signal), stderr in *err.
int run_tool(const Dir& dir, const std::string& args, std::string* err) {
  const std::string err_path = dir.file("stderr.txt");
  const std::string cmd =
      std::string("exec ") + LS_BINARY + " " + args + " </dev/null >/dev/null 2>" + err_path;
  const int status = std::system(cmd.c_str());
  *err = slurp(err_path);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// ---- The source model -----------------------------------------------------------------

SynthShape source_shape(bool tied) {
  SynthShape s = *synth_preset("tiny");  // 256 wide, 4 heads of 64, 2 kv heads, llama3 rope
  s.name = tied ? "tied" : "untied";
  s.n_layer = 2;
  s.tied = tied;
  return s;
}

std::string synth_f32(const Dir& dir, const SynthShape& s, uint64_t seed) {
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

std::vector<float> f32_data(const GgufFile& f, const GgufTensor& t) {
  REQUIRE(t.type == GgmlType::F32);
  std::vector<float> v(t.elements());
  std::memcpy(v.data(), f.tensor_data(t).data(), t.bytes);
  return v;
}

// ---- HF's layout, written here ---------------------------------------------------------

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

std::string hf_name(const std::string& gguf) {
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
std::vector<float> hf_rows_of_gguf(const std::vector<float>& g, uint64_t heads, uint64_t n_in) {
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
float store(const std::string& dtype, float x, std::vector<uint8_t>* bytes) {
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

HfTensor make_hf_tensor(const std::string& name, const std::string& dtype,
                        std::vector<uint64_t> shape, const std::vector<float>& v) {
  HfTensor t{name, dtype, std::move(shape), {}, {}};
  for (float x : v) t.values.push_back(store(dtype, x, &t.bytes));
  return t;
}

// This file's safetensors writer; `edit` may change the header before it is written.
void write_safetensors(const std::string& path, const std::vector<const HfTensor*>& ts,
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

constexpr const char* kLlama3Regex =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

// tokenizer.json (and tokenizer_config.json) of a GGUF's vocabulary, as the
// `tokenizers` library writes a Llama 3 tokenizer.
void write_tokenizer(const std::string& dir, const GgufFile& f, bool pair_merges) {
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

json hf_config(const SynthShape& s, const GgufFile& f) {
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

Checkpoint make_checkpoint(const std::string& dir, const SynthShape& s, const GgufFile& f,
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

// HF's llama3 rope: each frequency scaled by the published rule, written
// from HF's description (frequencies, not divisors); returned as the
// divisors rope_freqs.weight holds.
std::vector<double> hf_llama3_divisors(const SynthShape& s) {
  const uint32_t d = s.n_embd / s.n_head;
  const double low_wavelen = s.rope_orig_ctx / s.rope_low;
  const double high_wavelen = s.rope_orig_ctx / s.rope_high;
  std::vector<double> out;
  for (uint32_t k = 0; k < d; k += 2) {
    const double inv_freq = 1.0 / std::pow(static_cast<double>(s.rope_base), double(k) / d);
    const double wavelen = 2 * M_PI / inv_freq;
    double scaled = wavelen > low_wavelen ? inv_freq / s.rope_factor : inv_freq;
    if (wavelen >= high_wavelen && wavelen <= low_wavelen) {
      const double smooth = (s.rope_orig_ctx / wavelen - s.rope_low) / (s.rope_high - s.rope_low);
      scaled = (1 - smooth) * scaled / s.rope_factor + smooth * scaled;
    }
    out.push_back(inv_freq / scaled);
  }
  return out;
}

// The float64 reference on the checkpoint's own tensors (HF rows, HF rope).
RefModel ref_of_checkpoint(const Checkpoint& ck, const SynthShape& s) {
  RefModel m;
  m.n_layer = s.n_layer;
  m.n_embd = s.n_embd;
  m.n_ff = s.n_ff;
  m.n_head = s.n_head;
  m.n_head_kv = s.n_head_kv;
  m.head_dim = s.n_embd / s.n_head;
  m.n_rot = m.head_dim;
  m.n_vocab = s.n_vocab;
  m.eps = 1e-5;
  m.rope_base = s.rope_base;
  auto wide = [&](const std::string& n) {
    const HfTensor& t = ck.at(n);
    return std::vector<double>(t.values.begin(), t.values.end());
  };
  m.token_embd = wide("model.embed_tokens.weight");
  m.output_norm = wide("model.norm.weight");
  m.output = s.tied ? m.token_embd : wide("lm_head.weight");
  m.rope_freqs = hf_llama3_divisors(s);
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    RefLayer L;
    L.attn_norm = wide(p + "input_layernorm.weight");
    L.wq = wide(p + "self_attn.q_proj.weight");
    L.wk = wide(p + "self_attn.k_proj.weight");
    L.wv = wide(p + "self_attn.v_proj.weight");
    L.wo = wide(p + "self_attn.o_proj.weight");
    L.ffn_norm = wide(p + "post_attention_layernorm.weight");
    L.w_gate = wide(p + "mlp.gate_proj.weight");
    L.w_up = wide(p + "mlp.up_proj.weight");
    L.w_down = wide(p + "mlp.down_proj.weight");
    m.layers.push_back(std::move(L));
  }
  return m;
}

std::vector<int32_t> test_tokens(size_t n, size_t n_vocab) {
  std::vector<int32_t> t;
  uint64_t x = 777;
  for (size_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    t.push_back(static_cast<int32_t>((x >> 33) % n_vocab));
  }
  t[n / 2] = t[1];
  return t;
}

// The CPU backend's logits (f32 activations and cache) for every position, one token at a time.
std::vector<std::vector<float>> our_logits(const std::string& path,
                                           const std::vector<int32_t>& tokens) {
  auto mr = open_model(path);
  REQUIRE_MESSAGE(mr.has_value(), (mr ? "" : mr.error().message));
  const Model& m = **mr;
  CpuBackend be(m.config(), m.globals(), 64, 1, KvType::F32, 2, CpuAct::F32);
  Session s(m, be, 64);
  std::vector<std::vector<float>> out;
  for (int32_t t : tokens) {
    auto lg = s.feed(std::span<const int32_t>(&t, 1));
    REQUIRE_MESSAGE(lg.has_value(), (lg ? "" : lg.error().message));
    out.emplace_back(*lg, *lg + m.config().n_vocab);
  }
  return out;
}

std::string convert(const Dir& dir, const std::string& ckpt, const std::string& out,
                    const std::string& quant) {
  std::string err;
  const int rc =
      run_tool(dir, "convert " + ckpt + " -o " + out + " --quant " + quant + " -t 2", &err);
  REQUIRE_MESSAGE(rc == 0, err);
  return err;
}

// Converts a checkpoint of `dtype` to F32 and checks tensors, metadata,
// tokenizer and logits against the source model and the HF reference.
void check_f32_conversion(const std::string& dtype, int shards, bool tied) {
  Dir dir("f32_" + dtype);
  const SynthShape s = source_shape(tied);
  const std::string src_path = synth_f32(dir, s, 11);
  auto src = GgufFile::open(src_path);
  REQUIRE(src);
  const GgufFile& a = **src;
  const Checkpoint ck = make_checkpoint(dir.file("hf"), s, a, dtype, shards, dtype == "BF16");
  const std::string out = dir.file("converted.gguf");
  const std::string msg = convert(dir, ck.dir, out, "f32");
  CHECK(msg.find("convert: wrote") != std::string::npos);
  auto conv = GgufFile::open(out);
  REQUIRE(conv);
  const GgufFile& b = **conv;

  // Every tensor: the source's, in the source's order and shape (no output.weight when tied).
  REQUIRE(b.tensors().size() == a.tensors().size());
  CHECK((b.find_tensor("output.weight") == nullptr) == tied);
  for (size_t i = 0; i < a.tensors().size(); ++i) {
    const GgufTensor& ta = a.tensors()[i];
    const GgufTensor& tb = b.tensors()[i];
    INFO(ta.name);
    REQUIRE(tb.name == ta.name);
    REQUIRE(tb.type == GgmlType::F32);
    REQUIRE(tb.shape == ta.shape);
    const std::vector<float> va = f32_data(a, ta), vb = f32_data(b, tb);
    if (ta.name == "rope_freqs.weight") {
      const std::vector<double> want = hf_llama3_divisors(s);
      REQUIRE(vb.size() == want.size());
      for (size_t k = 0; k < want.size(); ++k) CHECK(std::fabs(vb[k] - want[k]) <= 1e-6 * want[k]);
      CHECK(*std::max_element(vb.begin(), vb.end()) == doctest::Approx(s.rope_factor));
      continue;
    }
    size_t mismatches = 0;
    for (size_t k = 0; k < va.size(); ++k) {
      const float want = store(dtype, va[k], nullptr);  // the source, rounded to dtype
      mismatches += std::memcmp(&vb[k], &want, 4) != 0;
    }
    CHECK(mismatches == 0);
  }
  if (dtype == "F32")  // bit for bit the source's bytes
    for (const GgufTensor& ta : a.tensors())
      CHECK(std::memcmp(a.tensor_data(ta).data(), b.tensor_data(*b.find_tensor(ta.name)).data(),
                        ta.bytes) == 0);

  // Metadata the engine reads.
  CHECK(*b.get_string("general.architecture") == "llama");
  CHECK(*b.get_int("llama.block_count") == 2);
  CHECK(*b.get_int("llama.attention.head_count_kv") == s.n_head_kv);
  CHECK(*b.get_float("llama.attention.layer_norm_rms_epsilon") == doctest::Approx(1e-5));
  CHECK(*b.get_float("llama.rope.freq_base") == s.rope_base);
  CHECK(*b.get_int(kLlama3RopeOrigCtxKey) == static_cast<int64_t>(s.rope_orig_ctx));
  CHECK(*b.get_int("general.file_type") == 0);
  CHECK(*b.get_string("tokenizer.ggml.pre") == "llama-bpe");
  CHECK(b.get_string("tokenizer.chat_template").has_value());

  // The tokenizer: the source's arrays, ids and encodings.
  for (const char* k : {"tokenizer.ggml.tokens", "tokenizer.ggml.merges"})
    CHECK((*a.get_array(k))->strings == (*b.get_array(k))->strings);
  CHECK((*a.get_array("tokenizer.ggml.token_type"))->raw ==
        (*b.get_array("tokenizer.ggml.token_type"))->raw);
  for (const char* k : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"})
    CHECK(*a.get_int(k) == *b.get_int(k));
  auto tok_a = Tokenizer::from_gguf(a), tok_b = Tokenizer::from_gguf(b);
  REQUIRE(tok_a);
  REQUIRE(tok_b);
  const std::string text = "In the beginning God created the heaven and the earth. 1234 <|x|>";
  CHECK((*tok_a)->encode(text, true, false) == (*tok_b)->encode(text, true, false));
  CHECK((*tok_b)->add_bos_default());

  // Logits: the HF reference on the checkpoint's tensors, and the source model's.
  const std::vector<int32_t> tokens = test_tokens(16, s.n_vocab);
  const auto ref = ref_forward(ref_of_checkpoint(ck, s), tokens, RefVariant{.neox_rope = true});
  const auto ours = our_logits(out, tokens);
  double worst = 0;
  for (size_t t = 0; t < tokens.size(); ++t)
    worst = std::max(worst, rel_err(ours[t].data(), ref[t]));
  MESSAGE(dtype << " checkpoint (" << shards << " shard(s)" << std::string(tied ? ", tied" : "")
                << "): converted model vs the float64 HF-convention reference: max |ours - ref| / "
                   "max |ref| = "
                << worst << " over 16 positions; tolerance " << kTolerance);
  CHECK(worst <= kTolerance);
  // The same reference with GGUF's adjacent-pair rope on HF's rows is far
  // off: the comparison sees which rows pair.
  const auto wrong = ref_forward(ref_of_checkpoint(ck, s), tokens);
  double off = 0;
  for (size_t t = 0; t < tokens.size(); ++t) off = std::max(off, rel_err(ours[t].data(), wrong[t]));
  CHECK(off > 100 * kTolerance);
  if (dtype == "F32") {
    const auto theirs = our_logits(src_path, tokens);
    for (size_t t = 0; t < tokens.size(); ++t)
      CHECK(std::memcmp(ours[t].data(), theirs[t].data(), theirs[t].size() * 4) == 0);
  }
}

}  // namespace

TEST_CASE("convert: F32 checkpoint in two shards: every tensor, rope_freqs, tokenizer, logits") {
  check_f32_conversion("F32", 2, false);
}

TEST_CASE("convert: F16 checkpoint: values widened exactly, logits match the HF reference") {
  check_f32_conversion("F16", 1, false);
}

TEST_CASE("convert: BF16 checkpoint with tied embeddings: no output.weight, logits match") {
  check_f32_conversion("BF16", 3, true);
}

TEST_CASE("convert: quantized outputs get synth's types and quantize_row's bytes") {
  Dir dir("quant");
  const SynthShape s = source_shape(false);
  auto src = GgufFile::open(synth_f32(dir, s, 5));
  REQUIRE(src);
  const GgufFile& a = **src;
  const Checkpoint ck = make_checkpoint(dir.file("hf"), s, a, "F32", 1);
  for (const std::string q : {"q8_0", "q4_k_m", "bf16"}) {
    CAPTURE(q);
    const std::string out = dir.file("m-" + q + ".gguf");
    convert(dir, ck.dir, out, q);
    auto conv = GgufFile::open(out);
    REQUIRE(conv);
    const GgufFile& b = **conv;
    const std::vector<SynthTensor> plan = synth_tensor_plan(s, *synth_quant_from_name(q));
    REQUIRE(b.tensors().size() == plan.size());
    for (size_t i = 0; i < plan.size(); ++i) {
      const GgufTensor& t = b.tensors()[i];
      INFO(t.name);
      CHECK(t.name == plan[i].name);
      CHECK(t.type == plan[i].type);
      const std::vector<float> v = f32_data(a, *a.find_tensor(t.name));
      std::vector<uint8_t> want(t.bytes);
      const uint64_t ne0 = t.shape[0], row = t.bytes / t.rows();
      for (uint64_t r = 0; r < t.rows(); ++r)
        quantize_row(t.type, v.data() + r * ne0, want.data() + r * row, static_cast<int64_t>(ne0));
      CHECK(std::memcmp(b.tensor_data(t).data(), want.data(), want.size()) == 0);
    }
    if (q == "q4_k_m") {  // llama.cpp's mixture: more bits in the last layer's v and down
      CHECK(b.find_tensor("output.weight")->type == GgmlType::Q6_K);
      CHECK(b.find_tensor("blk.0.ffn_down.weight")->type == GgmlType::Q4_K);
      CHECK(b.find_tensor("blk.1.ffn_down.weight")->type == GgmlType::Q6_K);
      CHECK(*b.get_int("general.file_type") == 15);
    }
    auto m = open_model(out);
    CHECK_MESSAGE(m.has_value(), (m ? "" : m.error().message));
  }
}

TEST_CASE("convert: export then convert gives the synth model back") {
  Dir dir("roundtrip");
  const SynthShape s = source_shape(false);
  const std::string src_path = synth_f32(dir, s, 9);
  auto src = GgufFile::open(src_path);
  REQUIRE(src);
  const std::string hf = dir.file("exported");
  fs::create_directories(hf);
  std::string err;
  REQUIRE_MESSAGE(run_tool(dir,
                           "export -m " + src_path + " --safetensors " + hf +
                               "/model.safetensors --config " + hf + "/config.json",
                           &err) == 0,
                  err);
  write_tokenizer(hf, **src, false);
  const std::string out = dir.file("back.gguf");
  convert(dir, hf, out, "auto");  // auto: F32 checkpoint -> F32
  auto back = GgufFile::open(out);
  REQUIRE(back);
  REQUIRE((*back)->tensors().size() == (*src)->tensors().size());
  for (const GgufTensor& t : (*src)->tensors()) {
    INFO(t.name);
    const GgufTensor* u = (*back)->find_tensor(t.name);
    REQUIRE(u);
    REQUIRE(u->bytes == t.bytes);
    CHECK(std::memcmp((*src)->tensor_data(t).data(), (*back)->tensor_data(*u).data(), t.bytes) ==
          0);
  }
}

// ---- Bad input ----------------------------------------------------------------------------

namespace {

// A valid single-shard F32 checkpoint and its parts, for the bad-input cases.
struct BadInput {
  Dir dir{"bad"};
  SynthShape s = source_shape(false);
  std::shared_ptr<GgufFile> src;
  Checkpoint ck;
  BadInput() {
    auto f = GgufFile::open(synth_f32(dir, s, 3));
    REQUIRE(f);
    src = *f;
    ck = make_checkpoint(dir.file("hf"), s, *src, "F32", 1);
  }
  std::vector<const HfTensor*> all() const {
    std::vector<const HfTensor*> v;
    for (const HfTensor& t : ck.tensors) v.push_back(&t);
    return v;
  }
  // Convert; expect exit 1, `says` in the message, and nothing written.
  void expect_error(const std::string& says, const std::string& names_file) {
    const std::string out = dir.file("out/model.gguf");
    fs::create_directories(dir.file("out"));
    std::string err;
    const int rc = run_tool(dir, "convert " + ck.dir + " -o " + out, &err);
    CHECK(rc == 1);
    CHECK_MESSAGE(err.find("error: ") == 0, err);
    CHECK_MESSAGE(err.find(says) != std::string::npos, err);
    CHECK_MESSAGE(err.find(names_file) != std::string::npos, err);
    CHECK(fs::is_empty(dir.file("out")));  // no output, no temporary file
  }
};

}  // namespace

TEST_CASE("convert: a non-Llama config.json is refused") {
  BadInput b;
  json cfg = json::parse(slurp(b.ck.dir + "/config.json"));
  cfg["architectures"] = {"MistralForCausalLM"};
  std::ofstream(b.ck.dir + "/config.json") << cfg.dump();
  b.expect_error("architectures is [\"MistralForCausalLM\"]; convert reads Llama", "config.json");
  cfg.erase("architectures");
  cfg["model_type"] = "gpt2";
  std::ofstream(b.ck.dir + "/config.json") << cfg.dump();
  b.expect_error("model_type is \"gpt2\"", "config.json");
}

TEST_CASE("convert: a missing shard is refused, naming it") {
  BadInput b;
  fs::remove(b.ck.dir + "/model.safetensors");
  std::vector<const HfTensor*> one, two;
  for (size_t i = 0; i < b.ck.tensors.size(); ++i) (i % 2 ? two : one).push_back(&b.ck.tensors[i]);
  json index = {{"weight_map", json::object()}};
  for (const HfTensor* t : one) index["weight_map"][t->name] = "model-00001-of-00002.safetensors";
  for (const HfTensor* t : two) index["weight_map"][t->name] = "model-00002-of-00002.safetensors";
  std::ofstream(b.ck.dir + "/model.safetensors.index.json") << index.dump();
  write_safetensors(b.ck.dir + "/model-00001-of-00002.safetensors", one);
  b.expect_error("shard model-00002-of-00002.safetensors is missing",
                 "model.safetensors.index.json");
}

TEST_CASE("convert: a truncated safetensors file is refused") {
  BadInput b;
  const std::string p = b.ck.dir + "/model.safetensors";
  fs::resize_file(p, fs::file_size(p) / 2);
  b.expect_error("truncated", "model.safetensors");
}

TEST_CASE("convert: a header whose offsets overlap is refused") {
  BadInput b;
  write_safetensors(b.ck.dir + "/model.safetensors", b.all(), [](json& h) {
    auto& o = h["model.layers.0.self_attn.k_proj.weight"]["data_offsets"];
    o = {o[0].get<uint64_t>() - 4, o[1].get<uint64_t>() - 4};  // 4 bytes into the tensor before
  });
  b.expect_error("overlap", "model.safetensors");
}

TEST_CASE("convert: a header whose offsets run past the file is refused") {
  BadInput b;
  write_safetensors(b.ck.dir + "/model.safetensors", b.all(), [](json& h) {
    auto& o = h["lm_head.weight"]["data_offsets"];  // the last tensor
    o = {o[0].get<uint64_t>() + 64, o[1].get<uint64_t>() + 64};
  });
  b.expect_error("run past the end of the file", "model.safetensors");
}

TEST_CASE("convert: an unknown dtype is refused, and so is a known one convert cannot read") {
  BadInput b;
  write_safetensors(b.ck.dir + "/model.safetensors", b.all(),
                    [](json& h) { h["model.norm.weight"]["dtype"] = "F17"; });
  b.expect_error("unknown dtype 'F17'", "model.safetensors");
  // I32 holds as many bytes as F32: a valid file, but not a float tensor.
  write_safetensors(b.ck.dir + "/model.safetensors", b.all(),
                    [](json& h) { h["model.norm.weight"]["dtype"] = "I32"; });
  b.expect_error("tensor 'model.norm.weight' is I32; convert reads F32, F16 and BF16",
                 "model.safetensors");
}

TEST_CASE("convert: a tensor of the wrong shape is refused") {
  BadInput b;
  // k_proj with 64 rows (one head) where GQA's 2 key/value heads need 128.
  HfTensor* k = nullptr;
  for (HfTensor& t : b.ck.tensors)
    if (t.name == "model.layers.1.self_attn.k_proj.weight") k = &t;
  REQUIRE(k != nullptr);
  k->shape = {64, 256};
  k->bytes.resize(64 * 256 * 4);
  write_safetensors(b.ck.dir + "/model.safetensors", b.all());
  b.expect_error(
      "'model.layers.1.self_attn.k_proj.weight' has shape [64, 256], but config.json's "
      "sizes give [128, 256]",
      "model.safetensors");
}

TEST_CASE("convert: a missing tensor is refused, and so is one convert does not know") {
  BadInput b;
  std::vector<const HfTensor*> some;
  for (const HfTensor& t : b.ck.tensors)
    if (t.name != "model.layers.1.mlp.up_proj.weight") some.push_back(&t);
  write_safetensors(b.ck.dir + "/model.safetensors", some);
  b.expect_error("tensor 'model.layers.1.mlp.up_proj.weight' is missing", b.ck.dir);
  HfTensor bias = make_hf_tensor("model.layers.0.self_attn.q_proj.bias", "F32", {256},
                                 std::vector<float>(256, 0.0f));
  std::vector<const HfTensor*> more = b.all();
  more.push_back(&bias);
  write_safetensors(b.ck.dir + "/model.safetensors", more);
  b.expect_error("tensor 'model.layers.0.self_attn.q_proj.bias' is not part of a Llama model",
                 "model.safetensors");
}

TEST_CASE("convert: a tokenizer that is not Llama 3's byte-level BPE is refused") {
  BadInput b;
  json tok = json::parse(slurp(b.ck.dir + "/tokenizer.json"));
  tok["pre_tokenizer"] = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};  // GPT-2's split
  std::ofstream(b.ck.dir + "/tokenizer.json") << tok.dump();
  b.expect_error("use_regex true", "tokenizer.json");
}

TEST_CASE("convert: a folder that is not there, or has no config.json, is refused") {
  BadInput b;
  fs::remove(b.ck.dir + "/config.json");
  b.expect_error("config.json: cannot read: No such file or directory", "config.json");
  fs::remove_all(b.ck.dir);
  b.expect_error("not a directory", b.ck.dir);
}
