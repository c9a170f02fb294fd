// Kernel bench on one thread, timed in thread CPU time (robust to a shared machine).
#include <time.h>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>
#include <immintrin.h>
#include "kernels/cpu/gemm_q8.h"
#include "kernels/cpu/matmul_cpu.h"
#include "tests/unit/kernels/random_quant.h"
using namespace ls;
static double cpu_s() { timespec ts; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); return ts.tv_sec + ts.tv_nsec * 1e-9; }
__attribute__((target("avx2"))) static double peak() {
  __m256i a[12]; __m256i w = _mm256_set1_epi8(3), x = _mm256_set1_epi8(5);
  for (auto& v : a) v = _mm256_setzero_si256();
  const long n = 20000000; double t0 = cpu_s();
  for (long k = 0; k < n; ++k) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) { a[i] = _mm256_add_epi16(a[i], _mm256_maddubs_epi16(w, x)); asm volatile("" : "+x"(a[i])); }
  }
  return n * 12.0 * 32 / (cpu_s() - t0);
}
int main(int argc, char** argv) {
  std::string types = argc > 1 ? argv[1] : "q4_k,q6_k";
  int64_t ntok = argc > 2 ? atoi(argv[2]) : 256;
  const char* path = argc > 3 ? argv[3] : "gemm";
  std::mt19937 rng(1);
  ThreadPool pool(1);
  const double pk = peak();
  printf("peak maddubs: %.1f GMAC per cpu-s\n", pk / 1e9);
  struct S { int64_t n_in, n_out; } s1b[] = {{2048, 2048}, {2048, 8192}, {8192, 2048}, {2048, 512}}, s70[] = {{8192, 8192}, {8192, 28672}, {28672, 8192}, {8192, 1024}};
  const bool big = argc > 4 && !strcmp(argv[4], "70b");
  const int reps = big ? 2 : 4;
  for (size_t a = 0, b; a < types.size(); a = b + 1) {
    b = types.find(',', a); if (b == std::string::npos) b = types.size();
    auto t = *ggml_type_from_name(types.substr(a, b - a));
    for (auto s : big ? s70 : s1b) {
      auto wb = test::random_weight(t, s.n_in, s.n_out, rng);
      auto x = test::random_x(s.n_in * ntok, rng);
      std::vector<float> y(ntok * s.n_out);
      CpuMatmulScratch sc(1, s.n_in);
      const ActQ8View xv = matmul_cpu_quantize(x.data(), ntok, s.n_in, sc, CpuIsa::Avx2);
      const WeightView w{t, wb.data(), s.n_in, s.n_out};
      const MatmulQ8Part part{w, y.data()};
      double best = 1e9;
      for (int r = 0; r < reps; ++r) {
        double t0 = cpu_s();
        if (!strcmp(path, "gemm")) gemm_q8_parts(pool, &part, 1, xv, ntok, sc.gemm(), CpuIsa::Avx2);
        else matmul_cpu_q8(pool, w, xv, ntok, y.data(), CpuIsa::Avx2);
        best = std::min(best, cpu_s() - t0);
      }
      const double macs = double(s.n_in) * s.n_out * ntok;
      printf("%-5s %5ldx%-5ld ntok %4ld %s: %6.2f ms  %5.1f GMAC/cpu-s  %.2f of peak\n", ggml_type_name(t), (long)s.n_in, (long)s.n_out, (long)ntok, path, best * 1e3, macs / best / 1e9, macs / best / pk);
    }
  }
}
