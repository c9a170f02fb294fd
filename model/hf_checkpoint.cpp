#include "model/hf_checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace ls {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// A positive integer field; absent: def (0: required).
Expected<uint32_t> positive(const json& j, const std::string& path, const char* key,
                            uint32_t def = 0) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (def) return def;
    return make_error("%s: '%s' is missing (a Llama config has it)", path.c_str(), key);
  }
  if (!it->is_number_unsigned() || it->get<uint64_t>() == 0 || it->get<uint64_t>() > 0x7fffffff)
    return make_error("%s: '%s' = %s: expected a positive integer", path.c_str(), key,
                      it->dump().c_str());
  return static_cast<uint32_t>(it->get<uint64_t>());
}

Expected<double> number(const json& j, const std::string& path, const char* key, double def) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return def;
  if (!it->is_number())
    return make_error("%s: '%s' = %s: expected a number", path.c_str(), key, it->dump().c_str());
  return it->get<double>();
}

Expected<std::optional<int64_t>> token_id(const json& j, const std::string& path, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::optional<int64_t>{};
  const json* v = &*it;
  if (v->is_array()) {  // Llama 3.1's eos_token_id: [128001, 128008, 128009]
    if (v->empty()) return std::optional<int64_t>{};
    v = &(*v)[0];
  }
  if (!v->is_number_integer() || v->get<int64_t>() < 0)
    return make_error("%s: '%s' = %s: expected a token id", path.c_str(), key, it->dump().c_str());
  return std::optional<int64_t>{v->get<int64_t>()};
}

// rope_scaling (or rope_parameters): none, linear or llama3, with parameters.
Status read_rope(const json& j, const std::string& path, HfLlamaConfig& c) {
  const json* s = nullptr;
  const char* field = "rope_scaling";
  if (auto it = j.find("rope_scaling"); it != j.end() && !it->is_null()) {
    s = &*it;
  } else if (auto p = j.find("rope_parameters"); p != j.end() && !p->is_null()) {
    s = &*p;
    field = "rope_parameters";
  }
  if (!s) return ok();
  if (!s->is_object())
    return make_error("%s: '%s' must be an object or null, found %s", path.c_str(), field,
                      s->type_name());
  if (auto t = s->find("rope_theta"); t != s->end() && t->is_number())
    c.rope_theta = t->get<float>();
  std::string type = "default";
  for (const char* k : {"rope_type", "type"})
    if (auto t = s->find(k); t != s->end() && t->is_string()) {
      type = t->get<std::string>();
      break;
    }
  if (type == "default") return ok();
  auto num = [&](const char* key, double def) { return number(*s, path, key, def); };
  if (type == "linear") {
    auto f = num("factor", 1.0);
    if (!f) return f.error();
    if (!(*f >= 1))
      return make_error("%s: %s.factor = %g: a linear factor must be at least 1", path.c_str(),
                        field, *f);
    if (*f > 1) c.rope_type = "linear";
    c.rope_factor = static_cast<float>(*f);
    return ok();
  }
  if (type == "llama3") {
    auto f = num("factor", 8), lo = num("low_freq_factor", 1), hi = num("high_freq_factor", 4),
         orig = num("original_max_position_embeddings", 8192);
    for (auto* v : {&f, &lo, &hi, &orig})
      if (!*v) return v->error();
    if (!(*f >= 1) || !(*lo > 0) || !(*hi > *lo) || !(*orig >= 1))
      return make_error(
          "%s: %s: llama3 needs factor >= 1, 0 < low_freq_factor < high_freq_factor and "
          "original_max_position_embeddings >= 1 (found %g, %g, %g, %g)",
          path.c_str(), field, *f, *lo, *hi, *orig);
    c.rope_type = "llama3";
    c.rope_factor = static_cast<float>(*f);
    c.rope_low = static_cast<float>(*lo);
    c.rope_high = static_cast<float>(*hi);
    c.rope_orig_ctx = static_cast<uint32_t>(*orig);
    return ok();
  }
  return make_error("%s: %s type '%s' is not supported (default, linear, llama3)", path.c_str(),
                    field, type.c_str());
}

}  // namespace

Expected<json> read_hf_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("%s: cannot read: %s", path.c_str(), std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return json::parse(ss.str());
  } catch (const json::exception& e) {
    return make_error("%s: not valid JSON: %s", path.c_str(), e.what());
  }
}

Expected<HfLlamaConfig> read_hf_llama_config(const std::string& path) {
  auto jr = read_hf_json(path);
  if (!jr) return jr.error();
  const json& j = *jr;
  if (!j.is_object()) return make_error("%s: expected a JSON object", path.c_str());
  const char* p = path.c_str();

  // A Llama: architectures and model_type, where given, must say so.
  auto arch = j.find("architectures");
  auto type = j.find("model_type");
  const bool has_arch = arch != j.end() && !arch->is_null();
  const bool has_type = type != j.end() && !type->is_null();
  if (!has_arch && !has_type)
    return make_error(
        "%s: neither 'architectures' nor 'model_type': not a Hugging Face model "
        "config",
        p);
  if (has_arch && (!arch->is_array() ||
                   std::find(arch->begin(), arch->end(), json("LlamaForCausalLM")) == arch->end()))
    return make_error(
        "%s: architectures is %s; convert reads Llama checkpoints "
        "(LlamaForCausalLM)",
        p, arch->dump().c_str());
  if (has_type && *type != "llama")
    return make_error("%s: model_type is %s; convert reads Llama checkpoints ('llama')", p,
                      type->dump().c_str());
  if (auto a = j.find("hidden_act"); a != j.end() && !a->is_null() && *a != "silu")
    return make_error("%s: hidden_act is %s; Llama uses 'silu'", p, a->dump().c_str());
  for (const char* k : {"attention_bias", "mlp_bias"})
    if (auto b = j.find(k); b != j.end() && !b->is_null() && *b != false)
      return make_error("%s: '%s' is %s; layerstream runs Llama without biases", p, k,
                        b->dump().c_str());

  HfLlamaConfig c;
  struct Field {
    uint32_t* out;
    const char* key;
  } required[] = {{&c.n_embd, "hidden_size"},
                  {&c.n_ff, "intermediate_size"},
                  {&c.n_head, "num_attention_heads"},
                  {&c.n_layer, "num_hidden_layers"},
                  {&c.n_vocab, "vocab_size"}};
  for (const Field& f : required) {
    auto v = positive(j, path, f.key);
    if (!v) return v.error();
    *f.out = *v;
  }
  {
    auto v = positive(j, path, "num_key_value_heads", c.n_head);
    if (!v) return v.error();
    c.n_head_kv = *v;
  }
  {
    auto v = positive(j, path, "max_position_embeddings", c.n_ctx);
    if (!v) return v.error();
    c.n_ctx = *v;
  }
  if (c.n_embd % c.n_head != 0)
    return make_error("%s: hidden_size %u is not a multiple of num_attention_heads %u", p, c.n_embd,
                      c.n_head);
  if (c.n_head % c.n_head_kv != 0)
    return make_error("%s: num_attention_heads %u is not a multiple of num_key_value_heads %u", p,
                      c.n_head, c.n_head_kv);
  c.head_dim = c.n_embd / c.n_head;
  {
    auto v = positive(j, path, "head_dim", c.head_dim);
    if (!v) return v.error();
    if (*v != c.head_dim)
      return make_error(
          "%s: head_dim %u is not hidden_size / num_attention_heads = %u, which "
          "layerstream needs",
          p, *v, c.head_dim);
  }
  if (c.head_dim % 2 != 0 || c.head_dim > 512)
    return make_error("%s: the head size %u is not supported (even, at most 512)", p, c.head_dim);
  {
    auto v = number(j, path, "rms_norm_eps", c.rms_eps);
    if (!v) return v.error();
    if (!(*v > 0 && *v < 1)) return make_error("%s: rms_norm_eps %g is out of range", p, *v);
    c.rms_eps = static_cast<float>(*v);
  }
  {
    auto v = number(j, path, "rope_theta", c.rope_theta);
    if (!v) return v.error();
    c.rope_theta = static_cast<float>(*v);
  }
  LS_TRY(read_rope(j, path, c));
  if (!(c.rope_theta > 1)) return make_error("%s: rope_theta %g is out of range", p, c.rope_theta);
  if (auto t = j.find("tie_word_embeddings"); t != j.end() && !t->is_null()) {
    if (!t->is_boolean())
      return make_error("%s: tie_word_embeddings = %s: expected true or false", p,
                        t->dump().c_str());
    c.tied = t->get<bool>();
  }
  {
    auto b = token_id(j, path, "bos_token_id");
    if (!b) return b.error();
    c.bos_id = *b;
    auto e = token_id(j, path, "eos_token_id");
    if (!e) return e.error();
    c.eos_id = *e;
  }
  return c;
}

Expected<HfCheckpoint> open_hf_checkpoint(const std::string& dir) {
  HfCheckpoint ck;
  ck.dir = dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return make_error("%s: not a directory (a Hugging Face checkpoint folder)", dir.c_str());

  // Which shards, and which tensors each should hold (index only).
  std::vector<std::string> names;
  std::map<std::string, std::vector<std::string>> promised;  // shard -> tensors
  const std::string index = (fs::path(dir) / "model.safetensors.index.json").string();
  if (fs::exists(index, ec)) {
    auto jr = read_hf_json(index);
    if (!jr) return jr.error();
    auto wm = jr->find("weight_map");
    if (!jr->is_object() || wm == jr->end() || !wm->is_object() || wm->empty())
      return make_error("%s: no 'weight_map' object (tensor name -> shard file)", index.c_str());
    for (auto it = wm->begin(); it != wm->end(); ++it) {
      if (!it.value().is_string())
        return make_error("%s: weight_map['%s'] is not a file name", index.c_str(),
                          it.key().c_str());
      const std::string shard = it.value().get<std::string>();
      if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..")
        return make_error("%s: weight_map['%s'] = '%s' is not a file name in this folder",
                          index.c_str(), it.key().c_str(), shard.c_str());
      if (!promised.count(shard)) names.push_back(shard);
      promised[shard].push_back(it.key());
    }
    std::sort(names.begin(), names.end());
    for (const std::string& n : names)
      if (!fs::exists(fs::path(dir) / n, ec))
        return make_error("%s: shard %s is missing (%s names it for %zu tensors, e.g. '%s')",
                          dir.c_str(), n.c_str(), index.c_str(), promised[n].size(),
                          promised[n][0].c_str());
  } else if (fs::exists(fs::path(dir) / "model.safetensors", ec)) {
    names.push_back("model.safetensors");
  } else {
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string n = e.path().filename().string();
      if (e.is_regular_file() && n.starts_with("model") && n.ends_with(".safetensors"))
        names.push_back(n);
    }
    std::sort(names.begin(), names.end());
    if (names.empty())
      return make_error("%s: no model*.safetensors file (and no model.safetensors.index.json)",
                        dir.c_str());
  }

  for (const std::string& n : names) {
    auto f = SafetensorsFile::open((fs::path(dir) / n).string());
    if (!f) return f.error();
    ck.shards.push_back(*f);
    const SafetensorsFile& sf = **f;
    for (const StTensor& t : sf.tensors()) {
      auto [it, fresh] = ck.tensors.emplace(t.name, HfCheckpoint::Ref{&sf, &t});
      if (!fresh)
        return make_error("%s: tensor '%s' is in two shards: %s and %s", dir.c_str(),
                          t.name.c_str(), it->second.file->path().c_str(), sf.path().c_str());
    }
    for (const std::string& t : promised[n])
      if (!sf.find(t))
        return make_error("%s: has no tensor '%s', which %s puts there", sf.path().c_str(),
                          t.c_str(), index.c_str());
  }
  return ck;
}

std::string hf_llama_name(const std::string& gguf) {
  if (gguf == "token_embd.weight") return "model.embed_tokens.weight";
  if (gguf == "output_norm.weight") return "model.norm.weight";
  if (gguf == "output.weight") return "lm_head.weight";
  if (gguf.rfind("blk.", 0) != 0) return "";
  const size_t dot = gguf.find('.', 4);
  if (dot == std::string::npos) return "";
  const std::string layer = gguf.substr(4, dot - 4), rest = gguf.substr(dot + 1);
  const std::string p = "model.layers." + layer + ".";
  if (rest == "attn_norm.weight") return p + "input_layernorm.weight";
  if (rest == "attn_q.weight") return p + "self_attn.q_proj.weight";
  if (rest == "attn_k.weight") return p + "self_attn.k_proj.weight";
  if (rest == "attn_v.weight") return p + "self_attn.v_proj.weight";
  if (rest == "attn_output.weight") return p + "self_attn.o_proj.weight";
  if (rest == "ffn_norm.weight") return p + "post_attention_layernorm.weight";
  if (rest == "ffn_gate.weight") return p + "mlp.gate_proj.weight";
  if (rest == "ffn_up.weight") return p + "mlp.up_proj.weight";
  if (rest == "ffn_down.weight") return p + "mlp.down_proj.weight";
  return "";
}

}  // namespace ls
