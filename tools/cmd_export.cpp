// layerstream export: every tensor of a Llama GGUF dequantized to f32 and
// written as safetensors under Hugging Face Llama names, with an HF
// config.json, so that an independent implementation (transformers) can run
// the very weights layerstream runs: tools/hf_check.py.
//
// Layout: HF's Linear weight is [out, in] row-major, which is GGUF's
// (ne0 = in, ne1 = out) with ne0 contiguous: the same bytes, no transpose.
//
// GGUF's Q and K rows are permuted (model/hf_checkpoint.h says how); export
// applies the inverse, hf_row_of, the row order `convert` reads.
//
// rope_freqs.weight (Llama 3.1 scaling) has no HF tensor: HF recomputes it
// from config.json's rope_scaling, which export fills from synth's
// layerstream.rope.llama3.* keys, the llama.rope.scaling.* keys of files
// layerstream wrote before those, or Llama 3.1's defaults (files from
// llama.cpp's converter carry none), and checks against the tensor before
// writing anything.
// defines: add_export()
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/gguf.h"             // defines: GgufFile
#include "kernels/ref/quant.h"   // defines: dequantize_row
#include "model/hf_checkpoint.h"  // defines: hf_llama_name, hf_row_of
#include "model/llama_config.h"  // defines: load_llama, LlamaConfig
#include "model/synth.h"         // defines: kLlama3Rope*Key
#include "tools/commands.h"

namespace ls {
namespace {

// One tensor to write: its GGUF source and HF name; q/k heads to un-permute.
struct ExportTensor {
  const GgufTensor* src;
  std::string hf_name;
  uint32_t permute_heads = 0;  // 0: rows as they are
};

struct Llama3Rope {
  double factor = 8, low = 1, high = 4;
  uint32_t orig_ctx = 8192;
};

// The per-dimension divisors HF's "llama3" rope computes from p (the
// formula of model/synth.cpp's llama31_rope_freqs, the one Meta published).
double llama3_divisor(const Llama3Rope& p, double base, uint32_t n_rot, uint32_t i) {
  const double freq = std::pow(base, -2.0 * i / n_rot);
  const double wavelen = 2 * M_PI / freq;
  if (wavelen < p.orig_ctx / p.high) return 1;
  if (wavelen > p.orig_ctx / p.low) return p.factor;
  const double smooth = (p.orig_ctx / wavelen - p.low) / (p.high - p.low);
  return 1.0 / ((1 - smooth) / p.factor + smooth);
}

// Llama 3 rope parameters: from synth's keys, or the llama.rope.scaling.*
// keys with type "llama3" of older layerstream files, else Llama 3.1's
// (factor: the largest divisor); an error when they do not reproduce
// rope_freqs.weight.
Expected<Llama3Rope> llama3_rope(const GgufFile& f, const LlamaConfig& c, const GgufTensor& rf) {
  std::vector<float> freqs(rf.elements());
  dequantize_row(rf.type, f.tensor_data(rf).data(), freqs.data(),
                 static_cast<int64_t>(freqs.size()));
  Llama3Rope p;
  float mx = 1;
  for (float v : freqs) mx = std::max(mx, v);
  p.factor = mx;
  auto num = [&](const char* key, double& out) {
    if (const GgufValue* v = f.find(key); v && v->is_number()) out = v->as_double();
  };
  double orig = p.orig_ctx;
  const GgufValue* type = f.find("llama.rope.scaling.type");
  if (type && type->type == GgufType::STRING && type->s == "llama3") {
    num("llama.rope.scaling.factor", p.factor);
    num("llama.rope.scaling.low_freq_factor", p.low);
    num("llama.rope.scaling.high_freq_factor", p.high);
    num("llama.rope.scaling.original_context_length", orig);
  }
  num(kLlama3RopeFactorKey, p.factor);
  num(kLlama3RopeLowKey, p.low);
  num(kLlama3RopeHighKey, p.high);
  num(kLlama3RopeOrigCtxKey, orig);
  p.orig_ctx = static_cast<uint32_t>(orig);
  for (uint32_t i = 0; i < freqs.size(); ++i) {
    const double want = llama3_divisor(p, c.rope_freq_base, c.n_rot, i);
    if (std::fabs(want - freqs[i]) > 1e-5 * std::fabs(want))
      return make_error(
          "%s: rope_freqs.weight[%u] = %.7g, but llama3 scaling (factor %g, low %g, high %g, "
          "original context %u) gives %.7g: set layerstream.rope.llama3.* to the model's values",
          f.path().c_str(), i, freqs[i], p.factor, p.low, p.high, p.orig_ctx, want);
  }
  return p;
}

// A float metadata value as the decimal it was written from (1e-5, not
// 9.99999974e-06): the shortest text that reads back as the same float.
double shortest(float v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::strtod(std::string(buf, r.ptr).c_str(), nullptr);
}

nlohmann::ordered_json hf_config(const GgufFile& f, const LlamaConfig& c,
                                 const std::optional<Llama3Rope>& rope) {
  nlohmann::ordered_json j;
  j["architectures"] = {"LlamaForCausalLM"};
  j["model_type"] = "llama";
  j["hidden_size"] = c.n_embd;
  j["intermediate_size"] = c.n_ff;
  j["num_attention_heads"] = c.n_head;
  j["num_key_value_heads"] = c.n_head_kv;
  j["head_dim"] = c.head_dim;
  j["num_hidden_layers"] = c.n_layer;
  j["rms_norm_eps"] = shortest(c.rms_eps);
  j["rope_theta"] = shortest(c.rope_freq_base);
  j["vocab_size"] = c.n_vocab;
  j["max_position_embeddings"] = c.n_ctx_train;
  j["hidden_act"] = "silu";
  j["attention_bias"] = false;
  j["mlp_bias"] = false;
  // lm_head.weight is always written (a copy of the embedding when the GGUF
  // ties them), so HF need not tie.
  j["tie_word_embeddings"] = false;
  j["torch_dtype"] = "float32";
  if (auto v = f.get_int("tokenizer.ggml.bos_token_id")) j["bos_token_id"] = *v;
  if (auto v = f.get_int("tokenizer.ggml.eos_token_id")) j["eos_token_id"] = *v;
  // transformers 4.x reads rope_theta + rope_scaling, 5.x rope_parameters:
  // both are written, with the same values.
  nlohmann::ordered_json params;
  if (rope) {
    nlohmann::ordered_json s;
    s["rope_type"] = "llama3";
    s["factor"] = rope->factor;
    s["low_freq_factor"] = rope->low;
    s["high_freq_factor"] = rope->high;
    s["original_max_position_embeddings"] = rope->orig_ctx;
    j["rope_scaling"] = s;
    params = s;
  } else if (c.rope_scaling == RopeScalingKind::Linear) {
    j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 1.0 / c.rope_freq_scale}};
    params = j["rope_scaling"];
  } else {
    j["rope_scaling"] = nullptr;
    params["rope_type"] = "default";
  }
  params["rope_theta"] = shortest(c.rope_freq_base);
  j["rope_parameters"] = params;
  return j;
}

Status write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return make_error("%s: write failed", path.c_str());
  return ok();
}

Status run_export(const std::string& model, const std::string& st_path,
                  const std::string& config_path) {
  auto file = GgufFile::open(model);
  if (!file) return file.error();
  const GgufFile& f = **file;
  auto info = load_llama(f);
  if (!info) return info.error();
  const LlamaConfig& c = info->config;
  if (c.n_rot != c.head_dim)
    return make_error("%s: rope rotates %u of %u dimensions per head; HF Llama rotates all",
                      model.c_str(), c.n_rot, c.head_dim);

  std::optional<Llama3Rope> rope;
  if (info->weights.rope_freqs) {
    auto r = llama3_rope(f, c, *info->weights.rope_freqs);
    if (!r) return r.error();
    rope = *r;
  }

  // The tensors in file order, under HF names; a tied head gets lm_head too.
  std::vector<ExportTensor> list;
  for (const GgufTensor& t : f.tensors()) {
    if (t.name == "rope_freqs.weight") continue;
    const std::string hf = hf_llama_name(t.name);
    if (hf.empty())
      return make_error("%s: tensor '%s' has no HF Llama name", model.c_str(), t.name.c_str());
    if (!ggml_traits(t.type).dequantizable)
      return make_error("%s: tensor '%s': type %s cannot be dequantized", model.c_str(),
                        t.name.c_str(), ggml_traits(t.type).name);
    ExportTensor e{&t, hf, 0};
    if (t.name.ends_with(".attn_q.weight")) e.permute_heads = c.n_head;
    if (t.name.ends_with(".attn_k.weight")) e.permute_heads = c.n_head_kv;
    list.push_back(e);
  }
  if (c.tied_output) list.push_back({info->weights.token_embd, "lm_head.weight", 0});

  // Header: HF shape [out, in] = GGUF (ne1, ne0); offsets from the data start.
  nlohmann::ordered_json header;
  header["__metadata__"] = {{"format", "pt"}, {"source", "layerstream export " + model}};
  uint64_t at = 0;
  for (const ExportTensor& e : list) {
    nlohmann::json shape = nlohmann::json::array();
    for (size_t k = e.src->shape.size(); k-- > 0;) shape.push_back(e.src->shape[k]);
    const uint64_t bytes = e.src->elements() * 4;
    header[e.hf_name] = {{"dtype", "F32"}, {"shape", shape}, {"data_offsets", {at, at + bytes}}};
    at += bytes;
  }
  std::string head = header.dump();
  head.append((8 - head.size() % 8) % 8, ' ');  // the data starts 8-aligned
  const uint64_t head_len = head.size();

  const std::string tmp = st_path + ".tmp";
  FILE* out = std::fopen(tmp.c_str(), "wb");
  if (!out) return make_error("%s: cannot create: %s", tmp.c_str(), std::strerror(errno));
  uint8_t len_le[8];
  for (int k = 0; k < 8; ++k) len_le[k] = static_cast<uint8_t>(head_len >> (8 * k));
  bool good =
      std::fwrite(len_le, 1, 8, out) == 8 && std::fwrite(head.data(), 1, head_len, out) == head_len;

  // Tensors in row groups: one head at a time for Q/K (rows reordered within
  // the head), else up to 4 Mi floats.
  std::vector<float> rows, hf;
  for (const ExportTensor& e : list) {
    if (!good) break;
    const GgufTensor& t = *e.src;
    const uint64_t ne0 = t.shape[0], n_rows = t.rows();
    const GgmlTypeTraits tr = ggml_traits(t.type);
    const uint64_t row_bytes = ne0 / tr.block_elems * tr.block_bytes;
    const uint8_t* src = f.tensor_data(t).data();
    uint64_t group = std::max<uint64_t>(1, (4ull << 20) / std::max<uint64_t>(ne0, 1));
    uint64_t d = 0;
    if (e.permute_heads) {
      if (n_rows % e.permute_heads != 0 || (n_rows / e.permute_heads) % 2 != 0) {
        std::fclose(out);
        return make_error("%s: tensor '%s': %llu rows are not %u heads of an even size",
                          model.c_str(), t.name.c_str(), (unsigned long long)n_rows,
                          e.permute_heads);
      }
      d = n_rows / e.permute_heads;
      group = d;
    }
    for (uint64_t r0 = 0; r0 < n_rows && good; r0 += group) {
      const uint64_t n = std::min(group, n_rows - r0);
      rows.resize(n * ne0);
      for (uint64_t r = 0; r < n; ++r)
        dequantize_row(t.type, src + (r0 + r) * row_bytes, rows.data() + r * ne0,
                       static_cast<int64_t>(ne0));
      const float* data = rows.data();
      if (d) {
        hf.resize(rows.size());
        for (uint64_t g = 0; g < n; ++g)
          std::memcpy(hf.data() + hf_row_of(g, d) * ne0, rows.data() + g * ne0, ne0 * 4);
        data = hf.data();
      }
      good = std::fwrite(data, 4, n * ne0, out) == n * ne0;
    }
  }
  good = std::fclose(out) == 0 && good;
  if (!good) {
    std::remove(tmp.c_str());
    return make_error("%s: write failed (disk full?)", tmp.c_str());
  }
  if (std::rename(tmp.c_str(), st_path.c_str()) != 0)
    return make_error("%s: cannot rename to %s: %s", tmp.c_str(), st_path.c_str(),
                      std::strerror(errno));
  if (!config_path.empty()) LS_TRY(write_file(config_path, hf_config(f, c, rope).dump(2) + "\n"));
  std::fprintf(stderr, "export: %s: %zu tensors, %.3f GB of f32%s\n", st_path.c_str(), list.size(),
               (8 + head_len + at) / 1e9, rope ? ", llama3 rope scaling" : "");
  return ok();
}

}  // namespace

Command add_export(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "export", "Write a GGUF's weights as f32 safetensors under Hugging Face Llama names");
  struct Args {
    std::string model, safetensors, config;
  };
  auto a = std::make_shared<Args>();
  sub->add_option("-m,--model", a->model, "GGUF model")->required();
  sub->add_option("--safetensors", a->safetensors, "Output .safetensors path")->required();
  sub->add_option("--config", a->config, "Also write a Hugging Face config.json here");
  return [a] {
    Status st = run_export(a->model, a->safetensors, a->config);
    if (!st.ok()) {
      std::fprintf(stderr, "error: %s\n", st.error().message.c_str());
      return 1;
    }
    return 0;
  };
}

}  // namespace ls
