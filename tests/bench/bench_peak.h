// The compute bound of the CPU matmul benchmarks: this machine's peak rate of
// int8 multiply-adds (the instruction the q8 kernels are made of: vpmaddubsw,
// 32 products each, on AVX2; vpdpbusd, 64, on AVX-512 VNNI) and of f32 FMAs
// (8 or 16 lanes), measured on every thread of a pool at once: 12
// independent chains per thread (more than latency × ports on any x86 core),
// for about a tenth of a second.
// defines: bench_peak_int8_macs(), bench_peak_f32_flops()
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "kernels/cpu/dot_q8.h"
#include "kernels/cpu/isa.h"
#include "runtime/thread_pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace ls {
namespace bench_peak_detail {

#if defined(__x86_64__) || defined(__i386__)
#define LS_BENCH_UNROLL _Pragma("GCC unroll 12")
// Each function returns the operations done (products, or f32 flops).
__attribute__((target("avx2,fma"))) inline double maddubs_loop(int64_t iters) {
  __m256i a[12];
  __m256i w = _mm256_set1_epi8(3), x = _mm256_set1_epi8(5);
  for (auto& v : a) v = _mm256_setzero_si256();
  for (int64_t k = 0; k < iters; ++k) {
    LS_BENCH_UNROLL
    for (int i = 0; i < 12; ++i) {
      a[i] = _mm256_add_epi16(a[i], _mm256_maddubs_epi16(w, x));
      asm volatile("" : "+x"(a[i]));
    }
    asm volatile("" : "+x"(w), "+x"(x));
  }
  return 12.0 * 32 * iters;
}
__attribute__((target("avx512f,avx512bw,avx512vnni"))) inline double dpbusd_loop(int64_t iters) {
  __m512i a[12];
  __m512i w = _mm512_set1_epi8(3), x = _mm512_set1_epi8(5);
  for (auto& v : a) v = _mm512_setzero_si512();
  for (int64_t k = 0; k < iters; ++k) {
    LS_BENCH_UNROLL
    for (int i = 0; i < 12; ++i) {
      a[i] = _mm512_dpbusd_epi32(a[i], w, x);
      asm volatile("" : "+v"(a[i]));
    }
    asm volatile("" : "+v"(w), "+v"(x));
  }
  return 12.0 * 64 * iters;
}
__attribute__((target("avx2,fma"))) inline double fma256_loop(int64_t iters) {
  __m256 a[12];
  __m256 w = _mm256_set1_ps(1.0f), x = _mm256_set1_ps(0.5f);
  for (auto& v : a) v = _mm256_setzero_ps();
  for (int64_t k = 0; k < iters; ++k) {
    LS_BENCH_UNROLL
    for (int i = 0; i < 12; ++i) {
      a[i] = _mm256_fmadd_ps(w, x, a[i]);
      asm volatile("" : "+x"(a[i]));
    }
    asm volatile("" : "+x"(w), "+x"(x));
  }
  return 12.0 * 16 * iters;
}
__attribute__((target("avx512f"))) inline double fma512_loop(int64_t iters) {
  __m512 a[12];
  __m512 w = _mm512_set1_ps(1.0f), x = _mm512_set1_ps(0.5f);
  for (auto& v : a) v = _mm512_setzero_ps();
  for (int64_t k = 0; k < iters; ++k) {
    LS_BENCH_UNROLL
    for (int i = 0; i < 12; ++i) {
      a[i] = _mm512_fmadd_ps(w, x, a[i]);
      asm volatile("" : "+v"(a[i]));
    }
    asm volatile("" : "+v"(w), "+v"(x));
  }
  return 12.0 * 32 * iters;
}
#endif

// Sum over the pool's threads, all running fn at once, of operations/s.
inline double on_all_threads(ThreadPool& pool, double (*fn)(int64_t)) {
  std::atomic<double> total{0.0};
  pool.run(pool.size(), [&](int64_t, int) {
    fn(1 << 16);  // warm-up (and the clock up)
    const int64_t iters = 1 << 21;
    const auto t0 = std::chrono::steady_clock::now();
    const double ops = fn(iters);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double cur = total.load();
    while (!total.compare_exchange_weak(cur, cur + ops / s)) {
    }
  });
  return total.load();
}

}  // namespace bench_peak_detail

// int8 products per second on all of pool's threads with isa's q8
// instruction (0 for the portable variant: no bound stated).
inline double bench_peak_int8_macs(ThreadPool& pool, CpuIsa isa) {
#if defined(__x86_64__) || defined(__i386__)
  if (isa == CpuIsa::Avx512 && cpu_has_avx512_vnni())
    return bench_peak_detail::on_all_threads(pool, bench_peak_detail::dpbusd_loop);
  if (isa != CpuIsa::Portable)
    return bench_peak_detail::on_all_threads(pool, bench_peak_detail::maddubs_loop);
#endif
  (void)pool, (void)isa;
  return 0;
}

// f32 flops per second (an FMA is two) on all of pool's threads.
inline double bench_peak_f32_flops(ThreadPool& pool, CpuIsa isa) {
#if defined(__x86_64__) || defined(__i386__)
  if (isa == CpuIsa::Avx512)
    return bench_peak_detail::on_all_threads(pool, bench_peak_detail::fma512_loop);
  if (isa == CpuIsa::Avx2)
    return bench_peak_detail::on_all_threads(pool, bench_peak_detail::fma256_loop);
#endif
  (void)pool, (void)isa;
  return 0;
}

}  // namespace ls
