#include "model/hf_tokenizer.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "io/gguf.h"          // defines: GgufFile
#include "model/tokenizer.h"  // defines: TokenType, copy_vocab()

namespace ls {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Llama 3's pre-tokenizer split, as tokenizer.json spells it (model/tokenizer.cpp implements it).
constexpr const char* kLlama3Split =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

// The pre-tokenizers, a Sequence flattened.
void flatten(const json& p, std::vector<const json*>& out) {
  if (p.is_object() && p.value("type", "") == "Sequence" && p.contains("pretokenizers") &&
      p["pretokenizers"].is_array()) {
    for (const json& q : p["pretokenizers"]) flatten(q, out);
  } else if (!p.is_null()) {
    out.push_back(&p);
  }
}

// Llama 3's pre-tokenization: a Split on its regex, isolating the matches,
// then ByteLevel with use_regex false (its default, true, would split again
// with GPT-2's regex). An error says what differs.
Status check_pre_tokenizer(const json& tok, const std::string& path) {
  const char* p = path.c_str();
  if (auto n = tok.find("normalizer"); n != tok.end() && !n->is_null())
    return make_error("%s: normalizer %s: the Llama 3 tokenizer (llama-bpe) has none", p,
                      n->dump().substr(0, 120).c_str());
  auto pre = tok.find("pre_tokenizer");
  if (pre == tok.end() || pre->is_null())
    return make_error(
        "%s: no pre_tokenizer: the Llama 3 tokenizer (llama-bpe) splits by its "
        "regex, then ByteLevel",
        p);
  std::vector<const json*> steps;
  flatten(*pre, steps);
  int splits = 0, byte_level = 0;
  for (const json* s : steps) {
    const std::string type = s->is_object() ? s->value("type", "") : "";
    if (type == "Split") {
      const json* pat = s->contains("pattern") ? &(*s)["pattern"] : nullptr;
      const bool llama3 =
          pat && pat->is_object() && pat->contains("Regex") && (*pat)["Regex"] == kLlama3Split;
      if (!llama3 || s->value("behavior", "") != "Isolated" || s->value("invert", false))
        return make_error(
            "%s: pre_tokenizer Split %s is not Llama 3's (its regex, behavior "
            "Isolated): layerstream's BPE tokenizer implements llama-bpe only",
            p, s->dump().substr(0, 200).c_str());
      ++splits;
    } else if (type == "ByteLevel") {
      if (s->value("use_regex", true))
        return make_error(
            "%s: pre_tokenizer ByteLevel has use_regex true (GPT-2's split); Llama "
            "3's splits by its own regex first and sets it false",
            p);
      if (s->value("add_prefix_space", false))
        return make_error("%s: pre_tokenizer ByteLevel adds a prefix space; Llama 3's does not", p);
      ++byte_level;
    } else {
      return make_error("%s: pre_tokenizer step %s is not part of Llama 3's (Split, ByteLevel)", p,
                        s->dump().substr(0, 120).c_str());
    }
  }
  if (splits != 1 || byte_level != 1)
    return make_error(
        "%s: pre_tokenizer has %d Split and %d ByteLevel steps; Llama 3's has one "
        "of each",
        p, splits, byte_level);
  return ok();
}

// A token given as "text" or {"content": "text"} in tokenizer_config.json.
std::string token_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string())
    return v["content"].get<std::string>();
  return "";
}

// Whether the post-processor's template for one sequence starts with `bos`
// (nullopt: there is no template to say).
std::optional<bool> template_adds_bos(const json& post, const std::string& bos) {
  if (!post.is_object()) return std::nullopt;
  const std::string type = post.value("type", "");
  if (type == "Sequence" && post.contains("processors") && post["processors"].is_array()) {
    for (const json& q : post["processors"])
      if (auto r = template_adds_bos(q, bos)) return r;
    return std::nullopt;
  }
  if (type != "TemplateProcessing" || !post.contains("single") || !post["single"].is_array())
    return std::nullopt;
  const json& single = post["single"];
  if (single.empty()) return false;
  const json& first = single[0];
  return first.is_object() && first.contains("SpecialToken") && first["SpecialToken"].is_object() &&
         first["SpecialToken"].value("id", "") == bos && !bos.empty();
}

}  // namespace

Status hf_tokenizer_to_gguf(const std::string& dir, const HfLlamaConfig& c, GgufWriter& w) {
  const std::string path = (fs::path(dir) / "tokenizer.json").string();
  const char* p = path.c_str();
  auto jr = read_hf_json(path);
  if (!jr) return jr.error();
  const json& tok = *jr;
  if (!tok.is_object()) return make_error("%s: expected a JSON object", p);
  auto model = tok.find("model");
  if (model == tok.end() || !model->is_object()) return make_error("%s: no 'model' object", p);
  if (model->value("type", "") != "BPE")
    return make_error(
        "%s: model type %s; convert reads byte-level BPE tokenizers ('BPE', as "
        "Llama 3's)",
        p, model->contains("type") ? (*model)["type"].dump().c_str() : "(none)");
  if (model->value("byte_fallback", false))
    return make_error(
        "%s: the BPE model has byte_fallback (a SentencePiece-style vocabulary); "
        "Llama 3's byte-level BPE has none",
        p);
  LS_TRY(check_pre_tokenizer(tok, path));

  // Token texts by id: the model's vocabulary, then the added tokens.
  const uint32_t n = c.n_vocab;
  std::vector<std::string> text(n);
  std::vector<int32_t> type(n, static_cast<int32_t>(TokenType::Normal));
  std::vector<uint8_t> have(n, 0);
  auto put = [&](const std::string& t, const json& idv, const char* where) -> Status {
    if (!idv.is_number_unsigned())
      return make_error("%s: %s '%s' has id %s, not a token id", p, where, t.c_str(),
                        idv.dump().c_str());
    const uint64_t id = idv.get<uint64_t>();
    if (id >= n)
      return make_error("%s: %s '%s' has id %llu, beyond config.json's vocab_size %u", p, where,
                        t.c_str(), static_cast<unsigned long long>(id), n);
    if (have[id] && text[id] != t)
      return make_error("%s: id %llu is both '%s' and '%s'", p, static_cast<unsigned long long>(id),
                        text[id].c_str(), t.c_str());
    text[id] = t;
    have[id] = 1;
    return ok();
  };
  auto vocab = model->find("vocab");
  if (vocab == model->end() || !vocab->is_object() || vocab->empty())
    return make_error("%s: model.vocab is missing or not an object of token -> id", p);
  for (auto it = vocab->begin(); it != vocab->end(); ++it)
    LS_TRY(put(it.key(), it.value(), "model.vocab token"));
  std::unordered_map<std::string, int32_t> added_ids;
  if (auto added = tok.find("added_tokens"); added != tok.end() && !added->is_null()) {
    if (!added->is_array()) return make_error("%s: added_tokens is not an array", p);
    for (const json& a : *added) {
      if (!a.is_object() || !a.contains("content") || !a["content"].is_string() ||
          !a.contains("id"))
        return make_error("%s: added_tokens entry %s lacks content or id", p,
                          a.dump().substr(0, 120).c_str());
      const std::string t = a["content"].get<std::string>();
      LS_TRY(put(t, a["id"], "added token"));
      const int32_t id = static_cast<int32_t>(a["id"].get<uint64_t>());
      type[id] = static_cast<int32_t>(a.value("special", false) ? TokenType::Control
                                                                : TokenType::UserDefined);
      added_ids[t] = id;
    }
  }
  for (uint32_t i = 0; i < n; ++i)
    if (!have[i]) {
      text[i] = "[PAD" + std::to_string(i) + "]";
      type[i] = static_cast<int32_t>(TokenType::Unused);
    }

  // Merges: "a b" (tokenizers before 0.20) or ["a", "b"].
  std::vector<std::string> merges;
  auto mj = model->find("merges");
  if (mj == model->end() || !mj->is_array())
    return make_error("%s: model.merges is missing or not an array", p);
  merges.reserve(mj->size());
  for (const json& m : *mj) {
    if (m.is_string()) {
      merges.push_back(m.get<std::string>());
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
    } else {
      return make_error("%s: merge %s is neither \"a b\" nor [\"a\", \"b\"]", p,
                        m.dump().substr(0, 80).c_str());
    }
  }

  // BOS, EOS, add_bos_token, chat template.
  json tcfg = json::object();
  const std::string tcfg_path = (fs::path(dir) / "tokenizer_config.json").string();
  std::error_code ec;
  if (fs::exists(tcfg_path, ec)) {
    auto t = read_hf_json(tcfg_path);
    if (!t) return t.error();
    if (t->is_object()) tcfg = std::move(*t);
  }
  auto id_of = [&](const char* key, std::optional<int64_t> fallback) -> Expected<int64_t> {
    if (tcfg.contains(key) && !tcfg[key].is_null()) {
      const std::string t = token_text(tcfg[key]);
      auto it = added_ids.find(t);
      int64_t id = it != added_ids.end() ? it->second : -1;
      if (id < 0 && vocab->contains(t)) id = (*vocab)[t].get<int64_t>();
      if (id < 0)
        return make_error("%s: %s '%s' is no token of %s", tcfg_path.c_str(), key, t.c_str(), p);
      return id;
    }
    if (fallback && *fallback >= n)
      return make_error("%s: %s_id %lld is beyond vocab_size %u", dir.c_str(), key,
                        static_cast<long long>(*fallback), n);
    return fallback.value_or(-1);
  };
  auto bos = id_of("bos_token", c.bos_id);
  if (!bos) return bos.error();
  auto eos = id_of("eos_token", c.eos_id);
  if (!eos) return eos.error();
  bool add_bos = true;
  if (tcfg.contains("add_bos_token") && tcfg["add_bos_token"].is_boolean()) {
    add_bos = tcfg["add_bos_token"].get<bool>();
  } else if (tok.contains("post_processor")) {
    if (auto r = template_adds_bos(tok["post_processor"], *bos >= 0 ? text[*bos] : ""))
      add_bos = *r;
  }

  GgufWriter v;  // the vocabulary alone, loaded by Tokenizer before it goes into w
  v.set_str("tokenizer.ggml.model", "gpt2");
  v.set_str("tokenizer.ggml.pre", "llama-bpe");
  v.set_arr_str("tokenizer.ggml.tokens", text);
  v.set_arr_i32("tokenizer.ggml.token_type", type);
  v.set_arr_str("tokenizer.ggml.merges", merges);
  if (*bos >= 0) v.set_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(*bos));
  if (*eos >= 0) v.set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(*eos));
  v.set_bool("tokenizer.ggml.add_bos_token", add_bos);
  if (tcfg.contains("chat_template") && tcfg["chat_template"].is_string())
    v.set_str("tokenizer.chat_template", tcfg["chat_template"].get<std::string>());
  const std::vector<uint8_t> bytes = v.header_bytes();
  auto f = GgufFile::parse(bytes, path);
  if (!f) return f.error();
  auto copied = copy_vocab(**f, w);
  if (!copied) return copied.error();
  return ok();
}

}  // namespace ls
