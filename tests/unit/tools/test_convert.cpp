// `layerstream convert`, run as the user runs it (the built binary,
// LS_BINARY), on small Hugging Face Llama checkpoints written by the tests'
// own code (hf_checkpoint_writer.h): a synth model's weights (2 layers, GQA,
// Llama 3.1 rope scaling) taken apart into HF's layout — HF names, Q/K rows
// in HF's order by the reshape llama.cpp's converter undoes, F32, F16 or
// BF16, in one or more shards — with a config.json and a tokenizer.json of
// the synth model's vocabulary. Bad input: test_convert_errors.cpp.
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
//  - export then convert gives the synth model back.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "io/gguf.h"                                // defines: GgufFile
#include "kernels/ref/quant.h"                      // defines: quantize_row
#include "model/cpu_backend.h"                      // defines: CpuBackend
#include "model/model.h"                            // defines: open_model()
#include "model/session.h"                          // defines: Session
#include "model/synth.h"                            // defines: synth_tensor_plan()
#include "model/tokenizer.h"                        // defines: Tokenizer
#include "tests/unit/ls_binary.h"                   // defines: LS_BINARY
#include "tests/unit/model/ref_llama_f64.h"         // defines: RefModel, ref_forward(), rel_err()
#include "tests/unit/tools/hf_checkpoint_writer.h"  // defines: make_checkpoint(), run_tool(), ...

using namespace ls;
using namespace ls::test;

namespace {

constexpr double kTolerance = 1e-5;  // as tests/unit/model/test_forward_f64.cpp

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
