// bench_attention: decode attention (one token a sequence, attention_cuda with
// its reduce pass) at the 8b's and the 70b's head shapes, contexts of 256 to
// 32k positions, against the device-memory bound measured in the same run
// (a 2 GiB D2D copy, bytes read + written).
// Each figure: calls captured in one CUDA graph (as decode runs them), each
// call on another layer's cache, enough layers that their K and V exceed the
// L2 several times over, so every call reads DRAM as a decode step does (the
// step's weights pass through L2 between one layer's attention calls).
// GB/s counts the K and V bytes the call must read (positions x KV width x 2
// bytes x 2), the ratio is to the bound. Rows: each decode kernel
// (AttentionParams::kernel 3 and 5; "k5tc" where 5 runs as the tensor-core kernel of
// kernels/attention_decode_tc.cuh) with the fixed chunks of 256 positions and with chunks cut
// from the row's length (chunk 0), paged through a block table as the engine's cache is.
// --splits: the default kernel with chunks cut from the row's length at 4 to
// 256 splits (powers of 2 and 24, 48, 96), for choosing attention_splits_dynamic's rule.
// Kernel 6 is the row kernel of one token's short rows (kernels/
// attention_decode_row.cuh: one split, no reduce pass); --short runs the
// contexts 16, 64, 128, 256 and 384, where it can apply.
// --shape 8b|70b runs that shape only, --ctx N that context only.
// Usage: ls_bench_attention [kernels, e.g. 3,5,6] [--splits] [--short] [--shape 8b|70b] [--ctx N]
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
#include "kernels/attention_decode_row.cuh"
#include "kernels/attention_decode_tc.cuh"
#include "tests/bench/bench_util.cuh"

using namespace ls;

int main(int argc, char** argv) {
  std::vector<int> kernels = {3, 5};
  bool sweep = false;
  bool short_rows = false;  // --short: the contexts of the row kernel
  std::string only_shape;  // --shape 8b|70b: that shape only
  int32_t only_ctx = 0;    // --ctx N: that context only
  for (int a = 1; a < argc; ++a) {
    if (std::string(argv[a]) == "--splits") {
      sweep = true;
      continue;
    }
    if (std::string(argv[a]) == "--short") {
      short_rows = true;
      continue;
    }
    if (std::string(argv[a]) == "--shape" || std::string(argv[a]) == "--ctx") {
      if (a + 1 >= argc) {
        std::fprintf(stderr, "error: %s needs a value\n", argv[a]);
        return 2;
      }
      if (std::string(argv[a]) == "--shape") {
        only_shape = argv[++a];
        if (only_shape != "8b" && only_shape != "70b") {
          std::fprintf(stderr, "error: --shape must be 8b or 70b, got '%s'\n", argv[a]);
          return 2;
        }
      } else {
        only_ctx = static_cast<int32_t>(std::atol(argv[++a]));
        if (only_ctx < 1 || only_ctx > 32768) {
          std::fprintf(stderr, "error: --ctx must be 1..32768, got '%s'\n", argv[a]);
          return 2;
        }
      }
      continue;
    }
    kernels.clear();
    for (const char* c = argv[a]; *c;) {
      char* e;
      const long k = std::strtol(c, &e, 10);
      if (e == c || (k != 3 && k != 5 && k != 6)) {
        std::fprintf(stderr, "error: kernels must be a list of 3, 5 and 6, got '%s'\n", argv[a]);
        return 2;
      }
      kernels.push_back(static_cast<int>(k));
      c = *e == ',' ? e + 1 : e;
    }
  }
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount,
              prop.l2CacheSize >> 20);
  const double bw = d2d_bound_gbs(s);

  struct Shape {
    const char* what;
    int32_t n_head, n_head_kv, hd;
  };
  const Shape shapes[] = {{"8b", 32, 8, 128}, {"70b", 64, 8, 128}};
  const std::vector<int32_t> ctxs =
      only_ctx     ? std::vector<int32_t>{only_ctx}
      : short_rows ? std::vector<int32_t>{16, 64, 128, 256, 384}
                   : std::vector<int32_t>{256, 1024, 4096, 16384, 32768};
  const int32_t max_ctx = 32768;
  const size_t pool_bytes = size_t(3) << 30;  // K and V of all rotated layers
  std::mt19937_64 rng(7);
  void* pool;
  CK(cudaMalloc(&pool, pool_bytes));
  {  // random f16 in [-1, 1): scores of a realistic spread, never inf
    std::vector<__half> h(size_t(1) << 24);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (auto& v : h) v = __float2half(u(rng));
    for (size_t off = 0; off < pool_bytes; off += h.size() * 2)
      CK(cudaMemcpy(static_cast<char*>(pool) + off, h.data(),
                    std::min(h.size() * 2, pool_bytes - off), cudaMemcpyHostToDevice));
  }
  // Identity block table: position p of slot 0 in pool row p of each layer.
  std::vector<int32_t> table(max_ctx / kKvBlockLen);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(i);
  int32_t *dtable, *dpos, *dseq;
  CK(cudaMalloc(&dtable, table.size() * 4));
  CK(cudaMemcpy(dtable, table.data(), table.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMalloc(&dpos, 4));
  CK(cudaMalloc(&dseq, 4));
  CK(cudaMemset(dseq, 0, 4));
  float *dq, *dout, *dpart;
  CK(cudaMalloc(&dq, 64 * 128 * 4));
  CK(cudaMalloc(&dout, 64 * 128 * 4));
  {
    auto q = randn(64 * 128, rng);
    CK(cudaMemcpy(dq, q.data(), q.size() * 4, cudaMemcpyHostToDevice));
  }
  const int64_t part_floats = attention_partial_floats(1, 64, 128, max_ctx / 32);
  CK(cudaMalloc(&dpart, part_floats * 4));

  std::printf("\ndecode attention, 1 token: us per call (graph), GB/s of K+V read, ratio to D2D\n");
  for (const Shape& sh : shapes) {
    if (!only_shape.empty() && only_shape != sh.what) continue;
    for (int32_t ctx : ctxs) {
      const int32_t pos = ctx - 1;
      CK(cudaMemcpy(dpos, &pos, 4, cudaMemcpyHostToDevice));
      const size_t kv_row = static_cast<size_t>(sh.n_head_kv) * sh.hd * 2;  // bytes
      const size_t layer = 2 * static_cast<size_t>(ctx) * kv_row;  // a layer's K, then its V
      const int layers = static_cast<int>(std::min<size_t>(pool_bytes / layer, 1 << 20));
      const double kv_bytes = 2.0 * ctx * kv_row;
      // Enough calls that they read 8x the L2, and at least 20.
      const int calls = std::max(20, static_cast<int>(8.0 * prop.l2CacheSize / kv_bytes) + 1);
      char line[1024];
      int len = std::snprintf(line, sizeof line, "  %-3s ctx %5d:", sh.what, ctx);
      struct Variant {
        int kern;
        bool dyn;
        int32_t n_split;
      };
      std::vector<Variant> vars;
      if (sweep) {
        for (int32_t ns : {4, 8, 16, 24, 32, 48, 64, 96, 128, 256})
          if (ns * kAttentionMinChunk <= ctx) vars.push_back({0, true, ns});
      } else {
        for (int kern : kernels)
          for (int dyn = 0; dyn < 2; ++dyn) {
            if (kern == 6) {  // one split, whatever the rule
              if (dyn && ctx <= kAttentionRowMax) vars.push_back({6, true, 1});
              continue;
            }
            vars.push_back({kern, dyn != 0,
                            dyn ? attention_splits_dynamic(1, sh.n_head, pos)
                                : attention_splits(1, sh.n_head, pos)});
          }
      }
      for (const Variant& v : vars) {
        AttentionParams p;
        p.q = dq;
        p.out = dout;
        p.partial = dpart;
        p.pos = dpos;
        p.seq = dseq;
        p.pages.table = dtable;
        p.pages.max_blocks = static_cast<int32_t>(table.size());
        p.n_tok = 1;
        p.n_head = sh.n_head;
        p.n_head_kv = sh.n_head_kv;
        p.head_dim = sh.hd;
        p.scale = 1.0f / std::sqrt(static_cast<float>(sh.hd));
        p.chunk = v.dyn ? 0 : kAttentionChunk;
        p.n_split = v.n_split;
        p.max_pos = pos;  // the kernel and its form as decode picks them
        p.kernel = v.kern == 6 ? 0 : v.kern;
        p.row = v.kern == 6 ? 1 : 0;  // the others as before the row kernel
        const double us = graph_us(s, calls, [&](int i) {
          char* base = static_cast<char*>(pool) + static_cast<size_t>(i % layers) * layer;
          p.k_cache = base;
          p.v_cache = base + layer / 2;
          ST(attention_cuda(p, s));
        });
        const double g = kv_bytes / (us * 1e-6) / 1e9;
        // k5 is the grouped kernel, or its tensor-core form for long splits: "k5tc".
        const bool tc = v.kern != 3 && v.kern != 6 && attention_decode_tc_applies(p);
        char kname[8];
        if (v.kern == 6)
          std::snprintf(kname, sizeof kname, "row");
        else if (v.kern)
          std::snprintf(kname, sizeof kname, "k%d%s", v.kern, tc ? "tc" : "");
        else
          std::snprintf(kname, sizeof kname, "dflt%s", tc ? "tc" : "");
        len += std::snprintf(line + len, sizeof line - len,
                             " | %s %s %3d splits %7.1f us %5.0f GB/s %.2f", kname,
                             v.dyn ? "dyn" : "fix", p.n_split, us, g, g / bw);
      }
      std::printf("%s\n", line);
      std::fflush(stdout);
    }
  }
  std::printf("\nbound: D2D %.0f GB/s\n", bw);
  return 0;
}
