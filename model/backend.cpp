#include "model/backend.h"

#include "model/sampler.h"

namespace ls {
namespace {

WeightView view(const GgufTensor* t, const uint8_t* base, uint64_t base_offset) {
  WeightView v;
  v.type = t->type;
  v.data = base + (t->offset - base_offset);
  v.n_in = static_cast<int64_t>(t->shape[0]);
  v.n_out = static_cast<int64_t>(t->rows());
  return v;
}
const float* f32(const GgufTensor* t, const uint8_t* base, uint64_t base_offset) {
  return reinterpret_cast<const float*>(base + (t->offset - base_offset));
}

}  // namespace

LayerView layer_view(const LayerWeights& w, const uint8_t* base, uint64_t base_offset) {
  LayerView v;
  v.attn_norm = f32(w.attn_norm, base, base_offset);
  v.wq = view(w.wq, base, base_offset);
  v.wk = view(w.wk, base, base_offset);
  v.wv = view(w.wv, base, base_offset);
  v.wo = view(w.wo, base, base_offset);
  v.ffn_norm = f32(w.ffn_norm, base, base_offset);
  v.w_gate = view(w.w_gate, base, base_offset);
  v.w_up = view(w.w_up, base, base_offset);
  v.w_down = view(w.w_down, base, base_offset);
  return v;
}

GlobalView global_view(const LlamaWeights& w, const uint8_t* file_base) {
  GlobalView v;
  v.token_embd = view(w.token_embd, file_base, 0);
  v.output_norm = f32(w.output_norm, file_base, 0);
  v.output = view(w.output, file_base, 0);
  v.rope_freqs = w.rope_freqs ? f32(w.rope_freqs, file_base, 0) : nullptr;
  return v;
}

Status Backend::finish_argmax(int32_t* ids, int32_t n_rows, int32_t n_vocab) {
  argmax_rows_.resize(static_cast<size_t>(n_rows) * static_cast<size_t>(n_vocab));
  LS_TRY(finish(argmax_rows_.data()));
  for (int32_t r = 0; r < n_rows; ++r)
    ids[r] = greedy_argmax(argmax_rows_.data() + static_cast<size_t>(r) * n_vocab,
                           static_cast<size_t>(n_vocab));
  return ok();
}

}  // namespace ls
