// The AMX path's hardware tile kernel, the process's permission to use the
// tile registers, and the path's packers (kernels/cpu/gemm_q8_amx.h).
// defines: cpu_amx_usable, gemm_q8_amx_enabled, gemm_q8_amx_form, gemm_q8_amx_min_tokens,
//          gemm_q8_amx_tile_hw,
//          gemm_q8_amx_pack_x (kernels/cpu/gemm_q8_amx.h), gemm_q8c_amx_tile_hw
//          (kernels/cpu/gemm_q8c.h)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "kernels/cpu/gemm_q8_amx.h"
#include "kernels/cpu/gemm_q8c.h"
#include "runtime/env.h"

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#define LS_AMX_HW 1
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593, see dot_avx512.cpp
#endif
#define LS_AMX_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,amx-tile,amx-int8")))
#include "kernels/cpu/gemm_q8_amx_body.h"
#include "kernels/cpu/gemm_q8c_amx_body.h"
#endif

namespace ls {

#if defined(LS_AMX_HW)
namespace {

// The tile instructions take their registers as immediates: one case each.
#define LS_TILE_CASES(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
struct AmxHw {
  LS_AMX_TARGET void config(const AmxTileConfig& cfg) { _tile_loadconfig(&cfg); }
  LS_AMX_TARGET void release() { _tile_release(); }
  template <int T>
  LS_AMX_TARGET void load(const void* p, int64_t stride) {
#define LS_LOAD(n) \
  if constexpr (T == n) _tile_loadd(n, p, stride);
    LS_TILE_CASES(LS_LOAD)
#undef LS_LOAD
  }
  template <int T>
  LS_AMX_TARGET void store(void* p, int64_t stride) {
#define LS_STORE(n) \
  if constexpr (T == n) _tile_stored(n, p, stride);
    LS_TILE_CASES(LS_STORE)
#undef LS_STORE
  }
  template <int T>
  LS_AMX_TARGET void zero() {
#define LS_ZERO(n) \
  if constexpr (T == n) _tile_zero(n);
    LS_TILE_CASES(LS_ZERO)
#undef LS_ZERO
  }
  // The (C, A, B) triples the body uses.
  template <int C, int A, int B>
  LS_AMX_TARGET void dp_us() {
    if constexpr (C == 0 && A == 2 && B == 3) _tile_dpbusd(0, 2, 3);
    if constexpr (C == 1 && A == 2 && B == 4) _tile_dpbusd(1, 2, 4);
    if constexpr (C == 0 && A == 5 && B == 6) _tile_dpbusd(0, 5, 6);
    if constexpr (C == 1 && A == 5 && B == 7) _tile_dpbusd(1, 5, 7);
    if constexpr (C == 1 && A == 5 && B == 6) _tile_dpbusd(1, 5, 6);  // the chunk form's
    if constexpr (C == 3 && A == 5 && B == 7) _tile_dpbusd(3, 5, 7);
  }
  template <int C, int A, int B>
  LS_AMX_TARGET void dp_ss() {
    if constexpr (C == 0 && A == 2 && B == 3) _tile_dpbssd(0, 2, 3);
    if constexpr (C == 1 && A == 2 && B == 4) _tile_dpbssd(1, 2, 4);
    if constexpr (C == 0 && A == 4 && B == 6) _tile_dpbssd(0, 4, 6);  // the chunk form's
    if constexpr (C == 2 && A == 4 && B == 7) _tile_dpbssd(2, 4, 7);
  }
  LS_AMX_TARGET static LsAmxV16i dpwssd(LsAmxV16i acc, LsAmxV16i a, int32_t b) {
    return reinterpret_cast<LsAmxV16i>(_mm512_dpwssd_epi32(
        reinterpret_cast<__m512i>(acc), reinterpret_cast<__m512i>(a), _mm512_set1_epi32(b)));
  }
  // The lane form's fused step: a * b + c, one rounding a lane.
  LS_AMX_TARGET static LsAmxV16f fma(LsAmxV16f a, LsAmxV16f b, LsAmxV16f c) {
    return reinterpret_cast<LsAmxV16f>(_mm512_fmadd_ps(
        reinterpret_cast<__m512>(a), reinterpret_cast<__m512>(b), reinterpret_cast<__m512>(c)));
  }
  // c - a * b with a in every lane, one rounding a lane (= fma(-a, b, c)).
  LS_AMX_TARGET static LsAmxV16f fnma(float a, LsAmxV16f b, LsAmxV16f c) {
    return reinterpret_cast<LsAmxV16f>(_mm512_fnmadd_ps(
        _mm512_set1_ps(a), reinterpret_cast<__m512>(b), reinterpret_cast<__m512>(c)));
  }
};
#undef LS_TILE_CASES

// The OS's permission for this process (Linux 5.16 on; every thread of it).
bool request_tile_data() {
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

}  // namespace

bool cpu_amx_usable() {
  static const bool ok = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    const bool tile = (d >> 24) & 1, int8 = (d >> 25) & 1;
    // The float step is AVX-512 (every CPU with AMX has it; checked anyway).
    return tile && int8 && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512vnni") && request_tile_data();
  }();
  return ok;
}

void gemm_q8_amx_tile_hw(GgmlType t, const GemmQ8WChunk* w, int64_t nc, const GemmQ8AmxX* x,
                         int n_groups, int n_rows, int n_tok, float* y, int64_t ldy,
                         GemmQ8AmxForm form) {
  amx_tile_any<AmxHw>(t, w, nc, x, n_groups, n_rows, n_tok, y, ldy, form);
}

void gemm_q8c_amx_tile_hw(GgmlType t, const GemmQ8cW* w, int64_t nc, const GemmQ8cX* x,
                          int n_groups, int n_rows, int n_tok, float* y, int64_t ldy) {
  amx_chunk_tile_any<AmxHw>(t, w, nc, x, n_groups, n_rows, n_tok, y, ldy);
}

#else  // no AMX in this build: never usable, the kernel never called

bool cpu_amx_usable() {
  return false;
}

void gemm_q8_amx_tile_hw(GgmlType t, const GemmQ8WChunk* w, int64_t nc, const GemmQ8AmxX* x,
                         int n_groups, int n_rows, int n_tok, float* y, int64_t ldy,
                         GemmQ8AmxForm form) {
  gemm_q8_amx_tile_emu(t, w, nc, x, n_groups, n_rows, n_tok, y, ldy, form);
}

void gemm_q8c_amx_tile_hw(GgmlType t, const GemmQ8cW* w, int64_t nc, const GemmQ8cX* x,
                          int n_groups, int n_rows, int n_tok, float* y, int64_t ldy) {
  gemm_q8c_amx_tile_emu(t, w, nc, x, n_groups, n_rows, n_tok, y, ldy);
}

#endif

GemmQ8AmxForm gemm_q8_amx_form() {
  static const GemmQ8AmxForm form{std::clamp(static_cast<int>(env_int("LS_AMX_AHEAD", 1, 1)), 1, 2),
                                  env_int("LS_AMX_LANES", 0, 0) > 0};
  return form;
}

bool gemm_q8_amx_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("LS_CPU_AMX");
    return cpu_amx_usable() && !(e && std::strcmp(e, "0") == 0);
  }();
  return on;
}

// Measured on the GPU machine's Xeon (16 threads, the 70b shapes, Q4_K and
// Q6_K; bench/results/2026-12-02-h200-amx.md): at 8 tokens the AMX path
// reads 0.79-0.90x the VNNI tile's GB/s (a token group of 16 half empty),
// at 16 1.04-1.29x, at 32 1.09-1.57x, at 64 1.35-1.64x.
int64_t gemm_q8_amx_min_tokens() {
  return 16;
}

void gemm_q8_amx_pack_x(const ActQ8View& x, int64_t t0, int64_t t1, GemmQ8AmxX* panel, int64_t c0,
                        int64_t c1) {
  const int64_t nc = gemm_q8_chunks(x.n), nb = x.n / 32;
  const int64_t g0 = t0 / kGemmQ8AmxGroup, g1 = (t1 + kGemmQ8AmxGroup - 1) / kGemmQ8AmxGroup;
  if (c1 < 0 || c1 > nc) c1 = nc;
  for (int64_t g = g0; g < g1; ++g)
    for (int64_t c = c0; c < c1; ++c) {
      GemmQ8AmxX& o = panel[g * nc + c];
      std::memset(&o, 0, sizeof o);
      const int nbc = static_cast<int>(std::min<int64_t>(8, nb - 8 * c));
      for (int tt = 0; tt < kGemmQ8AmxGroup; ++tt) {
        const int64_t t = g * kGemmQ8AmxGroup + tt;
        if (t < t0 || t >= t1) continue;
        const int8_t* q = x.q_at(t);
        for (int j = 0; j < nbc; ++j) {
          const int64_t b = 8 * c + j;
          for (int k = 0; k < 8; ++k) std::memcpy(&o.b[j][64 * k + 4 * tt], q + 32 * b + 4 * k, 4);
          o.d[j][tt] = x.d_at(t)[b];
          o.ds[j][tt] = x.ds_at(t)[b];
          o.ds_lo[j][tt] = x.ds16_at(t)[2 * b];
          o.ds_hi[j][tt] = x.ds16_at(t)[2 * b + 1];
        }
      }
    }
}

}  // namespace ls
