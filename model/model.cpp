#include "model/model.h"

namespace ls {

Expected<std::unique_ptr<Model>> open_model(const std::string& path) {
  auto f = GgufFile::open(path);
  if (!f) return f.error();
  auto m = std::make_unique<Model>();
  m->file = *f;
  auto info = load_llama(*m->file);
  if (!info) return info.error();
  m->info = std::move(*info);
  auto tok = Tokenizer::from_gguf(*m->file);
  if (!tok) return tok.error();
  m->tokenizer = std::move(*tok);
  if (static_cast<uint32_t>(m->tokenizer->n_vocab()) != m->info.config.n_vocab)
    return make_error("%s: the tokenizer has %d tokens but token_embd.weight has %u rows",
                      path.c_str(), m->tokenizer->n_vocab(), m->info.config.n_vocab);
  m->map = build_layer_map(*m->file, m->info.config.n_layer);
  return m;
}

Status forward_resident(const Model& m, Backend& be, const Batch& b, float* logits) {
  LS_TRY(be.begin(b));
  for (uint32_t l = 0; l < m.config().n_layer; ++l)
    LS_TRY(be.layer(l, be.resident_layer(l).value_or(m.layer(l))));
  return be.finish(logits);
}

}  // namespace ls
