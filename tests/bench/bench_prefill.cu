// bench_prefill: where one Llama-3-8B layer's time goes during a prompt of
// n_tok tokens (default 512) on the GPU, op family by op family, against the
// tensor-core bound measured in the same run:
//   bound: cuBLAS f16 GEMM (f32 accumulate) on an 8192^3 product, through
//          matmul_gemm_f16 (the call the prefill path uses), median of 20.
//   ops:   matmul_cuda for each weight of a Q4_K_M layer (q4_K, with Q6_K
//          for wv and w_down as the mixture uses in half the layers: the
//          slower case), and attention over the f16 cache for a prompt at
//          positions 0..n_tok-1 of one sequence: v1 (scalar kernel, forced
//          with scalar_only) and v2 (tensor-core flash kernel).
//   total: 32 x (matmuls + attention v2) = the prompt's time for the layers,
//          its tok/s, and the ratio of 2·N FLOPs per token (N = all matmul
//          weights of the 8b including the 128256 x 4096 output head, the
//          convention of bench/results/2026-11-29-h200-cuda.md) to the bound.
//          Norms, RoPE, KV store and SwiGLU are not in it (memory-bound,
//          ~µs at 512 tokens); the end-to-end `layerstream decode` run is the
//          check of that.
// Each timing: CUDA events around one call, 3 warm-ups, median / min / max of 20.
// Usage: ls_bench_prefill [n_tok]
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention.cuh"
#include "kernels/dequant.cuh"
#include "kernels/ggml_type.h"
#include "kernels/matmul.cuh"
#include "kernels/ref/quant.h"

#include "tests/bench/bench_util.cuh"

using namespace ls;

int main(int argc, char** argv) {
  const int64_t n_tok = argc > 1 ? std::atoll(argv[1]) : 512;
  std::mt19937_64 rng(99);
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs; prompt of %lld tokens, Llama-3-8B layer shapes\n", prop.name,
              prop.multiProcessorCount, static_cast<long long>(n_tok));

  // Llama-3-8B.
  const int64_t E = 4096, F = 14336, V = 128256, n_layer = 32;
  const int32_t n_head = 32, n_head_kv = 8, hd = 128;
  const int64_t KV = int64_t(n_head_kv) * hd;

  const int64_t max_elems = F * E;
  auto ctx_or = MatmulContext::create(s, max_elems);
  if (!ctx_or) {
    std::fprintf(stderr, "%s\n", ctx_or.error().message.c_str());
    return 1;
  }
  MatmulContext& ctx = **ctx_or;
  std::printf("GEMM backend: %s\n", ctx.gemm_backend());

  // The bound.
  double bound_tflops = 0;
  {
    const int64_t n = 8192;
    uint16_t *w16, *x16;
    float *y, *dx;
    CK(cudaMalloc(&w16, n * n * 2));
    CK(cudaMalloc(&x16, n * n * 2));
    CK(cudaMalloc(&y, n * n * 4));
    CK(cudaMalloc(&dx, n * n * 4));
    std::vector<float> hx = randn(size_t(n) * n, rng);
    CK(cudaMemcpy(dx, hx.data(), n * n * 4, cudaMemcpyHostToDevice));
    ST(convert_f32_f16_launch(dx, n * n, w16, s));
    ST(convert_f32_f16_launch(dx, n * n, x16, s));
    Stats g = time_it(s, 3, 20, [&] { ST(matmul_gemm_f16(ctx, w16, x16, n, n, n, y, s)); });
    bound_tflops = 2.0 * n * n * n / (g.med * 1e-3) / 1e12;
    std::printf(
        "bound: f16 GEMM 8192^3 %.0f TFLOP/s (cuBLAS, median of 20; min %.3f max %.3f ms)\n",
        bound_tflops, g.min, g.max);
    CK(cudaFree(w16));
    CK(cudaFree(x16));
    CK(cudaFree(y));
    CK(cudaFree(dx));
  }

  // Activations: x (n_tok, F) covers every matmul's input, y (n_tok, F) its output.
  float *x, *y;
  CK(cudaMalloc(&x, n_tok * F * 4));
  CK(cudaMalloc(&y, n_tok * F * 4));
  {
    auto hx = randn(size_t(n_tok) * F, rng);
    CK(cudaMemcpy(x, hx.data(), hx.size() * 4, cudaMemcpyHostToDevice));
  }

  struct Op {
    const char* what;
    GgmlType type;
    int64_t n_in, n_out;
  };
  const Op ops[] = {{"wq", GgmlType::Q4_K, E, E},     {"wk", GgmlType::Q4_K, E, KV},
                    {"wv", GgmlType::Q6_K, E, KV},    {"wo", GgmlType::Q4_K, E, E},
                    {"w_gate", GgmlType::Q4_K, E, F}, {"w_up", GgmlType::Q4_K, E, F},
                    {"w_down", GgmlType::Q6_K, F, E}};
  std::printf(
      "\n| op | type | n_in x n_out | ms: med min max | TFLOP/s | /bound | cuBLAS alone ms | "
      "path/cuBLAS |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  double layer_ms = 0, layer_gemm_ms = 0;
  uint16_t *w16, *x16;
  CK(cudaMalloc(&w16, max_elems * 2));
  CK(cudaMalloc(&x16, n_tok * F * 2));
  CK(cudaMemset(w16, 0x11, max_elems * 2));  // f16 0x1111, a small finite value
  ST(convert_f32_f16_launch(x, n_tok * F, x16, s));
  for (const Op& op : ops) {
    const int64_t rb = ggml_row_bytes(op.type, op.n_in);
    std::vector<uint8_t> pat(size_t(rb) * 64);
    for (int r = 0; r < 64; ++r) {
      auto f = randn(op.n_in, rng);
      quantize_row(op.type, f.data(), pat.data() + r * rb, op.n_in);
    }
    std::vector<uint8_t> hw(size_t(rb) * op.n_out);
    for (int64_t r = 0; r < op.n_out; ++r)
      std::copy(pat.begin() + (r % 64) * rb, pat.begin() + (r % 64 + 1) * rb, hw.begin() + r * rb);
    void* dw;
    CK(cudaMalloc(&dw, hw.size()));
    CK(cudaMemcpy(dw, hw.data(), hw.size(), cudaMemcpyHostToDevice));
    WeightView w;
    w.type = op.type;
    w.data = dw;
    w.n_in = op.n_in;
    w.n_out = op.n_out;
    Stats st = time_it(s, 3, 20, [&] { ST(matmul_cuda(ctx, w, x, n_tok, y, s)); });
    Stats sg = time_it(s, 3, 20,
                       [&] { ST(matmul_gemm_f16(ctx, w16, x16, op.n_in, op.n_out, n_tok, y, s)); });
    const double tf = 2.0 * n_tok * op.n_in * op.n_out / (st.med * 1e-3) / 1e12;
    std::printf("| %s | %s | %5lld x %5lld | %.3f %.3f %.3f | %.0f | %.2f | %.3f | %.2f |\n",
                op.what, ggml_type_name(op.type), (long long)op.n_in, (long long)op.n_out, st.med,
                st.min, st.max, tf, tf / bound_tflops, sg.med, sg.med / st.med);
    layer_ms += st.med;
    layer_gemm_ms += sg.med;
    CK(cudaFree(dw));
  }
  const double matmul_ms = layer_ms;

  // Attention: a prompt at positions 0..n_tok-1 of sequence 0, cache n_ctx = n_tok.
  double att_ms[2] = {0, 0};
  {
    const int32_t n_ctx = static_cast<int32_t>(n_tok);
    std::vector<__half> hk(size_t(n_ctx) * KV);
    auto f = randn(hk.size(), rng);
    for (size_t i = 0; i < hk.size(); ++i) hk[i] = __float2half(f[i]);
    __half *kc, *vc;
    int32_t *pos, *seq;
    float *q, *out;
    CK(cudaMalloc(&kc, hk.size() * 2));
    CK(cudaMalloc(&vc, hk.size() * 2));
    CK(cudaMemcpy(kc, hk.data(), hk.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(vc, hk.data(), hk.size() * 2, cudaMemcpyHostToDevice));
    std::vector<int32_t> hp(n_tok), hs(n_tok, 0);
    for (int64_t t = 0; t < n_tok; ++t) hp[t] = static_cast<int32_t>(t);
    CK(cudaMalloc(&pos, n_tok * 4));
    CK(cudaMalloc(&seq, n_tok * 4));
    CK(cudaMemcpy(pos, hp.data(), n_tok * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(seq, hs.data(), n_tok * 4, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&q, n_tok * E * 4));
    CK(cudaMalloc(&out, n_tok * E * 4));
    CK(cudaMemcpy(q, x, n_tok * E * 4, cudaMemcpyDeviceToDevice));
    AttentionParams ap;
    ap.q = q;
    ap.k_cache = kc;
    ap.v_cache = vc;
    ap.pos = pos;
    ap.seq = seq;
    ap.out = out;
    ap.n_tok = n_tok;
    ap.n_head = n_head;
    ap.n_head_kv = n_head_kv;
    ap.head_dim = hd;
    ap.n_ctx = n_ctx;
    ap.scale = 1.0f / std::sqrt(float(hd));
    ap.n_split = attention_splits(n_tok, n_head, n_ctx - 1);
    const int64_t part_floats = attention_partial_floats(n_tok, n_head, hd, ap.n_split);
    CK(cudaMalloc(&ap.partial, std::max<int64_t>(part_floats, 1) * 4));
    // QKᵀ and PV over the causal triangle: 4 · hd · n_head · Σ(pos+1).
    const double flops = 4.0 * hd * n_head * (double(n_tok) * (n_tok + 1) / 2);
    for (int v = 0; v < 2; ++v) {
      ap.scalar_only = v == 0;
      Stats st = time_it(s, 3, 20, [&] { ST(attention_f16kv_cuda(ap, s)); });
      att_ms[v] = st.med;
      std::printf(
          "| attention v%d (%s) | f16 KV | %d heads / %d KV, hd %d | %.3f %.3f %.3f | %.1f | %.3f "
          "| | |\n",
          v + 1, v == 0 ? "scalar" : "tensor-core flash", n_head, n_head_kv, hd, st.med, st.min,
          st.max, flops / (st.med * 1e-3) / 1e12, flops / (st.med * 1e-3) / 1e12 / bound_tflops);
    }
    CK(cudaFree(kc));
    CK(cudaFree(vc));
    CK(cudaFree(pos));
    CK(cudaFree(seq));
    CK(cudaFree(q));
    CK(cudaFree(out));
    CK(cudaFree(ap.partial));
  }

  const double n_params = double(n_layer) * (2 * E * E + 2 * E * KV + 3 * E * F) + double(V) * E;
  const double flop_tok = 2.0 * n_params;
  std::printf(
      "\nper layer: matmuls %.3f ms (cuBLAS alone on f16 weights %.3f ms), attention v1 %.3f ms, "
      "v2 %.3f ms\n",
      matmul_ms, layer_gemm_ms, att_ms[0], att_ms[1]);
  for (int v = 0; v < 2; ++v) {
    const double prompt_ms = n_layer * (matmul_ms + att_ms[v]);
    const double tps = n_tok / (prompt_ms * 1e-3);
    std::printf(
        "prompt (32 layers, matmuls + attention v%d): %.2f ms = %.0f tok/s = %.1f TFLOP/s (2N = "
        "%.2f GFLOP/token) = %.3f of bound %.0f\n",
        v + 1, prompt_ms, tps, tps * flop_tok / 1e12, flop_tok / 1e9,
        tps * flop_tok / 1e12 / bound_tflops, bound_tflops);
  }
  CK(cudaFree(x));
  CK(cudaFree(y));
  CK(cudaFree(w16));
  CK(cudaFree(x16));
  return 0;
}
