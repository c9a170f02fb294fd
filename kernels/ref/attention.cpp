// attention_ref_f32 (kernels/ref/attention.h): per (token, query head), the
// scores q·k·scale over positions 0..pos, softmax_f32, then Σ w·v, each key
// and value head converted to f32 where it is used.
// defines: attention_ref_f32
#include "kernels/ref/attention.h"

#include <algorithm>
#include <vector>

#include "kernels/half.h"
#include "kernels/ref/ops.h"

namespace ls {

namespace {

// Head `head` of the key or value row at (seq, pos), as f32 (into row for f16
// or tiled keys).
const float* kv_head(const AttnKv& kv, bool key, int32_t seq, int32_t pos, int head, int head_dim,
                     float* row) {
  const void* base = key ? kv.k : kv.v;
  if (key && kv.k_tiled) {  // a key row's dims lie kAttnKTile apart
    for (int i = 0; i < head_dim; ++i) {
      const int64_t at = kv.k_elem(seq, pos, head, head_dim, i);
      row[i] = kv.type == AttnKvType::F32 ? static_cast<const float*>(base)[at]
                                          : fp16_to_fp32(static_cast<const uint16_t*>(base)[at]);
    }
    return row;
  }
  const int64_t at = kv.at(seq, pos) + static_cast<int64_t>(head) * kv.head_stride(head_dim);
  if (kv.type == AttnKvType::F32) return static_cast<const float*>(base) + at;
  const uint16_t* h = static_cast<const uint16_t*>(base) + at;
  for (int i = 0; i < head_dim; ++i) row[i] = fp16_to_fp32(h[i]);
  return row;
}

}  // namespace

void attention_ref_f32(const AttnArgs& a) {
  const int group = a.n_head / a.n_head_kv, hd = a.head_dim;
  int32_t max_pos = 0;
  for (int64_t t = 0; t < a.n_tok; ++t) max_pos = std::max(max_pos, a.pos[t]);
  std::vector<float> sc(static_cast<size_t>(max_pos) + 1), row(hd);
  for (int64_t t = 0; t < a.n_tok; ++t) {
    const int32_t seq = a.seq[t], pos = a.pos[t];
    for (int h = 0; h < a.n_head; ++h) {
      const int kvh = h / group;
      const float* q = a.q + t * a.ldq + static_cast<int64_t>(h) * hd;
      for (int32_t p = 0; p <= pos; ++p)
        sc[p] = dot_f32(q, kv_head(a.kv, true, seq, p, kvh, hd, row.data()), hd) * a.scale;
      softmax_f32(sc.data(), pos + 1);
      float* out = a.out + t * a.ldo + static_cast<int64_t>(h) * hd;
      std::fill(out, out + hd, 0.0f);
      for (int32_t p = 0; p <= pos; ++p) {
        const float* v = kv_head(a.kv, false, seq, p, kvh, hd, row.data());
        for (int i = 0; i < hd; ++i) out[i] += sc[p] * v[i];
      }
    }
  }
}

}  // namespace ls
