// An independent float64 Llama forward, written from the math (not from
// model/cpu_backend.cpp or kernels/ref/ops.cpp): the oracle of the CPU
// backend's logits (test_forward_f64.cpp, the weights read from a GGUF) and
// of `convert` (test_convert.cpp, the weights read from a Hugging Face
// checkpoint, whose Q/K rows are in HF's order: RefVariant::neox_rope is
// HF's rotate_half).
// defines: RefLayer, RefModel, RefVariant, matvec(), rms_norm(), rope(), ref_forward(), rel_err()
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace ls::test {

// ---- The reference model: every weight as float64 -----------------------------------------

struct RefLayer {
  std::vector<double> attn_norm;  // (n_embd)
  std::vector<double> wq;         // (n_embd, n_head * head_dim): n_out rows of n_in
  std::vector<double> wk;         // (n_embd, n_head_kv * head_dim)
  std::vector<double> wv;         // (n_embd, n_head_kv * head_dim)
  std::vector<double> wo;         // (n_head * head_dim, n_embd)
  std::vector<double> ffn_norm;   // (n_embd)
  std::vector<double> w_gate;     // (n_embd, n_ff)
  std::vector<double> w_up;       // (n_embd, n_ff)
  std::vector<double> w_down;     // (n_ff, n_embd)
};

struct RefModel {
  size_t n_layer = 0, n_embd = 0, n_ff = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_rot = 0;
  size_t n_vocab = 0;
  double eps = 1e-5, rope_base = 10000.0, pos_scale = 1.0;
  std::vector<double> token_embd;   // (n_embd, n_vocab)
  std::vector<double> output_norm;  // (n_embd)
  std::vector<double> output;       // (n_embd, n_vocab); a copy of token_embd when tied
  std::vector<double> rope_freqs;   // (n_rot / 2), all 1 when the file has none
  std::vector<RefLayer> layers;
};

// Deliberate mistakes the reference can make on GGUF weights, to show the
// comparison catches them. (neox_rope is right for weights in HF's row
// order: HF's rotate_half pairs x[i] with x[i + n_rot/2].)
struct RefVariant {
  bool neox_rope = false;      // rotate (x[i], x[i + n_rot/2]) instead of adjacent pairs
  bool gqa_modulo = false;     // query head h reads kv head h % n_head_kv instead of h / group
  bool no_rope_freqs = false;  // ignore rope_freqs.weight
};

// ---- The reference forward ------------------------------------------------------------

// y = W x for a ggml weight of shape (n_in, n_out): n_out rows of n_in.
inline std::vector<double> matvec(const std::vector<double>& w, const std::vector<double>& x,
                                  size_t n_out) {
  const size_t n_in = x.size();
  REQUIRE(w.size() == n_in * n_out);
  std::vector<double> y(n_out, 0.0);
  for (size_t o = 0; o < n_out; ++o) {
    double s = 0;
    for (size_t i = 0; i < n_in; ++i) s += w[o * n_in + i] * x[i];
    y[o] = s;
  }
  return y;
}

inline std::vector<double> rms_norm(const std::vector<double>& x, const std::vector<double>& g,
                                    double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double r = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + eps);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * r * g[i];
  return y;
}

// Rotate every head of x (n_heads * head_dim) in place for position pos.
inline void rope(const RefModel& m, const RefVariant& var, std::vector<double>& x, size_t n_heads,
                 size_t pos) {
  const size_t half = m.n_rot / 2;
  for (size_t h = 0; h < n_heads; ++h) {
    double* v = x.data() + h * m.head_dim;
    for (size_t i = 0; i < half; ++i) {
      const double freq = var.no_rope_freqs ? 1.0 : m.rope_freqs[i];
      const double theta = static_cast<double>(pos) * m.pos_scale *
                           std::pow(m.rope_base, -2.0 * static_cast<double>(i) / m.n_rot) / freq;
      const double c = std::cos(theta), s = std::sin(theta);
      const size_t a = var.neox_rope ? i : 2 * i;
      const size_t b = var.neox_rope ? i + half : 2 * i + 1;
      const double x0 = v[a], x1 = v[b];
      v[a] = x0 * c - x1 * s;
      v[b] = x0 * s + x1 * c;
    }  // dimensions n_rot..head_dim pass through
  }
}

// The logits (n_vocab) of every position of `tokens`, from positions 0.. .
inline std::vector<std::vector<double>> ref_forward(const RefModel& m,
                                                    const std::vector<int32_t>& tokens,
                                                    const RefVariant& var = {}) {
  const size_t n = tokens.size(), e = m.n_embd, hd = m.head_dim;
  const size_t q_dim = m.n_head * hd, kv_dim = m.n_head_kv * hd, group = m.n_head / m.n_head_kv;
  std::vector<std::vector<double>> h(n);  // residual stream, per position
  for (size_t t = 0; t < n; ++t) {
    REQUIRE(tokens[t] >= 0);
    REQUIRE(static_cast<size_t>(tokens[t]) < m.n_vocab);
    const double* row = m.token_embd.data() + static_cast<size_t>(tokens[t]) * e;
    h[t].assign(row, row + e);
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  for (const RefLayer& L : m.layers) {
    std::vector<std::vector<double>> q(n), k(n), v(n);
    for (size_t t = 0; t < n; ++t) {
      const std::vector<double> xn = rms_norm(h[t], L.attn_norm, m.eps);
      q[t] = matvec(L.wq, xn, q_dim);
      k[t] = matvec(L.wk, xn, kv_dim);
      v[t] = matvec(L.wv, xn, kv_dim);
      rope(m, var, q[t], m.n_head, t);
      rope(m, var, k[t], m.n_head_kv, t);
    }
    for (size_t t = 0; t < n; ++t) {
      std::vector<double> att(q_dim, 0.0);
      for (size_t hq = 0; hq < m.n_head; ++hq) {
        const size_t hk = var.gqa_modulo ? hq % m.n_head_kv : hq / group;
        std::vector<double> score(t + 1);
        double mx = -INFINITY;
        for (size_t s = 0; s <= t; ++s) {  // causal: positions 0..t
          double d = 0;
          for (size_t i = 0; i < hd; ++i) d += q[t][hq * hd + i] * k[s][hk * hd + i];
          score[s] = d * scale;
          mx = std::max(mx, score[s]);
        }
        double sum = 0;
        for (double& sc : score) sum += (sc = std::exp(sc - mx));
        for (size_t s = 0; s <= t; ++s)
          for (size_t i = 0; i < hd; ++i) att[hq * hd + i] += score[s] / sum * v[s][hk * hd + i];
      }
      const std::vector<double> o = matvec(L.wo, att, e);
      for (size_t i = 0; i < e; ++i) h[t][i] += o[i];
      const std::vector<double> xn = rms_norm(h[t], L.ffn_norm, m.eps);
      const std::vector<double> g = matvec(L.w_gate, xn, m.n_ff);
      const std::vector<double> u = matvec(L.w_up, xn, m.n_ff);
      std::vector<double> act(m.n_ff);
      for (size_t i = 0; i < m.n_ff; ++i) act[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
      const std::vector<double> d = matvec(L.w_down, act, e);
      for (size_t i = 0; i < e; ++i) h[t][i] += d[i];
    }
  }
  std::vector<std::vector<double>> logits(n);
  for (size_t t = 0; t < n; ++t)
    logits[t] = matvec(m.output, rms_norm(h[t], m.output_norm, m.eps), m.n_vocab);
  return logits;
}

// ---- Comparison -------------------------------------------------------------------------

template <typename T>
inline double rel_err(const T* ours, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t j = 0; j < ref.size(); ++j) {
    const double d = std::fabs(static_cast<double>(ours[j]) - ref[j]);
    num = std::isnan(d) ? INFINITY : std::max(num, d);
    den = std::max(den, std::fabs(ref[j]));
  }
  return den > 0 ? num / den : num;
}

}  // namespace ls::test
