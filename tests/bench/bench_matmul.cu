// bench_matmul: matmul_cuda at the Llama-3-8B shapes, against the machine's
// measured limits, in one run:
//   bound 1: device-memory bandwidth, a 2 GiB cudaMemcpy D2D counting bytes
//            read + written (median of 20);
//   bound 2: cuBLAS f16 GEMM (f32 accumulate) on an 8192^3 product and on
//            each benchmarked shape (the dequantized weight, median of 20).
// Decode (n_tok = 1, fused GEMV): GB/s of weight bytes, ratio to bound 1;
// then each GEMV version (kernels/gemv_q.cu v2 and v4 with f32 x; kernels/
// gemv_q8.cu v5 with int8 x, timed with its quantization of x) at n_tok 1,
// 2, 4, 8.
// Prefill (n_tok = 512, dequant + GEMM): TFLOP/s of 2·n_tok·n_in·n_out,
// ratio to the same shape's pure cuBLAS GEMM.
// Each timing: CUDA events around one call, warm-up first, median / min /
// max of >= 50 runs (decode) or 20 (prefill), rotating among weight copies
// whose total exceeds the 60 MB L2 several times, so decode reads DRAM.
// Weights: 64 rows of random floats quantized with quantize_row, tiled.
// Usage: ls_bench_matmul [out.json]
//        ls_bench_matmul --widths [70b] (the bound, then per type and shape
//                                   matmul_cuda at 2, 4, 8, 16, 32, 64 tokens:
//                                   the default path (GEMV to 8, the int8 GEMM
//                                   of kernels/mmq_q8.cuh from 9) against, at
//                                   2-8, that GEMM forced ("mmq!") and from
//                                   16 dequantize + cuBLAS; and at every
//                                   width its register ("reg!") and streamed
//                                   ("str!") kernels forced; us, GB/s of
//                                   weight bytes and the ratio to the bound)
//        ls_bench_matmul --graph [70b]  (the bound and the graph x20 lines
//                                   only: each decode GEMV form as decode
//                                   runs it: x already int8, PDL, in a CUDA
//                                   graph; 70b: the Llama-3-70B shapes)
//        ls_bench_matmul --graph [70b] --hold-sms N  (the same with N SMs held
//                                   by waiting blocks while each form is
//                                   timed (tests/bench/sm_hold.cuh): on an
//                                   H100, 38 held leave each SM an H200's
//                                   share of the bandwidth to bring; the
//                                   bound is measured on all SMs)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/dequant.cuh"
#include "io/ggml_type.h"
#include "kernels/gemv_q.cuh"
#include "kernels/gemv_q8.cuh"
#include "kernels/quantize_act.cuh"
#include "kernels/matmul.cuh"
#include "kernels/mmq_stream.cuh"
#include "kernels/pdl.cuh"
#include "kernels/ref/quant.h"

#include "tests/bench/bench_util.cuh"
#include "tests/bench/sm_hold.cuh"

using namespace ls;

int main(int argc, char** argv) {
  const bool graph_only = argc > 1 && std::string(argv[1]) == "--graph";
  const bool widths_only = argc > 1 && std::string(argv[1]) == "--widths";
  const bool shapes_70b = (graph_only || widths_only) && argc > 2 && std::string(argv[2]) == "70b";
  int hold_sms = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) != "--hold-sms") continue;
    char* end = nullptr;
    const long v = i + 1 < argc ? std::strtol(argv[i + 1], &end, 10) : -1;
    if (!graph_only || i + 1 >= argc || *end != '\0' || end == argv[i + 1] || v < 0) {
      std::fprintf(stderr, "--hold-sms N: N a whole number of SMs, after --graph [70b]\n");
      return 2;
    }
    hold_sms = static_cast<int>(v);
  }
  std::mt19937_64 rng(1234);
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount,
              prop.l2CacheSize >> 20);

  const double bw = d2d_bound_gbs(s);  // bound 1
  SmHold hold(hold_sms, s);           // after the bound: it is the device's, on every SM

  const int64_t max_elems = int64_t(128256) * (shapes_70b ? 8192 : 4096);
  auto ctx_or = MatmulContext::create(s, max_elems);
  if (!ctx_or) {
    std::fprintf(stderr, "%s\n", ctx_or.error().message.c_str());
    return 1;
  }
  MatmulContext& ctx = **ctx_or;
  std::printf("GEMM backend: %s\n", ctx.gemm_backend());

  // Bound 2: an 8192^3 f16 GEMM through the same call the prefill path uses.
  if (!graph_only && !widths_only) {
    const int64_t n = 8192;
    uint16_t *w16, *x16;
    float* y;
    CK(cudaMalloc(&w16, n * n * 2));
    CK(cudaMalloc(&x16, n * n * 2));
    CK(cudaMalloc(&y, n * n * 4));
    std::vector<float> hx = randn(size_t(n) * n, rng);
    float* dx;
    CK(cudaMalloc(&dx, n * n * 4));
    CK(cudaMemcpy(dx, hx.data(), n * n * 4, cudaMemcpyHostToDevice));
    ST(convert_f32_f16_launch(dx, n * n, w16, s));
    ST(convert_f32_f16_launch(dx, n * n, x16, s));
    Stats g = time_it(s, 3, 20, [&](int) { ST(matmul_gemm_f16(ctx, w16, x16, n, n, n, y, s)); });
    std::printf("bound: f16 GEMM 8192^3 %.0f TFLOP/s (median of 20, random data)\n",
                2.0 * n * n * n / (g.med * 1e-3) / 1e12);
    CK(cudaFree(w16));
    CK(cudaFree(x16));
    CK(cudaFree(y));
    CK(cudaFree(dx));
  }

  struct Shape {
    int64_t n_in, n_out;
    const char* what;
  };
  const std::vector<Shape> shapes =
      shapes_70b ? std::vector<Shape>{{8192, 8192, "attn q/o"},
                                      {8192, 1024, "attn k/v"},
                                      {8192, 28672, "ffn gate/up"},
                                      {28672, 8192, "ffn down"},
                                      {8192, 128256, "output"}}
                 : std::vector<Shape>{{4096, 4096, "attn q/o"},
                                      {4096, 6144, "attn q|k|v"},  // the rows of one launch
                                      {4096, 14336, "ffn gate/up"},
                                      {14336, 4096, "ffn down"},
                                      {4096, 128256, "output"}};
  const GgmlType types[] = {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q8_0};
  std::string json = "[";
  std::vector<std::string> rows;
  std::vector<std::string> multi_rows;
  for (GgmlType t : types)
    for (const Shape& sh : shapes) {
      const int64_t rb = ggml_row_bytes(t, sh.n_in);
      const size_t bytes = size_t(rb) * sh.n_out;
      // 64 quantized random rows, tiled over the matrix.
      std::vector<uint8_t> pat(size_t(rb) * 64);
      for (int r = 0; r < 64; ++r) {
        auto f = randn(sh.n_in, rng);
        quantize_row(t, f.data(), pat.data() + r * rb, sh.n_in);
      }
      std::vector<uint8_t> host(bytes);
      for (int64_t r = 0; r < sh.n_out; ++r)
        std::memcpy(host.data() + r * rb, pat.data() + (r % 64) * rb, rb);
      const int copies = std::max<int>(2, int((size_t(512) << 20) / bytes + 1));
      std::vector<void*> dw(copies);
      for (auto& p : dw) {
        CK(cudaMalloc(&p, bytes));
        CK(cudaMemcpy(p, host.data(), bytes, cudaMemcpyHostToDevice));
      }
      const int64_t ntok_pf = 512;
      auto hx = randn(size_t(ntok_pf) * sh.n_in, rng);
      float *dx, *dy;
      CK(cudaMalloc(&dx, hx.size() * 4));
      CK(cudaMalloc(&dy, size_t(ntok_pf) * sh.n_out * 4));
      CK(cudaMemcpy(dx, hx.data(), hx.size() * 4, cudaMemcpyHostToDevice));

      if (widths_only) {
        if (sh.n_out > 100000) {  // the output head: not a batched layer's shape
          for (auto p : dw) CK(cudaFree(p));
          CK(cudaFree(dx));
          CK(cudaFree(dy));
          continue;
        }
        std::printf("  widths %-4s %-11s %5lld x %6lld %7.1f MB:", ggml_type_name(t), sh.what,
                    (long long)sh.n_in, (long long)sh.n_out, bytes / 1e6);
        // At 2-8 tokens the GEMV (the default) against the int8 GEMM forced
        // (MatmulPath::Mmq), which the default takes only from kMmqMinTok;
        // from 16 the default against dequantize + cuBLAS. Session 38 (H100):
        // the GEMM forced at 8 tokens read 1.25-1.31x the GEMV on the 70b's
        // Q4_K q/o and down, and lost on Q6_K, Q8_0, the k/v shapes and at 2-4
        // tokens; the engine with it from width 2 ran its width-8 GPU layers no
        // faster (0.61 against 0.58 ms), so the default stays.
        // Then the int8 GEMM's two kernels forced at every width: "reg!" the
        // register one, "str!" the streamed one (kernels/mmq_stream.cuh),
        // where the shape takes it.
        for (int64_t nt : {2, 4, 8, 16, 32, 64})
          for (int v = 0; v < 5; ++v) {
            const MatmulPath path = v == 0   ? MatmulPath::Auto
                                    : v == 1 ? MatmulPath::GemmCublas
                                             : MatmulPath::Mmq;
            if (nt <= 8 ? v == 1 : v == 2) continue;
            if (v == 4 && sh.n_in % kMmqStreamChunk != 0) continue;
            ctx.set_path(path);
            ctx.set_mmq_version(v >= 3 ? v - 2 : 0);
            const Stats st = time_it(s, 3, 30, [&](int i) {
              ST(matmul_cuda(ctx, WeightView{t, dw[i % copies], sh.n_in, sh.n_out}, dx, nt, dy, s));
            });
            const double g = bytes / (st.med * 1e-3) / 1e9;
            static const char* const kName[5] = {"auto", "f16 ", "mmq!", "reg!", "str!"};
            std::printf(" | n=%lld %s %7.1f us %5.0f GB/s %.2f", (long long)nt, kName[v],
                        st.med * 1e3, g, g / bw);
          }
        ctx.set_mmq_version(0);
        std::printf("\n");
        std::fflush(stdout);
        ctx.set_path(MatmulPath::Auto);
        for (auto p : dw) CK(cudaFree(p));
        CK(cudaFree(dx));
        CK(cudaFree(dy));
        continue;
      }

      ctx.set_path(MatmulPath::Auto);
      Stats dec = time_it(s, 5, 60, [&](int i) {
        ST(matmul_cuda(ctx, WeightView{t, dw[i % copies], sh.n_in, sh.n_out}, dx, 1, dy, s));
      });
      const double gbs = bytes / (dec.med * 1e-3) / 1e9;
      // Each GEMV version at n_tok = 1, 2, 4, 8 (W read once per batch). v5
      // (int8 x, kernels/gemv_q8.cu) is timed as matmul_cuda runs it:
      // quantize x, then the GEMV; "v5r2" and "v5r8" are its 2- and
      // 8-rows-per-block variants, "v6r2" and "v6r8" those of v6 (two
      // x-blocks per lane; n_tok 1 only).
      ActQ8Device xq{};
      CK(cudaMalloc(&xq.q, size_t(8) * sh.n_in));
      CK(cudaMalloc(&xq.ds, size_t(8) * sh.n_in / 32 * sizeof(float2)));
      auto run_graph = [&] {
        // As decode runs them: 20 calls (rotating copies) captured in one CUDA
        // graph, so launch gaps are the GPU's, not the host's, with
        // programmatic dependent launch (a PdlScope, as the backend captures
        // a layer); the int8 x made once before the graph, since in decode
        // the kernel before a GEMV makes it (until session 13 each call here
        // also ran a quantize launch, ~2.6 us). us per call.
        ST(quantize_act_q8_cuda(dx, 1, sh.n_in, xq, s));
        CK(cudaStreamSynchronize(s));
        PdlScope pdl;
        {
          char gl[1024];
          int glen = std::snprintf(gl, sizeof gl,
                                   "  graph x20 n_tok=1 %-4s %-11s:", ggml_type_name(t), sh.what);
          // v7*: the direct form (GemvQ8Params::version 7; the K-quants): v7 its
          // default (4 rows, two x-blocks a lane), v72 / v78 2 and 8 rows, v71
          // one x-block a lane. v5x (Q8_0, the staged kernel): v5 its default
          // (the shape that fits the waves), v51 / v53 4 rows with one / two
          // stages (v53 the shape before session 20), v52 2 rows.
          // v7e: v7 with the first tile's loads before the PDL wait
          // (GemvQ8Params::early; in a graph of 20, each call's loads overlap
          // the call before's end). v7a: v7 with each block asking the L2
          // for the rows 8 MiB after its own (GemvQ8Params::ahead); v7p: v7
          // with plain loads, not streaming ones (::plain_loads).
          for (int ver : {2, 5, 51, 52, 53, 6, 62, 68, 7, 70, 73, 74, 72, 78, 71}) {
            const int variant = ver;  // v70, v73, v74: forms of v7 (tagged e, a, p)
            const char* tag = variant == 70 ? "e" : variant == 73 ? "a" : variant == 74 ? "p" : "";
            if (*tag) ver = 7;
            const bool staged = ver >= 51 && ver <= 53;
            if (ver >= 5 && !gemv_q8_supports(t)) continue;
            if (t == GgmlType::Q8_0 ? ver >= 6 && !staged : staged) continue;
            hold.start();
            const double us = graph_us(s, 20, [&](int i) {
              if (ver == 2) {
                GemvParams gp{static_cast<const uint8_t*>(dw[i % copies]),
                              dx,
                              dy,
                              sh.n_in,
                              sh.n_out,
                              rb,
                              1,
                              2};
                ST(gemv_q_f32_launch(t, gp, s));
              } else {
                GemvQ8Params gp{static_cast<const uint8_t*>(dw[i % copies]),
                                xq,
                                dy,
                                sh.n_in,
                                sh.n_out,
                                rb,
                                1,
                                ver == 62 || ver == 72 || ver == 52 ? 2
                                : ver == 68 || ver == 78            ? 8
                                                                    : 0,
                                ver == 5 || ver == 71 || staged ? 1 : 2};
                gp.version = ver == 7 || ver == 71 || ver == 72 || ver == 78 ? 7 : 0;
                gp.stages = ver == 51 ? 1 : ver == 53 ? 2 : 0;
                gp.early = variant == 70;
                gp.ahead = variant == 73 ? int64_t{8} << 20 : 0;
                gp.plain_loads = variant == 74;
                ST(gemv_q8_launch(t, gp, s));
              }
            });
            hold.stop();
            const double g = bytes / (us * 1e-6) / 1e9;
            glen += std::snprintf(gl + glen, sizeof gl - glen, " v%d%s %6.1f us %5.0f GB/s %.2f |",
                                  ver, tag, us, g, g / bw);
          }
          multi_rows.push_back(gl);
          std::printf("%s\n", gl);
          std::fflush(stdout);
        }
      };
      if (graph_only) {
        run_graph();
        CK(cudaFree(xq.q));
        CK(cudaFree(xq.ds));
        for (auto p : dw) CK(cudaFree(p));
        CK(cudaFree(dx));
        CK(cudaFree(dy));
        continue;
      }
      for (int ver : {2, 4, 5, 52, 58, 6, 62, 68}) {
        if (ver >= 5 && !gemv_q8_supports(t)) continue;
        if (ver >= 6 && ver != 52 && ver != 58 && t == GgmlType::Q8_0)
          continue;  // two x-blocks per lane: K-quants only
        char multi[512];
        int mlen = std::snprintf(multi, sizeof multi, "  gemv %-4s %-4s %-11s:",
                                 ver == 52   ? "v5r2"
                                 : ver == 58 ? "v5r8"
                                 : ver == 62 ? "v6r2"
                                 : ver == 68 ? "v6r8"
                                 : ver == 6  ? "v6"
                                 : ver == 5  ? "v5"
                                 : ver == 4  ? "v4"
                                             : "v2",
                                 ggml_type_name(t), sh.what);
        for (int nt : {1, 2, 4, 8}) {
          if (ver >= 5) {
            if ((ver > 6 && nt != 1) || (ver == 6 && nt > 2)) continue;  // variants: n_tok 1
            Stats d = time_it(s, 3, 40, [&](int i) {
              ST(quantize_act_q8_cuda(dx, nt, sh.n_in, xq, s));
              GemvQ8Params gp{static_cast<const uint8_t*>(dw[i % copies]),
                              xq,
                              dy,
                              sh.n_in,
                              sh.n_out,
                              rb,
                              nt,
                              ver == 52 || ver == 62 ? 2 : (ver == 58 || ver == 68 ? 8 : 0),
                              ver == 6 || ver == 62 || ver == 68 ? 2 : 1};
              ST(gemv_q8_launch(t, gp, s));
            });
            const double g = bytes / (d.med * 1e-3) / 1e9;
            mlen +=
                std::snprintf(multi + mlen, sizeof multi - mlen,
                              " n_tok=%d %6.1f us %5.0f GB/s %.2f |", nt, d.med * 1e3, g, g / bw);
            continue;
          }
          if (ver == 4 &&
              int64_t(nt) * sh.n_in * 4 > 100 * 1024) {  // v4's x must fit its shared memory
            mlen += std::snprintf(multi + mlen, sizeof multi - mlen,
                                  " n_tok=%d  (x too large for v4)       |", nt);
            continue;
          }
          Stats d = time_it(s, 3, 40, [&](int i) {
            GemvParams gp{static_cast<const uint8_t*>(dw[i % copies]),
                          dx,
                          dy,
                          sh.n_in,
                          sh.n_out,
                          rb,
                          nt,
                          ver};
            ST(gemv_q_f32_launch(t, gp, s));
          });
          const double g = bytes / (d.med * 1e-3) / 1e9;
          mlen += std::snprintf(multi + mlen, sizeof multi - mlen,
                                " n_tok=%d %6.1f us %5.0f GB/s %.2f |", nt, d.med * 1e3, g, g / bw);
        }
        multi_rows.push_back(multi);
        std::printf("%s\n", multi);
        std::fflush(stdout);
      }
      run_graph();
      CK(cudaFree(xq.q));
      CK(cudaFree(xq.ds));
      Stats pf = time_it(s, 3, 20, [&](int i) {
        ST(matmul_cuda(ctx, WeightView{t, dw[i % copies], sh.n_in, sh.n_out}, dx, ntok_pf, dy, s));
      });
      const double flop = 2.0 * ntok_pf * sh.n_in * sh.n_out;
      const double tf = flop / (pf.med * 1e-3) / 1e12;
      // The same shape's pure GEMM (W already f16, x already f16).
      uint16_t *w16, *x16;
      CK(cudaMalloc(&w16, size_t(sh.n_in) * sh.n_out * 2));
      CK(cudaMalloc(&x16, hx.size() * 2));
      ST(dequant_f16_launch(t, dw[0], sh.n_in, sh.n_out, w16, s));
      ST(convert_f32_f16_launch(dx, int64_t(hx.size()), x16, s));
      Stats gm = time_it(s, 3, 20, [&](int) {
        ST(matmul_gemm_f16(ctx, w16, x16, sh.n_in, sh.n_out, ntok_pf, dy, s));
      });
      const double tf_bound = flop / (gm.med * 1e-3) / 1e12;
      char line[512];
      std::snprintf(line, sizeof line,
                    "| %-4s | %-11s | %5lld x %6lld | %7.1f | %7.1f %7.1f %7.1f | %5.0f | %4.2f | "
                    "%7.3f | %5.0f | %5.0f | %4.2f |",
                    ggml_type_name(t), sh.what, (long long)sh.n_in, (long long)sh.n_out,
                    bytes / 1e6, dec.med * 1e3, dec.min * 1e3, dec.max * 1e3, gbs, gbs / bw, pf.med,
                    tf, tf_bound, tf / tf_bound);
      rows.push_back(line);
      char js[512];
      std::snprintf(js, sizeof js,
                    "%s{\"type\":\"%s\",\"n_in\":%lld,\"n_out\":%lld,\"weight_bytes\":%zu,\"decode_"
                    "ms\":{\"median\":%.5f,\"min\":%.5f,\"max\":%.5f},"
                    "\"decode_gbps\":%.1f,\"bw_gbps\":%.1f,\"prefill512_ms\":%.4f,\"prefill_"
                    "tflops\":%.1f,\"gemm_only_tflops\":%.1f}",
                    json.size() > 1 ? "," : "", ggml_type_name(t), (long long)sh.n_in,
                    (long long)sh.n_out, bytes, dec.med, dec.min, dec.max, gbs, bw, pf.med, tf,
                    tf_bound);
      json += js;
      std::printf("%s\n", line);
      std::fflush(stdout);
      for (auto p : dw) CK(cudaFree(p));
      CK(cudaFree(dx));
      CK(cudaFree(dy));
      CK(cudaFree(w16));
      CK(cudaFree(x16));
    }
  json += "]\n";
  std::printf(
      "\nbound: D2D %.0f GB/s. decode n_tok=1 (fused GEMV, median of 60 over rotated copies); "
      "prefill n_tok=512 (dequant+GEMM, median of 20)\n",
      bw);
  std::printf(
      "| type | matrix      | n_in x n_out   | W MB    | n_tok=1 us: med min max | GB/s  | /bw  | "
      "n_tok=512 ms | TF/s | cuBLAS same-shape TF/s | ratio |\n");
  for (auto& r : rows) std::printf("%s\n", r.c_str());
  for (auto& r : multi_rows) std::printf("%s\n", r.c_str());
  if (argc > 1 && !graph_only && !widths_only) {
    FILE* f = std::fopen(argv[1], "w");
    if (f) {
      std::fputs(json.c_str(), f);
      std::fclose(f);
    }
  }
  return 0;
}
