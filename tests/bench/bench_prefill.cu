// bench_prefill: where one Llama layer's time goes during a prompt of n_tok
// tokens on the GPU, for the 8b and 70b shapes, against ceilings measured in
// the same run:
//   bound: cuBLAS f16 GEMM (f32 accumulate) on an 8192^3 product, through
//          matmul_gemm_f16 (the call the prefill path uses), median of 20;
//   copy:  device-to-device cudaMemcpyAsync of 1 GiB, read + write bytes
//          per second (the ceiling of the memory-bound dequantization);
//   H2D:   pinned host-to-device copy of 512 MiB (the ceiling of a layer
//          streamed over PCIe, issue 8).
// Per model (8b: n_embd 4096, n_ff 14336, 32/8 heads, 32 layers; 70b: 8192,
// 28672, 64/8 heads, 80 layers; head dim 128, vocabulary 128256) and prompt:
//   ops:   each weight of a Q4_K_M layer (q4_K, with Q6_K for wv and w_down
//          as the mixture uses in half the layers: the slower case):
//          dequantization v2 (rows) and v3 (tiles) with their read + write
//          GB/s and its ratio to the copy, whether v3 wrote v2's bits,
//          cuBLAS alone on the f16 weight, matmul_cuda on the legacy and
//          tile paths; and x -> f16, scalar and vector.
//   layer: the backend's sequence (q, k, v sharing xn; attention over the
//          f16 cache, tensor-core kernel; wo; gate, up sharing xn; w_down)
//          on each PrefillPath: legacy (before), tile, overlap. Its time x
//          n_layer is the prompt's time for the layers: tok/s, and the
//          ratio of 2·N FLOPs per token (N = all matmul weights including
//          the n_vocab x n_embd output head, the convention of
//          bench/results/2026-11-29-h200-cuda.md) to the bound. Norms, RoPE,
//          KV store and SwiGLU are not in it (memory-bound, ~µs);
//          `layerstream bench --prompt-tokens` is the end-to-end check.
//          For the 70b, the layer's Q4_K_M bytes over the measured H2D rate
//          is the time to stream it; a streamed prompt is bound by the
//          larger of the two per layer.
// Each timing: CUDA events around one call, 3 warm-ups, median / min / max of 20.
// Usage: ls_bench_prefill [model:n_tok ...]   (default 8b:512 70b:512 70b:2048;
//        a bare number N means 8b:N)
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "io/ggml_type.h"
#include "kernels/attention.cuh"
#include "kernels/dequant.cuh"
#include "kernels/matmul.cuh"
#include "kernels/ref/quant.h"

#include "tests/bench/bench_util.cuh"

using namespace ls;

namespace {

struct Shape {
  const char* name;
  int64_t E, F, V, n_layer;
  int32_t n_head, n_head_kv, hd;
};
constexpr Shape k8b{"8b", 4096, 14336, 128256, 32, 32, 8, 128};
constexpr Shape k70b{"70b", 8192, 28672, 128256, 80, 64, 8, 128};

struct Ceilings {
  double gemm_tflops = 0, copy_gbps = 0, h2d_gbps = 0;
};

__global__ void count_diff(const uint4* a, const uint4* b, int64_t n, unsigned long long* cnt) {
  unsigned long long c = 0;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const uint4 x = a[i], y = b[i];
    c += (x.x != y.x) | (x.y != y.y) | (x.z != y.z) | (x.w != y.w);
  }
  if (c) atomicAdd(cnt, c);
}

// n floats of random normals (a 1 Mi pattern, repeated: the values do not
// change the speed of any kernel here).
void fill_random(float* d, int64_t n, std::mt19937_64& rng) {
  const int64_t pat = std::min<int64_t>(n, 1 << 20);
  std::vector<float> h = randn(size_t(pat), rng);
  for (int64_t o = 0; o < n; o += pat)
    CK(cudaMemcpy(d + o, h.data(), std::min(pat, n - o) * 4, cudaMemcpyHostToDevice));
}

Ceilings measure_ceilings(MatmulContext& ctx, cudaStream_t s, std::mt19937_64& rng) {
  Ceilings c;
  {
    const int64_t n = 8192;
    uint16_t *w16, *x16;
    float *y, *dx;
    CK(cudaMalloc(&w16, n * n * 2));
    CK(cudaMalloc(&x16, n * n * 2));
    CK(cudaMalloc(&y, n * n * 4));
    CK(cudaMalloc(&dx, n * n * 4));
    fill_random(dx, n * n, rng);
    ST(convert_f32_f16_launch(dx, n * n, w16, s));
    ST(convert_f32_f16_launch(dx, n * n, x16, s));
    Stats g = time_it(s, 3, 20, [&] { ST(matmul_gemm_f16(ctx, w16, x16, n, n, n, y, s)); });
    c.gemm_tflops = 2.0 * n * n * n / (g.med * 1e-3) / 1e12;
    std::printf(
        "bound: f16 GEMM 8192^3 %.0f TFLOP/s (cuBLAS, median of 20; min %.3f max %.3f ms)\n",
        c.gemm_tflops, g.min, g.max);
    CK(cudaFree(w16));
    CK(cudaFree(x16));
    CK(cudaFree(y));
    CK(cudaFree(dx));
    // The copy: 1 GiB, far larger than the 50 MB L2.
    const size_t bytes = size_t(1) << 30;
    void *a, *b;
    CK(cudaMalloc(&a, bytes));
    CK(cudaMalloc(&b, bytes));
    CK(cudaMemset(a, 1, bytes));
    Stats cp =
        time_it(s, 3, 20, [&] { CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s)); });
    c.copy_gbps = 2.0 * bytes / (cp.med * 1e-3) / 1e9;
    std::printf(
        "copy: device-to-device 1 GiB %.0f GB/s read + write (median of 20; min %.3f max %.3f "
        "ms)\n",
        c.copy_gbps, cp.min, cp.max);
    // Pinned H2D, 512 MiB.
    const size_t hb = size_t(512) << 20;
    void* h;
    CK(cudaHostAlloc(&h, hb, cudaHostAllocDefault));
    std::memset(h, 1, hb);
    Stats hs = time_it(s, 1, 5, [&] { CK(cudaMemcpyAsync(a, h, hb, cudaMemcpyHostToDevice, s)); });
    c.h2d_gbps = hb / (hs.med * 1e-3) / 1e9;
    std::printf("H2D: pinned 512 MiB %.1f GB/s (median of 5; min %.2f max %.2f ms)\n", c.h2d_gbps,
                hs.min, hs.max);
    CK(cudaFreeHost(h));
    CK(cudaFree(a));
    CK(cudaFree(b));
  }
  return c;
}

void bench_model(const Shape& m, int64_t n_tok, const Ceilings& cl, cudaStream_t s,
                 std::mt19937_64& rng) {
  const int64_t E = m.E, F = m.F;
  const int64_t KV = int64_t(m.n_head_kv) * m.hd;
  std::printf("\n## %s, prompt of %lld tokens\n", m.name, (long long)n_tok);
  const int64_t max_elems = F * E;
  auto ctx_or = MatmulContext::create(s, max_elems);
  if (!ctx_or) {
    std::fprintf(stderr, "%s\n", ctx_or.error().message.c_str());
    std::exit(1);
  }
  MatmulContext& ctx = **ctx_or;

  // x (n_tok, F) covers every matmul's input; outputs as the backend's.
  float *x, *yq, *yk, *yv, *yo, *ygate, *yup;
  CK(cudaMalloc(&x, n_tok * F * 4));
  fill_random(x, n_tok * F, rng);
  CK(cudaMalloc(&yq, n_tok * E * 4));
  CK(cudaMalloc(&yk, n_tok * KV * 4));
  CK(cudaMalloc(&yv, n_tok * KV * 4));
  CK(cudaMalloc(&yo, n_tok * E * 4));
  CK(cudaMalloc(&ygate, n_tok * F * 4));
  CK(cudaMalloc(&yup, n_tok * F * 4));
  uint16_t *w16a, *w16b, *x16;
  CK(cudaMalloc(&w16a, max_elems * 2));
  CK(cudaMalloc(&w16b, max_elems * 2));
  CK(cudaMalloc(&x16, n_tok * F * 2));
  ST(convert_f32_f16_launch(x, n_tok * F, x16, s));
  unsigned long long* dcnt;
  CK(cudaMalloc(&dcnt, sizeof(unsigned long long)));

  struct Op {
    const char* what;
    GgmlType type;
    int64_t n_in, n_out;
    WeightView w;
  };
  Op ops[] = {{"wq", GgmlType::Q4_K, E, E, {}},     {"wk", GgmlType::Q4_K, E, KV, {}},
              {"wv", GgmlType::Q6_K, E, KV, {}},    {"wo", GgmlType::Q4_K, E, E, {}},
              {"w_gate", GgmlType::Q4_K, E, F, {}}, {"w_up", GgmlType::Q4_K, E, F, {}},
              {"w_down", GgmlType::Q6_K, F, E, {}}};
  double layer_bytes = 0;
  std::printf(
      "\n| op | type | n_in x n_out | dequant v2 ms | GB/s | /copy | dequant v3 ms | GB/s | /copy "
      "| v3 bits == v2 | cuBLAS alone ms | matmul legacy ms | matmul tile ms |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  double sum_v2 = 0, sum_v3 = 0, sum_gemm = 0, sum_legacy = 0, sum_tile = 0;
  for (Op& op : ops) {
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
    op.w.type = op.type;
    op.w.data = dw;
    op.w.n_in = op.n_in;
    op.w.n_out = op.n_out;
    layer_bytes += double(hw.size());
    const int64_t elems = op.n_in * op.n_out;
    const double traffic = double(hw.size()) + 2.0 * elems;  // read the blocks, write f16
    Stats d2 = time_it(s, 3, 20, [&] {
      ST(dequant_f16_launch(op.type, dw, op.n_in, op.n_out, w16a, s, DequantKernel::Rows));
    });
    Stats d3 = time_it(s, 3, 20, [&] {
      ST(dequant_f16_launch(op.type, dw, op.n_in, op.n_out, w16b, s, DequantKernel::Tile));
    });
    CK(cudaMemsetAsync(dcnt, 0, sizeof(unsigned long long), s));
    count_diff<<<132 * 8, 256, 0, s>>>(reinterpret_cast<const uint4*>(w16a),
                                       reinterpret_cast<const uint4*>(w16b), elems / 8, dcnt);
    unsigned long long diff = 0;
    CK(cudaMemcpyAsync(&diff, dcnt, sizeof(diff), cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    Stats sg = time_it(
        s, 3, 20, [&] { ST(matmul_gemm_f16(ctx, w16b, x16, op.n_in, op.n_out, n_tok, ygate, s)); });
    ctx.set_prefill_path(PrefillPath::Legacy);
    Stats ml = time_it(s, 3, 20, [&] { ST(matmul_cuda(ctx, op.w, x, n_tok, ygate, s)); });
    ctx.set_prefill_path(PrefillPath::Tile);
    Stats mt = time_it(s, 3, 20, [&] { ST(matmul_cuda(ctx, op.w, x, n_tok, ygate, s)); });
    const double g2 = traffic / (d2.med * 1e-3) / 1e9, g3 = traffic / (d3.med * 1e-3) / 1e9;
    const std::string same = diff == 0 ? "yes" : "NO: " + std::to_string(diff) + " chunks differ";
    std::printf(
        "| %s | %s | %5lld x %5lld | %.3f | %.0f | %.2f | %.3f | %.0f | %.2f | %s | %.3f | %.3f | "
        "%.3f |\n",
        op.what, ggml_type_name(op.type), (long long)op.n_in, (long long)op.n_out, d2.med, g2,
        g2 / cl.copy_gbps, d3.med, g3, g3 / cl.copy_gbps, same.c_str(), sg.med, ml.med, mt.med);
    sum_v2 += d2.med;
    sum_v3 += d3.med;
    sum_gemm += sg.med;
    sum_legacy += ml.med;
    sum_tile += mt.med;
  }
  std::printf("| sum | | | %.3f | | | %.3f | | | | %.3f | %.3f | %.3f |\n", sum_v2, sum_v3,
              sum_gemm, sum_legacy, sum_tile);
  // x -> f16, as the legacy path does once per weight (7) and the tile path once per group (4).
  for (int64_t n_in : {E, F}) {
    const int64_t n = n_tok * n_in;
    Stats cs = time_it(s, 3, 20, [&] { ST(convert_f32_f16_launch(x, n, x16, s, false)); });
    Stats cv = time_it(s, 3, 20, [&] { ST(convert_f32_f16_launch(x, n, x16, s, true)); });
    std::printf("x -> f16 (%lld x %lld): scalar %.4f ms (%.0f GB/s), vector %.4f ms (%.0f GB/s)\n",
                (long long)n_tok, (long long)n_in, cs.med, 6.0 * n / (cs.med * 1e-3) / 1e9, cv.med,
                6.0 * n / (cv.med * 1e-3) / 1e9);
  }

  // Attention over a cache holding the prompt at positions 0..n_tok-1 of sequence 0.
  AttentionParams ap;
  __half *kc, *vc;
  int32_t *pos, *seq;
  float* att;
  {
    const int32_t n_ctx = static_cast<int32_t>(n_tok);
    std::vector<__half> hk(size_t(n_ctx) * KV);
    auto f = randn(hk.size(), rng);
    for (size_t i = 0; i < hk.size(); ++i) hk[i] = __float2half(f[i]);
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
    CK(cudaMalloc(&att, n_tok * E * 4));
    ap.q = x;  // (n_tok, E): the first n_tok x E floats of x
    ap.k_cache = kc;
    ap.v_cache = vc;
    ap.pos = pos;
    ap.seq = seq;
    ap.out = att;
    ap.n_tok = n_tok;
    ap.n_head = m.n_head;
    ap.n_head_kv = m.n_head_kv;
    ap.head_dim = m.hd;
    ap.n_ctx = n_ctx;
    ap.scale = 1.0f / std::sqrt(float(m.hd));
    ap.chunk = kAttentionChunk;
    ap.n_split = attention_splits(n_tok, m.n_head, n_ctx - 1);
    const int64_t part_floats = attention_partial_floats(n_tok, m.n_head, m.hd, ap.n_split);
    CK(cudaMalloc(&ap.partial, std::max<int64_t>(part_floats, 1) * 4));
  }
  Stats sa = time_it(s, 3, 20, [&] { ST(attention_cuda(ap, s)); });
  std::printf("attention (tensor-core flash, %d / %d heads, hd %d): %.3f ms\n", m.n_head,
              m.n_head_kv, m.hd, sa.med);

  // The layer, as model/cuda_backend.cu enqueues it.
  auto layer = [&] {
    const WeightView qkv[3] = {ops[0].w, ops[1].w, ops[2].w};
    float* const oq[3] = {yq, yk, yv};
    ST(matmul_cuda_shared_x(ctx, qkv, oq, 3, x, n_tok, s));
    ST(attention_cuda(ap, s));
    ST(matmul_cuda(ctx, ops[3].w, att, n_tok, yo, s));
    const WeightView gu[2] = {ops[4].w, ops[5].w};
    float* const og[2] = {ygate, yup};
    ST(matmul_cuda_shared_x(ctx, gu, og, 2, x, n_tok, s));
    ST(matmul_cuda(ctx, ops[6].w, ygate, n_tok, yo, s));
  };
  const double n_params =
      double(m.n_layer) * (2 * E * E + 2 * E * KV + 3 * E * F) + double(m.V) * E;
  const double flop_tok = 2.0 * n_params;
  const double copy_ms = layer_bytes / (cl.h2d_gbps * 1e9) * 1e3;
  std::printf(
      "\n| path | layer ms: med min max | matmuls ms (layer - attention) | prompt ms (%lld layers) "
      "| "
      "tok/s | TFLOP/s (2N = %.2f GFLOP/token) | /bound %.0f |\n",
      (long long)m.n_layer, flop_tok / 1e9, cl.gemm_tflops);
  std::printf("|---|---|---|---|---|---|---|\n");
  double best_ms = 1e30;
  for (PrefillPath p : {PrefillPath::Legacy, PrefillPath::Tile, PrefillPath::Overlap}) {
    ctx.set_prefill_path(p);
    Stats sl = time_it(s, 3, 20, layer);
    const double prompt_ms = m.n_layer * sl.med;
    const double tps = n_tok / (prompt_ms * 1e-3);
    std::printf("| %s | %.3f %.3f %.3f | %.3f | %.2f | %.0f | %.1f | %.3f |\n",
                MatmulContext::prefill_path_name(p), sl.med, sl.min, sl.max, sl.med - sa.med,
                prompt_ms, tps, tps * flop_tok / 1e12, tps * flop_tok / 1e12 / cl.gemm_tflops);
    best_ms = std::min(best_ms, sl.med);
  }
  std::printf(
      "\nstreamed over PCIe: a layer is %.1f MB of Q4_K_M (this mix) = %.3f ms at %.1f GB/s H2D; "
      "best compute %.3f ms per layer; bound per layer max(copy, compute) = %.3f ms -> %.0f tok/s "
      "for %lld layers all streamed\n",
      layer_bytes / 1e6, copy_ms, cl.h2d_gbps, best_ms, std::max(copy_ms, best_ms),
      n_tok / (m.n_layer * std::max(copy_ms, best_ms) * 1e-3), (long long)m.n_layer);

  for (Op& op : ops) CK(cudaFree(const_cast<void*>(op.w.data)));
  for (void* p : {(void*)x, (void*)yq, (void*)yk, (void*)yv, (void*)yo, (void*)ygate, (void*)yup,
                  (void*)w16a, (void*)w16b, (void*)x16, (void*)dcnt, (void*)kc, (void*)vc,
                  (void*)pos, (void*)seq, (void*)att, (void*)ap.partial})
    CK(cudaFree(p));
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::pair<const Shape*, int64_t>> runs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    const size_t c = a.find(':');
    const Shape* sh = &k8b;
    if (c != std::string::npos) {
      const std::string mname = a.substr(0, c);
      if (mname == "70b")
        sh = &k70b;
      else if (mname != "8b") {
        std::fprintf(stderr, "ls_bench_prefill: unknown model '%s' (8b or 70b)\n", mname.c_str());
        return 2;
      }
      a = a.substr(c + 1);
    }
    const int64_t n = std::atoll(a.c_str());
    if (n < 9) {
      std::fprintf(stderr,
                   "ls_bench_prefill: '%s': a prompt of at least 9 tokens (the GEMM path)\n",
                   argv[i]);
      return 2;
    }
    runs.push_back({sh, n});
  }
  if (runs.empty()) runs = {{&k8b, 512}, {&k70b, 512}, {&k70b, 2048}};
  std::mt19937_64 rng(99);
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  Ceilings cl;
  {
    auto ctx_or = MatmulContext::create(s, 0);
    if (!ctx_or) {
      std::fprintf(stderr, "%s\n", ctx_or.error().message.c_str());
      return 1;
    }
    std::printf("GEMM backend: %s\n", (*ctx_or)->gemm_backend());
    cl = measure_ceilings(**ctx_or, s, rng);
  }
  for (auto& [sh, n] : runs) bench_model(*sh, n, cl, s, rng);
  return 0;
}
