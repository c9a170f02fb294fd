#include "model/llama_config.h"

#include <cmath>

namespace ls {
namespace {

// Optional integer key: the default when absent, an error when present but wrong.
Expected<int64_t> opt_int(const GgufFile& f, const std::string& key, int64_t def) {
  if (!f.find(key)) return def;
  return f.get_int(key);
}
Expected<double> opt_float(const GgufFile& f, const std::string& key, double def) {
  if (!f.find(key)) return def;
  return f.get_float(key);
}

Expected<uint32_t> positive_u32(const GgufFile& f, const std::string& key, Expected<int64_t> v) {
  if (!v) return v.error();
  if (*v <= 0 || *v > 0x7fffffff)
    return make_error("%s: metadata '%s' = %lld is out of range", f.path().c_str(), key.c_str(),
                      (long long)*v);
  return static_cast<uint32_t>(*v);
}

Expected<const GgufTensor*> tensor(const GgufFile& f, const std::string& name,
                                   std::vector<uint64_t> shape) {
  const GgufTensor* t = f.find_tensor(name);
  if (!t) return make_error("%s: tensor '%s' is missing", f.path().c_str(), name.c_str());
  // ggml drops trailing dimensions of 1; compare with them removed.
  std::vector<uint64_t> got = t->shape;
  while (got.size() > 1 && got.back() == 1) got.pop_back();
  while (shape.size() > 1 && shape.back() == 1) shape.pop_back();
  if (got != shape) {
    auto str = [](const std::vector<uint64_t>& s) {
      std::string o = "(";
      for (size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
      return o + ")";
    };
    return make_error("%s: tensor '%s' has shape %s, expected %s", f.path().c_str(), name.c_str(),
                      str(got).c_str(), str(shape).c_str());
  }
  if (!ggml_traits(t->type).dequantizable)
    return make_error("%s: tensor '%s' has type %s, which layerstream cannot compute with",
                      f.path().c_str(), name.c_str(), ggml_type_name(t->type));
  return t;
}

}  // namespace

Expected<LlamaModelInfo> load_llama(const GgufFile& f) {
  const std::string& path = f.path();
  if (!f.find("general.architecture"))
    return make_error("%s: no general.architecture: not a model file", path.c_str());
  auto arch = f.get_string("general.architecture");
  if (!arch) return arch.error();
  if (*arch != "llama")
    return make_error("%s: architecture is '%s'; layerstream runs Llama models ('llama')",
                      path.c_str(), arch->c_str());
  if (f.tensors().empty())
    return make_error("%s: the file has no tensors (a vocabulary-only GGUF?)", path.c_str());

  LlamaModelInfo m;
  LlamaConfig& c = m.config;
  auto u32 = [&](const std::string& key) {
    return positive_u32(f, key, f.get_int(key));
  };
  {
    auto v = u32("llama.block_count"); if (!v) return v.error(); c.n_layer = *v;
  }
  {
    auto v = u32("llama.embedding_length"); if (!v) return v.error(); c.n_embd = *v;
  }
  {
    auto v = u32("llama.feed_forward_length"); if (!v) return v.error(); c.n_ff = *v;
  }
  {
    auto v = u32("llama.attention.head_count"); if (!v) return v.error(); c.n_head = *v;
  }
  {
    auto v = positive_u32(f, "llama.attention.head_count_kv",
                          opt_int(f, "llama.attention.head_count_kv", c.n_head));
    if (!v) return v.error();
    c.n_head_kv = *v;
  }
  {
    auto v = positive_u32(f, "llama.context_length", opt_int(f, "llama.context_length", 4096));
    if (!v) return v.error();
    c.n_ctx_train = *v;
  }
  if (c.n_embd % c.n_head != 0)
    return make_error("%s: embedding_length %u is not a multiple of head_count %u", path.c_str(),
                      c.n_embd, c.n_head);
  if (c.n_head % c.n_head_kv != 0)
    return make_error("%s: head_count %u is not a multiple of head_count_kv %u", path.c_str(),
                      c.n_head, c.n_head_kv);
  c.head_dim = c.n_embd / c.n_head;
  if (c.head_dim > 512 || c.head_dim % 2)
    return make_error("%s: head size %u is not supported (even, at most 512)", path.c_str(),
                      c.head_dim);
  {
    auto v = positive_u32(f, "llama.rope.dimension_count",
                          opt_int(f, "llama.rope.dimension_count", c.head_dim));
    if (!v) return v.error();
    c.n_rot = *v;
    if (c.n_rot > c.head_dim || c.n_rot % 2)
      return make_error("%s: rope.dimension_count %u must be even and at most the head size %u",
                        path.c_str(), c.n_rot, c.head_dim);
  }
  {
    auto v = opt_float(f, "llama.attention.layer_norm_rms_epsilon", 1e-5);
    if (!v) return v.error();
    if (!(*v > 0 && *v < 1))
      return make_error("%s: layer_norm_rms_epsilon %g is out of range", path.c_str(), *v);
    c.rms_eps = static_cast<float>(*v);
  }
  {
    auto v = opt_float(f, "llama.rope.freq_base", 10000.0);
    if (!v) return v.error();
    if (!(*v > 1)) return make_error("%s: rope.freq_base %g is out of range", path.c_str(), *v);
    c.rope_freq_base = static_cast<float>(*v);
  }
  // Rope scaling, read as llama.cpp reads it: the type defaults to "linear",
  // and llama.rope.scaling.factor (or the older llama.rope.scale_linear)
  // gives its factor; none or 0 means no scaling. Llama 3 scaling is no type:
  // it is the rope_freqs.weight tensor (read with the weights below), as in
  // the files llama.cpp's converter writes.
  std::string scaling_type = "linear";
  if (f.find("llama.rope.scaling.type")) {
    auto s = f.get_string("llama.rope.scaling.type");
    if (!s) return s.error();
    scaling_type = *s;
  }
  // Files layerstream wrote before say "llama3" (llama.cpp refuses them); the
  // tensor has the scaling, so the key is only checked against it.
  const bool legacy_llama3 = scaling_type == "llama3";
  if (scaling_type == "linear") {
    const char* key = f.find("llama.rope.scaling.factor") ? "llama.rope.scaling.factor"
                      : f.find("llama.rope.scale_linear") ? "llama.rope.scale_linear"
                                                          : nullptr;
    if (key) {
      auto fac = f.get_float(key);
      if (!fac) return fac.error();
      if (*fac != 0 && *fac != 1) {
        if (!(*fac > 1))
          return make_error("%s: metadata '%s' = %g: a linear rope factor must be at least 1",
                            path.c_str(), key, *fac);
        c.rope_scaling = RopeScalingKind::Linear;
        c.rope_freq_scale = static_cast<float>(1.0 / *fac);
      }
    }
  } else if (scaling_type != "none" && !legacy_llama3) {
    return make_error(
        "%s: llama.rope.scaling.type '%s' is not supported (none, linear; Llama 3 scaling is the "
        "rope_freqs.weight tensor)",
        path.c_str(), scaling_type.c_str());
  }
  if (auto n = f.get_string("general.name")) c.name = *n;

  // Weights.
  LlamaWeights& w = m.weights;
  const GgufTensor* emb = f.find_tensor("token_embd.weight");
  if (!emb) return make_error("%s: tensor 'token_embd.weight' is missing", path.c_str());
  if (emb->shape.size() < 2)
    return make_error("%s: tensor 'token_embd.weight' must be 2-D", path.c_str());
  c.n_vocab = static_cast<uint32_t>(emb->shape[1]);
  if (f.find("llama.vocab_size")) {
    auto v = f.get_int("llama.vocab_size");
    if (!v) return v.error();
    if (*v != c.n_vocab)
      return make_error("%s: llama.vocab_size %lld disagrees with token_embd.weight (%u rows)",
                        path.c_str(), (long long)*v, c.n_vocab);
  }
  const uint64_t E = c.n_embd, KV = c.n_embd_kv(), F = c.n_ff, V = c.n_vocab;
  {
    auto t = tensor(f, "token_embd.weight", {E, V}); if (!t) return t.error(); w.token_embd = *t;
  }
  {
    auto t = tensor(f, "output_norm.weight", {E}); if (!t) return t.error(); w.output_norm = *t;
    if (w.output_norm->type != GgmlType::F32)
      return make_error("%s: tensor 'output_norm.weight' must be f32", path.c_str());
  }
  if (f.find_tensor("output.weight")) {
    auto t = tensor(f, "output.weight", {E, V}); if (!t) return t.error(); w.output = *t;
  } else {
    w.output = w.token_embd;
    c.tied_output = true;
  }
  w.rope_freqs = nullptr;
  if (f.find_tensor("rope_freqs.weight")) {
    auto t = tensor(f, "rope_freqs.weight", {c.n_rot / 2});
    if (!t) return t.error();
    if ((*t)->type != GgmlType::F32)
      return make_error("%s: tensor 'rope_freqs.weight' must be f32", path.c_str());
    w.rope_freqs = *t;
    c.has_rope_freqs = true;
    c.rope_scaling = RopeScalingKind::Llama3;
  } else if (legacy_llama3) {
    // The divisors could be recomputed from the factor keys, but the backends
    // read them from the mapped file, and no writer makes such a file: ours
    // always wrote the tensor, llama.cpp's converter never writes the key.
    return make_error(
        "%s: llama.rope.scaling.type is 'llama3' but tensor 'rope_freqs.weight' (%u f32 "
        "frequency divisors) is missing: Llama 3 scaling needs that tensor",
        path.c_str(), c.n_rot / 2);
  }
  w.layers.resize(c.n_layer);
  for (uint32_t l = 0; l < c.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LayerWeights& L = w.layers[l];
    struct Want {
      const GgufTensor** slot;
      const char* name;
      std::vector<uint64_t> shape;
    } wants[] = {
        {&L.attn_norm, "attn_norm.weight", {E}},  {&L.wq, "attn_q.weight", {E, E}},
        {&L.wk, "attn_k.weight", {E, KV}},        {&L.wv, "attn_v.weight", {E, KV}},
        {&L.wo, "attn_output.weight", {E, E}},    {&L.ffn_norm, "ffn_norm.weight", {E}},
        {&L.w_gate, "ffn_gate.weight", {E, F}},   {&L.w_up, "ffn_up.weight", {E, F}},
        {&L.w_down, "ffn_down.weight", {F, E}},
    };
    for (Want& x : wants) {
      auto t = tensor(f, p + x.name, x.shape);
      if (!t) return t.error();
      if (x.shape.size() == 1 && (*t)->type != GgmlType::F32)
        return make_error("%s: tensor '%s%s' must be f32, found %s", path.c_str(), p.c_str(),
                          x.name, ggml_type_name((*t)->type));
      *x.slot = *t;
    }
  }
  return m;
}

}  // namespace ls
