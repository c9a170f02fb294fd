// The row-by-row q8 dot at widths 1..8, one thread, thread CPU time; weights in L2 (compute rate) or
// rotating through 512 MiB (memory).
#include <time.h>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>
#include "kernels/cpu/matmul_cpu.h"
#include "tests/unit/kernels/random_quant.h"
using namespace ls;
static double cpu_s() { timespec ts; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); return ts.tv_sec + ts.tv_nsec * 1e-9; }
int main() {
  std::mt19937 rng(1);
  ThreadPool pool(1);
  for (auto t : {GgmlType::Q4_K, GgmlType::Q6_K}) {
    const int64_t n_in = 2048, n_out = 2048;
    const uint64_t wbytes = ggml_row_bytes(t, n_in) * n_out;
    const int64_t copies = (512ll << 20) / wbytes;
    auto one = test::random_weight(t, n_in, n_out, rng);
    std::vector<uint8_t> big(wbytes * copies);
    for (int64_t c = 0; c < copies; ++c) memcpy(big.data() + c * wbytes, one.data(), wbytes);
    for (int64_t ntok : {1, 2, 4, 8}) {
      auto x = test::random_x(n_in * ntok, rng);
      std::vector<float> y(ntok * n_out);
      CpuMatmulScratch sc(1, n_in);
      const ActQ8View xv = matmul_cpu_quantize(x.data(), ntok, n_in, sc, CpuIsa::Avx2);
      for (int mem = 0; mem < 2; ++mem) {
        double best = 1e9;
        for (int r = 0; r < 12; ++r) {
          const WeightView w{t, mem ? big.data() + (r % copies) * wbytes : one.data(), n_in, n_out};
          double t0 = cpu_s();
          matmul_cpu_q8(pool, w, xv, ntok, y.data(), CpuIsa::Avx2);
          best = std::min(best, cpu_s() - t0);
        }
        printf("%-5s 2048x2048 ntok %ld %-6s: %7.3f ms  %6.2f GB/s of weights  %5.1f GMAC/cpu-s\n", ggml_type_name(t), (long)ntok, mem ? "dram" : "cache", best * 1e3, wbytes / best / 1e9, double(n_in) * n_out * ntok / best / 1e9);
      }
    }
  }
}
