// Tokenizers of the Llama family, read from GGUF tokenizer.* metadata.
//
// Flow of encode(): split_special() cuts special tokens out of the text; each
// remaining text fragment goes through encode_bpe() (Llama 3: split_llama3()
// into words, then byte-level BPE per word by merge rank) or encode_spm()
// (Llama 2: SentencePiece BPE by score over the whole fragment). Both follow
// llama.cpp's behaviour, which its test vectors pin down; the one deliberate
// difference is invalid UTF-8, whose bytes we keep (llama.cpp turns each
// into U+FFFD before byte-level encoding).
#include "model/tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <queue>
#include <unordered_map>

#include "model/unicode.h"

namespace ls {
namespace {

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// The Llama 3 pre-tokenizer, the regex
//   (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N}{1,3}
//   | ?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
// as a hand-written matcher: at each position the first alternative that
// matches wins, as in a backtracking regex engine. Calls emit(offset, length)
// with byte offsets into text for each word.
template <typename Emit>
void split_llama3(std::string_view text, Emit&& emit) {
  struct Cp {
    uint32_t cp;
    uint32_t off;
  };
  std::vector<Cp> cps;
  cps.reserve(text.size() + 1);
  for (size_t pos = 0; pos < text.size();) {
    Utf8Char c = utf8_next(text, pos);
    cps.push_back({c.cp, static_cast<uint32_t>(pos)});
    pos += c.len;
  }
  const size_t n = cps.size();
  cps.push_back({0, static_cast<uint32_t>(text.size())});  // sentinel: the end offset
  const auto cp = [&](size_t i) { return cps[i].cp; };
  const auto lower = [](uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; };
  const auto newline = [](uint32_t c) { return c == '\r' || c == '\n'; };
  const auto other = [](uint32_t c) { return !is_space(c) && !is_letter(c) && !is_number(c); };

  size_t i = 0;
  const auto take = [&](size_t end) {
    emit(cps[i].off, cps[end].off - cps[i].off);
    i = end;
  };
  while (i < n) {
    const uint32_t c = cp(i);
    // (?i:'s|'t|'re|'ve|'m|'ll|'d)
    if (c == '\'' && i + 1 < n) {
      const uint32_t c1 = lower(cp(i + 1));
      if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') {
        take(i + 2);
        continue;
      }
      if (i + 2 < n) {
        const uint32_t c2 = lower(cp(i + 2));
        if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) {
          take(i + 3);
          continue;
        }
      }
    }
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (is_letter(c) || (!newline(c) && !is_number(c) && i + 1 < n && is_letter(cp(i + 1)))) {
      size_t j = i + 1;
      while (j < n && is_letter(cp(j))) ++j;
      take(j);
      continue;
    }
    // \p{N}{1,3}
    if (is_number(c)) {
      size_t j = i + 1;
      while (j < n && j - i < 3 && is_number(cp(j))) ++j;
      take(j);
      continue;
    }
    // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
    {
      size_t j = i + (c == ' ' ? 1 : 0);
      if (j < n && other(cp(j))) {
        while (j < n && other(cp(j))) ++j;
        while (j < n && newline(cp(j))) ++j;
        take(j);
        continue;
      }
    }
    // \s*[\r\n]+ | \s+(?!\S) | \s+
    if (is_space(c)) {
      size_t j = i, after_last_newline = 0;
      for (; j < n && is_space(cp(j)); ++j)
        if (newline(cp(j))) after_last_newline = j + 1;
      if (after_last_newline) {
        take(after_last_newline);  // up to the run's last newline
      } else if (j < n && j - i > 1) {
        take(j - 1);  // leave one space to lead the next word
      } else {
        take(j);
      }
      continue;
    }
    take(i + 1);  // not reached: every character matches one alternative
  }
}

std::string byte_level_encode(std::string_view bytes) {
  std::string s;
  s.reserve(bytes.size() * 2);
  for (char b : bytes) utf8_append(s, byte_to_codepoint(static_cast<uint8_t>(b)));
  return s;
}

// A bigram candidate of the BPE merge loops.
struct Bigram {
  float priority;  // larger is merged first (SPM: score; BPE: -rank)
  int32_t left;    // symbol index; ties go to the leftmost
  int32_t right;
  uint32_t size;                           // bytes of both symbols when the candidate was made
  int32_t result;                          // the merged token
  bool operator<(const Bigram& o) const {  // for std::priority_queue: top is the best
    return priority < o.priority || (priority == o.priority && left > o.left);
  }
};

struct Symbol {
  int32_t prev, next;
  uint32_t off, len;  // bytes of the text; len 0: merged away
  int32_t id;         // BPE: its token
};

// FNV-1a, extendable: hashing b after a equals hashing the text a + b.
uint64_t fnv1a(std::string_view s, uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}
// A finaliser, so that the low bits (the slot) depend on every byte.
uint64_t mix64(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}
uint64_t table_size(size_t n) {  // a power of two, at most half full
  uint64_t size = 16;
  while (size < 2 * n) size *= 2;
  return size;
}

const GgufArray* find_array(const GgufFile& f, const char* key) {
  const GgufValue* v = f.find(key);
  return v && v->type == GgufType::ARRAY ? v->arr.get() : nullptr;
}

}  // namespace

// ---- loading -------------------------------------------------------------------------

Expected<std::unique_ptr<Tokenizer>> Tokenizer::from_gguf(const GgufFile& f) {
  const char* file = f.path().c_str();
  std::unique_ptr<Tokenizer> t(new Tokenizer());

  const GgufValue* model = f.find("tokenizer.ggml.model");
  if (!model)
    return make_error("%s: no tokenizer in this file (metadata 'tokenizer.ggml.model' is missing)",
                      file);
  if (model->type != GgufType::STRING)
    return make_error("%s: metadata 'tokenizer.ggml.model' should be a string, found %s", file,
                      gguf_type_name(model->type));
  if (model->s == "llama") {
    t->family_ = TokenizerFamily::Llama2Spm;
  } else if (model->s == "gpt2") {
    t->family_ = TokenizerFamily::Llama3Bpe;
    const GgufValue* pre = f.find("tokenizer.ggml.pre");
    const std::string p = pre && pre->type == GgufType::STRING ? pre->s : "";
    if (p != "llama-bpe" && p != "llama3" && p != "llama-v3")
      return make_error(
          "%s: tokenizer.ggml.pre = '%s' is not supported for tokenizer.ggml.model 'gpt2' "
          "(supported: llama-bpe, the Llama 3 pre-tokenizer)",
          file, pre ? p.c_str() : "(missing)");
  } else {
    return make_error(
        "%s: tokenizer.ggml.model = '%s' is not supported (supported: 'llama' for Llama 2 "
        "SentencePiece, 'gpt2' with pre 'llama-bpe' for Llama 3)",
        file, model->s.c_str());
  }
  const bool spm = t->family_ == TokenizerFamily::Llama2Spm;

  const GgufArray* tokens = find_array(f, "tokenizer.ggml.tokens");
  if (!tokens || tokens->elem_type != GgufType::STRING || tokens->count == 0)
    return make_error("%s: metadata 'tokenizer.ggml.tokens' is missing or not an array of strings",
                      file);
  if (tokens->count > INT32_MAX)
    return make_error("%s: tokenizer.ggml.tokens has %llu entries, too many", file,
                      static_cast<unsigned long long>(tokens->count));
  const size_t n = tokens->count;
  t->text_ = tokens->strings;
  for (size_t i = 0; i < n; ++i)  // as llama.cpp: an empty token would match everywhere
    if (t->text_[i].empty()) t->text_[i] = "[EMPTY_" + std::to_string(i) + "]";

  t->type_.assign(n, TokenType::Normal);
  if (const GgufValue* v = f.find("tokenizer.ggml.token_type")) {
    const GgufArray* a = v->type == GgufType::ARRAY ? v->arr.get() : nullptr;
    if (!a || a->count != n || a->elem_type == GgufType::STRING || a->elem_type == GgufType::ARRAY)
      return make_error("%s: metadata 'tokenizer.ggml.token_type' should be %zu integers", file, n);
    for (size_t i = 0; i < n; ++i) {
      const int64_t ty = a->integer(i);
      t->type_[i] = ty >= 0 && ty <= 6 ? static_cast<TokenType>(ty) : TokenType::Undefined;
    }
  }
  t->score_.assign(n, 0.0f);
  if (const GgufValue* v = f.find("tokenizer.ggml.scores")) {
    const GgufArray* a = v->type == GgufType::ARRAY ? v->arr.get() : nullptr;
    if (!a || a->count != n || a->elem_type == GgufType::STRING || a->elem_type == GgufType::ARRAY)
      return make_error("%s: metadata 'tokenizer.ggml.scores' should be %zu numbers", file, n);
    for (size_t i = 0; i < n; ++i) t->score_[i] = static_cast<float>(a->number(i));
  }

  TextIndex& ix = t->index_;
  ix.slot.assign(table_size(n), TextSlot{-1, 0});
  ix.mask = ix.slot.size() - 1;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t h = mix64(fnv1a(t->text_[i]));
    const auto tag = static_cast<uint32_t>(h >> 32);
    uint64_t k = h & ix.mask;
    while (ix.slot[k].id >= 0 && !(ix.slot[k].tag == tag && t->text_[ix.slot[k].id] == t->text_[i]))
      k = (k + 1) & ix.mask;
    ix.slot[k] = {static_cast<int32_t>(i), tag};  // a repeated text keeps its last id, as llama.cpp
  }

  if (spm) {
    char name[8];
    for (int b = 0; b < 256; ++b) {
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      t->byte_token_[b] = t->find(name);
    }
  } else {
    for (int b = 0; b < 256; ++b) {
      std::string s;
      utf8_append(s, byte_to_codepoint(static_cast<uint8_t>(b)));
      t->byte_token_[b] = t->find(s);
      if (t->byte_token_[b] < 0)
        return make_error(
            "%s: tokenizer.ggml.tokens lacks the byte-level token of byte 0x%02X ('%s'), which "
            "every gpt2-style vocabulary has",
            file, b, s.c_str());
    }
    const GgufArray* merges = find_array(f, "tokenizer.ggml.merges");
    if (!merges || merges->elem_type != GgufType::STRING)
      return make_error(
          "%s: metadata 'tokenizer.ggml.merges' is missing or not an array of strings (a gpt2 "
          "tokenizer needs it)",
          file);
    if (merges->count >= INT32_MAX)
      return make_error("%s: tokenizer.ggml.merges has too many entries", file);
    size_t bytes = 0;
    for (const std::string& m : merges->strings) bytes += m.size();
    if (bytes >= UINT32_MAX) return make_error("%s: tokenizer.ggml.merges is too large", file);
    t->merge_text_.reserve(bytes);
    t->merge_off_.reserve(merges->count + 1);
    t->merge_slot_.assign(table_size(merges->count), MergeSlot{-1, 0});
    t->merge_mask_ = t->merge_slot_.size() - 1;
    for (size_t r = 0; r < merges->count; ++r) {
      const std::string& m = merges->strings[r];
      if (m.find(' ', 1) == std::string::npos)
        return make_error("%s: tokenizer.ggml.merges[%zu] = '%s' is not two tokens and a space",
                          file, r, m.c_str());
      t->merge_off_.push_back(static_cast<uint32_t>(t->merge_text_.size()));
      t->merge_text_ += m;
      const uint64_t h = mix64(fnv1a(m));
      const auto tag = static_cast<uint32_t>(h >> 32);
      uint64_t k = h & t->merge_mask_;
      for (;; k = (k + 1) & t->merge_mask_) {
        const MergeSlot& e = t->merge_slot_[k];
        if (e.rank < 0) {
          t->merge_slot_[k] = {static_cast<int32_t>(r), tag};
          break;
        }
        if (e.tag == tag && m == merges->strings[e.rank]) break;  // a repeat: the first rank wins
      }
    }
    t->merge_off_.push_back(static_cast<uint32_t>(t->merge_text_.size()));
  }

  // Special token ids: the keys, else the family's usual tokens.
  const auto id_key = [&](const char* key, int32_t fallback) -> Expected<int32_t> {
    const GgufValue* v = f.find(key);
    if (!v) return fallback;
    if (!v->is_integer())
      return make_error("%s: metadata '%s' should be an integer, found %s", file, key,
                        gguf_type_name(v->type));
    if (v->as_int() < 0 || v->as_int() >= static_cast<int64_t>(n))
      return make_error("%s: metadata '%s' = %lld is not a token id (n_vocab %zu)", file, key,
                        static_cast<long long>(v->as_int()), n);
    return static_cast<int32_t>(v->as_int());
  };
  const auto first_of = [&](std::initializer_list<const char*> names) {
    for (const char* nm : names)
      if (int32_t id = t->find(nm); id >= 0) return id;
    return int32_t{-1};
  };
  auto bos = id_key("tokenizer.ggml.bos_token_id", spm ? 1 : t->find("<|begin_of_text|>"));
  if (!bos) return bos.error();
  auto eos = id_key("tokenizer.ggml.eos_token_id", spm ? 2 : t->find("<|end_of_text|>"));
  if (!eos) return eos.error();
  auto eot = id_key(
      "tokenizer.ggml.eot_token_id",
      first_of({"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>"}));
  if (!eot) return eot.error();
  auto eom = id_key("tokenizer.ggml.eom_token_id", t->find("<|eom_id|>"));
  if (!eom) return eom.error();
  auto unk = id_key("tokenizer.ggml.unknown_token_id", spm ? 0 : -1);
  if (!unk) return unk.error();
  if (spm && *bos >= static_cast<int32_t>(n)) *bos = -1;
  if (spm && *eos >= static_cast<int32_t>(n)) *eos = -1;
  if (spm && *unk >= static_cast<int32_t>(n)) *unk = -1;
  t->bos_ = *bos, t->eos_ = *eos, t->eot_ = *eot, t->unk_ = *unk;

  for (int32_t id : {t->eos_, t->eot_, *eom})
    if (id >= 0) t->eog_.push_back(id);
  for (const char* nm : {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                         "<|eom_id|>", "<EOT>"})
    if (int32_t id = t->find(nm); id >= 0) t->eog_.push_back(id);
  std::sort(t->eog_.begin(), t->eog_.end());
  t->eog_.erase(std::unique(t->eog_.begin(), t->eog_.end()), t->eog_.end());

  const auto flag = [&](const char* key, bool fallback) -> Expected<bool> {
    const GgufValue* v = f.find(key);
    if (!v) return fallback;
    if (!v->is_number())
      return make_error("%s: metadata '%s' should be a bool, found %s", file, key,
                        gguf_type_name(v->type));
    return v->as_int() != 0;
  };
  auto add_bos = flag("tokenizer.ggml.add_bos_token", true);
  if (!add_bos) return add_bos.error();
  auto add_space = flag("tokenizer.ggml.add_space_prefix", spm);
  if (!add_space) return add_space.error();
  t->add_bos_ = *add_bos;
  t->add_space_prefix_ = *add_space;
  if (t->add_bos_ && t->bos_ < 0)
    return make_error("%s: the tokenizer adds BOS but has none (no tokenizer.ggml.bos_token_id)",
                      file);

  for (size_t i = 0; i < n; ++i) {
    const TokenType ty = t->type_[i];
    if (ty == TokenType::Control || ty == TokenType::UserDefined || ty == TokenType::Unknown)
      t->specials_.push_back(static_cast<int32_t>(i));
  }
  std::stable_sort(t->specials_.begin(), t->specials_.end(),
                   [&](int32_t a, int32_t b) { return t->text_[a].size() > t->text_[b].size(); });
  return t;
}

// ---- queries ------------------------------------------------------------------------

int32_t Tokenizer::find(std::string_view token_text) const {
  return find2(token_text, {});
}

int32_t Tokenizer::find2(std::string_view a, std::string_view b) const {
  if (index_.slot.empty()) return -1;
  const uint64_t h = mix64(fnv1a(b, fnv1a(a)));
  for (uint64_t k = h & index_.mask;; k = (k + 1) & index_.mask) {
    const auto [id, tag] = index_.slot[k];
    if (id < 0) return -1;
    if (tag != static_cast<uint32_t>(h >> 32)) continue;
    const std::string& s = text_[id];
    if (s.size() == a.size() + b.size() && s.compare(0, a.size(), a) == 0 &&
        s.compare(a.size(), b.size(), b) == 0)
      return id;
  }
}

int32_t Tokenizer::merge_rank(int32_t left, int32_t right) const {
  if (merge_slot_.empty()) return -1;
  const std::string& a = text_[left];
  const std::string& b = text_[right];
  const uint64_t h = mix64(fnv1a(b, fnv1a(" ", fnv1a(a))));
  for (uint64_t k = h & merge_mask_;; k = (k + 1) & merge_mask_) {
    const auto [rank, tag] = merge_slot_[k];
    if (rank < 0) return -1;
    if (tag != static_cast<uint32_t>(h >> 32)) continue;
    const std::string_view m(merge_text_.data() + merge_off_[rank],
                             merge_off_[rank + 1] - merge_off_[rank]);
    if (m.size() == a.size() + 1 + b.size() && m.compare(0, a.size(), a) == 0 &&
        m[a.size()] == ' ' && m.substr(a.size() + 1) == b)
      return rank;
  }
}

TokenType Tokenizer::type(int32_t id) const {
  return id >= 0 && id < n_vocab() ? type_[id] : TokenType::Undefined;
}

bool Tokenizer::is_control(int32_t id) const {
  const TokenType ty = type(id);
  return ty == TokenType::Control || ty == TokenType::Unknown;
}

bool Tokenizer::is_eog(int32_t id) const {
  return std::binary_search(eog_.begin(), eog_.end(), id);
}

std::string Tokenizer::piece(int32_t id) const {
  if (id < 0 || id >= n_vocab()) return {};
  const std::string& s = text_[id];
  const TokenType ty = type_[id];
  if (ty == TokenType::Control || ty == TokenType::Unknown || ty == TokenType::UserDefined)
    return s;
  std::string out;
  out.reserve(s.size());
  if (family_ == TokenizerFamily::Llama3Bpe) {
    for (size_t pos = 0; pos < s.size();) {
      const Utf8Char c = utf8_next(s, pos);
      const int b = codepoint_to_byte(c.cp);
      if (b >= 0) {
        out += static_cast<char>(b);
      } else {
        out.append(s, pos, c.len);  // not a byte-level character: keep it
      }
      pos += c.len;
    }
    return out;
  }
  unsigned hex = 0;
  if (ty == TokenType::Byte && s.size() == 6 && std::sscanf(s.c_str(), "<0x%02X>", &hex) == 1)
    return std::string(1, static_cast<char>(hex));
  for (size_t pos = 0; pos < s.size();) {
    if (s.compare(pos, kSpmSpace.size(), kSpmSpace) == 0) {
      out += ' ';
      pos += kSpmSpace.size();
    } else {
      out += s[pos++];
    }
  }
  return out;
}

// ---- encoding ------------------------------------------------------------------------

std::vector<Tokenizer::Fragment> Tokenizer::split_special(std::string_view text,
                                                          bool parse_special) const {
  std::vector<Fragment> frags{{-1, 0, text.size()}}, next;
  for (int32_t id : specials_) {
    if (!parse_special && type_[id] != TokenType::UserDefined) continue;
    const std::string& s = text_[id];
    next.clear();
    bool found = false;
    for (const Fragment& fr : frags) {
      if (fr.token >= 0) {
        next.push_back(fr);
        continue;
      }
      size_t at = fr.off;
      const size_t end = fr.off + fr.len;
      for (;;) {
        const size_t m = text.find(s, at);
        if (m == std::string_view::npos || m + s.size() > end) break;
        found = true;
        if (m > at) next.push_back({-1, at, m - at});
        next.push_back({id, m, s.size()});
        at = m + s.size();
      }
      if (at < end) next.push_back({-1, at, end - at});
    }
    if (found) frags.swap(next);
  }
  return frags;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos,
                                       bool parse_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  if (add_bos && bos_ >= 0) out.push_back(bos_);
  if (text.empty()) return out;
  bool prev_special = true;  // SPM: a fragment at the start or after a special gets a space
  for (const Fragment& fr : split_special(text, parse_special)) {
    if (fr.token >= 0) {
      out.push_back(fr.token);
      prev_special = true;
      continue;
    }
    const std::string_view part = text.substr(fr.off, fr.len);
    if (family_ == TokenizerFamily::Llama3Bpe) {
      encode_bpe(part, out);
    } else {
      std::string escaped;
      escaped.reserve(part.size() * 2 + 3);
      if (add_space_prefix_ && prev_special) escaped += kSpmSpace;
      for (char c : part) {
        if (c == ' ') {
          escaped += kSpmSpace;
        } else {
          escaped += c;
        }
      }
      encode_spm(escaped, out);
    }
    prev_special = false;
  }
  return out;
}

void Tokenizer::encode_bpe(std::string_view text, std::vector<int32_t>& out) const {
  split_llama3(text, [&](size_t off, size_t len) { encode_bpe_word(text.substr(off, len), out); });
}

// The agglomeration both BPE flavours share: take the best pair from the
// queue, skip it if either side has changed since it was queued, merge it,
// and queue the new pairs it forms with its neighbours. `consider(l, r)`
// queues a pair if its union is a token (by merge rank or by score).
template <typename Consider>
void merge_symbols(std::vector<Symbol>& sym, std::priority_queue<Bigram>& queue,
                   const Consider& consider) {
  while (!queue.empty()) {
    const Bigram bg = queue.top();
    queue.pop();
    Symbol& l = sym[bg.left];
    Symbol& r = sym[bg.right];
    if (l.len == 0 || r.len == 0 || l.next != bg.right || l.len + r.len != bg.size) continue;
    l.len += r.len;
    l.id = bg.result;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = bg.left;
    consider(l.prev, bg.left);
    consider(bg.left, l.next);
  }
}

void Tokenizer::encode_bpe_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.size() == 1) {
    out.push_back(byte_token_[static_cast<uint8_t>(word[0])]);
    return;
  }
  // Llama 3 skips the merges for a word that is a token as a whole.
  if (int32_t id = find(byte_level_encode(word)); id >= 0) {
    out.push_back(id);
    return;
  }
  // One symbol per byte, then merge the lowest-ranked adjacent pair, leftmost
  // first, until no pair has a merge.
  std::vector<Symbol> sym(word.size());
  for (size_t i = 0; i < word.size(); ++i)
    sym[i] = {static_cast<int32_t>(i) - 1, i + 1 < word.size() ? static_cast<int32_t>(i + 1) : -1,
              static_cast<uint32_t>(i), 1, byte_token_[static_cast<uint8_t>(word[i])]};
  std::priority_queue<Bigram> queue;
  const auto consider = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    const int32_t rank = merge_rank(sym[l].id, sym[r].id);
    if (rank < 0) return;
    // A merge whose result is not a token never applies (Hugging Face
    // refuses such vocabularies): symbols stay tokens throughout.
    const int32_t result = find2(text_[sym[l].id], text_[sym[r].id]);
    if (result < 0) return;
    queue.push({-static_cast<float>(rank), l, r, sym[l].len + sym[r].len, result});
  };
  for (size_t i = 0; i + 1 < word.size(); ++i)
    consider(static_cast<int32_t>(i), static_cast<int32_t>(i + 1));
  merge_symbols(sym, queue, consider);
  for (int32_t i = 0; i >= 0; i = sym[i].next) out.push_back(sym[i].id);
}

int32_t Tokenizer::spm_byte_token(uint8_t b) const {
  return byte_token_[b] >= 0 ? byte_token_[b] : unk_;
}

void Tokenizer::encode_spm(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  // One symbol per UTF-8 character, then merge the adjacent pair whose union
  // is the highest-scoring token, leftmost first, until no union is a token.
  std::vector<Symbol> sym;
  sym.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const uint32_t len = std::min<uint32_t>(utf8_seq_len(static_cast<uint8_t>(text[pos])),
                                            static_cast<uint32_t>(text.size() - pos));
    const auto i = static_cast<int32_t>(sym.size());
    sym.push_back(
        {i - 1, pos + len < text.size() ? i + 1 : -1, static_cast<uint32_t>(pos), len, -1});
    pos += len;
  }
  std::priority_queue<Bigram> queue;
  const auto consider = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    const uint32_t size = sym[l].len + sym[r].len;
    const int32_t id = find(text.substr(sym[l].off, size));
    if (id < 0) return;
    queue.push({score_[id], l, r, size, id});
  };
  for (size_t i = 0; i + 1 < sym.size(); ++i)
    consider(static_cast<int32_t>(i), static_cast<int32_t>(i + 1));
  merge_symbols(sym, queue, consider);
  for (int32_t i = 0; i >= 0; i = sym[i].next) {
    const Symbol& s = sym[i];
    const int32_t id = s.id >= 0 ? s.id : find(text.substr(s.off, s.len));
    if (id >= 0) {
      out.push_back(id);
    } else {  // byte fallback
      for (uint32_t k = 0; k < s.len; ++k)
        out.push_back(spm_byte_token(static_cast<uint8_t>(text[s.off + k])));
    }
  }
}

// ---- decoding ------------------------------------------------------------------------

Detokenizer::Detokenizer(const Tokenizer& tok, bool render_special)
    : tok_(tok), render_special_(render_special) {}

std::string Detokenizer::push(int32_t id) {
  if (first_) {
    first_ = false;
    strip_space_ =
        tok_.family() == TokenizerFamily::Llama2Spm && tok_.add_space_prefix() && id == tok_.bos();
  }
  const bool control = tok_.is_control(id);
  if (control && !render_special_) return {};
  std::string p = tok_.piece(id);
  if (strip_space_ && !control) {
    strip_space_ = false;
    if (!p.empty() && p[0] == ' ') p.erase(0, 1);
  }
  std::string text = std::move(pending_);
  pending_.clear();
  text += p;
  // Hold back a trailing lead byte whose sequence is not complete yet.
  const size_t n = text.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto b = static_cast<uint8_t>(text[n - back]);
    if ((b & 0xC0) == 0x80) continue;  // continuation byte: look further back
    if (b >= 0xC2 && b <= 0xF4 && utf8_seq_len(b) > back) {
      pending_ = text.substr(n - back);
      text.resize(n - back);
    }
    break;
  }
  return text;
}

std::string Detokenizer::flush() {
  std::string s = std::move(pending_);
  pending_.clear();
  return s;
}

std::string detokenize(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  Detokenizer d(tok);
  std::string s;
  for (int32_t id : ids) s += d.push(id);
  return s + d.flush();
}

// ---- the built-in vocabulary ------------------------------------------------------------

namespace {

// The text the built-in merges are learnt from: plain English prose, so that
// English compresses the way a real vocabulary's would (by less, of course).
constexpr std::string_view kBuiltinCorpus =
    "The quick brown fox jumps over the lazy dog. This is a small model that was made for "
    "testing, and it has a vocabulary of its own. When you write a sentence in English, most of "
    "the words that you use are short and common: the, of, and, to, in, is, that, it, for, with, "
    "as, was, on, be, by, this, are, from, at, or, an, have, not, but, which, they, we, you, he, "
    "she, one, all, can, will, there, their, more, when, what, so, if, about, into, time, would, "
    "out, up, has, been, had, were, said, each, other, some, them, these, then, than, its, only, "
    "also, after, first, new, because, any, how, our, two, way, even, most, may, over, such, "
    "where, just, many, those, people, could, like, make, well, very, through, back, much, "
    "before, good, year, day, work, world, life, here, between, both, under, never, same, "
    "another, know, while, last, might, us, great, old, little, long, high, own, thing, still, "
    "should, being, now, down, made, part, number, water, place, right, think, help, home, hand, "
    "large, small, again, change, point, study, found, answer, question, system, program, "
    "computer, memory, model, layer, token, stream, read, write, file, data, text, language.\n"
    "The model reads the prompt, and then it generates one token at a time. Each token is a "
    "piece of a word, a whole word, or a single byte. A tokenizer turns the text into tokens, "
    "and a detokenizer turns the tokens back into the text that was written. The people who "
    "made this program wanted it to be fast, so the weights are streamed from the disk to the "
    "memory of the device, layer after layer, while the other layers are being computed.\n"
    "It was a cold morning in the middle of the winter, and the children were walking to "
    "school through the snow. Their mother had told them to be careful, because the road was "
    "icy and the cars were driving slowly. When they arrived, the teacher was standing at the "
    "door and smiling. \"Good morning,\" she said. \"I hope that you are ready to learn something "
    "new today.\" The children sat down at their desks, opened their books, and started to read "
    "the first chapter of the story about a little boat that sailed around the world.\n"
    "Question: What is the capital of France? Answer: The capital of France is Paris. "
    "Question: How many days are there in a week? Answer: There are seven days in a week. "
    "Question: Why is the sky blue? Answer: Because the air scatters the blue light of the sun "
    "more than the other colors, so we see blue light coming from every direction of the sky.\n"
    "Thank you for your help! I'm sure that we'll find the answer, and I think it's going to "
    "work. Let me know if you have any other questions, and please tell me what you need. We "
    "should be able to finish the work before the end of the day, but if there is a problem, "
    "I will let you know as soon as possible.\n"
    "In the beginning there was nothing but a simple idea: to build something that would "
    "help people understand the world a little better. Over the years, that idea has grown "
    "into a large project with many parts, and thousands of people have worked on it. Some of "
    "them wrote the code, some of them tested it, and some of them wrote the documentation "
    "that explains how everything works together.\n"
    "You are a helpful assistant. The user asks a question and the assistant gives an answer "
    "that is correct, clear and short. The assistant does not make things up; when it does not "
    "know something, it says so, and it explains what it would need to find out.\n";

// Byte-level BPE training: repeatedly merge the most frequent adjacent pair
// over the corpus's words (ties: the pair of lowest ids), as BPE vocabularies
// are made. Returns the merges as pairs of token texts, in rank order.
std::vector<std::pair<std::string, std::string>> train_merges(size_t max_merges) {
  std::map<std::string, int> word_count;
  split_llama3(kBuiltinCorpus, [&](size_t off, size_t len) {
    ++word_count[std::string(kBuiltinCorpus.substr(off, len))];
  });
  std::vector<std::string> text;  // token texts, byte-level encoded, by id
  std::unordered_map<std::string, int32_t> id_of;
  for (int b = 0; b < 256; ++b) {
    text.push_back(byte_level_encode(std::string(1, static_cast<char>(b))));
    id_of[text.back()] = b;
  }
  struct Word {
    std::vector<int32_t> ids;
    int count;
  };
  std::vector<Word> words;
  for (const auto& [w, c] : word_count) {
    Word wd{{}, c};
    for (char ch : w) wd.ids.push_back(static_cast<uint8_t>(ch));
    words.push_back(std::move(wd));
  }
  std::vector<std::pair<std::string, std::string>> merges;
  std::map<std::pair<int32_t, int32_t>, int> pairs;
  while (merges.size() < max_merges) {
    pairs.clear();
    for (const Word& w : words)
      for (size_t i = 0; i + 1 < w.ids.size(); ++i) pairs[{w.ids[i], w.ids[i + 1]}] += w.count;
    std::pair<int32_t, int32_t> best{-1, -1};
    int best_count = 1;  // a pair seen once teaches nothing
    for (const auto& [p, c] : pairs)
      if (c > best_count) best = p, best_count = c;
    if (best.first < 0) break;
    const std::string joined = text[best.first] + text[best.second];
    int32_t id;
    if (auto it = id_of.find(joined); it != id_of.end()) {
      id = it->second;
    } else {
      id = static_cast<int32_t>(text.size());
      text.push_back(joined);
      id_of[joined] = id;
    }
    merges.emplace_back(text[best.first], text[best.second]);
    for (Word& w : words) {
      std::vector<int32_t> ids;
      ids.reserve(w.ids.size());
      for (size_t i = 0; i < w.ids.size(); ++i) {
        if (i + 1 < w.ids.size() && w.ids[i] == best.first && w.ids[i + 1] == best.second) {
          ids.push_back(id);
          ++i;
        } else {
          ids.push_back(w.ids[i]);
        }
      }
      w.ids.swap(ids);
    }
  }
  return merges;
}

}  // namespace

Status write_builtin_vocab(GgufWriter& w, uint32_t n_vocab) {
  if (n_vocab < kBuiltinVocabMin)
    return make_error("the built-in vocabulary needs n_vocab >= %u (asked for %u)",
                      kBuiltinVocabMin, n_vocab);
  // Llama 3's special tokens, at the same offsets from the first one.
  constexpr uint32_t kMinSpecial = 16;
  const auto merges = train_merges(n_vocab - 256 - kMinSpecial);

  std::vector<std::string> tokens;
  tokens.reserve(n_vocab);
  std::unordered_map<std::string, int32_t> seen;
  for (int b = 0; b < 256; ++b) tokens.push_back(byte_level_encode(std::string(1, char(b))));
  std::vector<std::string> merge_strs;
  for (const auto& [a, b] : merges) {
    merge_strs.push_back(a + " " + b);
    std::string joined = a + b;
    if (seen.emplace(joined, 0).second) tokens.push_back(std::move(joined));
  }
  const auto base = static_cast<int32_t>(tokens.size());
  int reserved = 0;
  for (uint32_t i = 0; tokens.size() < n_vocab; ++i) {
    switch (i) {
      case 0:
        tokens.push_back("<|begin_of_text|>");
        break;
      case 1:
        tokens.push_back("<|end_of_text|>");
        break;
      case 6:
        tokens.push_back("<|start_header_id|>");
        break;
      case 7:
        tokens.push_back("<|end_header_id|>");
        break;
      case 9:
        tokens.push_back("<|eot_id|>");
        break;
      default:
        tokens.push_back("<|reserved_special_token_" + std::to_string(reserved++) + "|>");
    }
  }
  std::vector<int32_t> types(n_vocab, static_cast<int32_t>(TokenType::Normal));
  for (uint32_t i = base; i < n_vocab; ++i) types[i] = static_cast<int32_t>(TokenType::Control);

  w.set_str("tokenizer.ggml.model", "gpt2");
  w.set_str("tokenizer.ggml.pre", "llama-bpe");
  w.set_arr_str("tokenizer.ggml.tokens", tokens);
  w.set_arr_i32("tokenizer.ggml.token_type", types);
  w.set_arr_str("tokenizer.ggml.merges", merge_strs);
  w.set_u32("tokenizer.ggml.bos_token_id", base + 0);
  w.set_u32("tokenizer.ggml.eos_token_id", base + 1);
  w.set_u32("tokenizer.ggml.eot_token_id", base + 9);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
  return ok();
}

Expected<uint32_t> copy_vocab(const GgufFile& src, GgufWriter& w) {
  auto tok = Tokenizer::from_gguf(src);
  if (!tok) return tok.error();
  for (const auto& [key, value] : src.metadata())
    if (key.rfind("tokenizer.", 0) == 0) w.set(key, value);
  return static_cast<uint32_t>((*tok)->n_vocab());
}

}  // namespace ls
