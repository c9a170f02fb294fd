// Portable chunk-form dot (kernels/cpu/dot_q8c.h): each super-block decoded
// into plain integers (q8c_chunk_terms), then per token the exact A and B
// and the chunk's float step of kernels/cpu/q8_chunks.h. Also the run-time
// choice of variant and the process-wide form switch.
// defines: q8c_chunk_terms, dot_q8c_scalar, dot_q8c_fn, dot_q8c_name (kernels/cpu/dot_q8c.h),
//          cpu_q8_chunks_active, cpu_q8_chunks_override (kernels/cpu/q8_chunks.h)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <atomic>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels/cpu/dot_q8c.h"
#include "kernels/cpu/q8_chunks.h"
#include "kernels/half.h"
#include "kernels/quant_blocks.h"

namespace ls {

void q8c_chunk_terms(GgmlType t, const uint8_t* block, Q8cChunkTerms& o) {
  if (t == GgmlType::Q6_K) {
    const BlockQ6_K& b = *reinterpret_cast<const BlockQ6_K*>(block);
    for (int h = 0; h < 2; ++h)  // halves of 128 values
      for (int l = 0; l < 32; ++l) {
        const uint8_t* ql = b.ql + 64 * h;
        const uint8_t qh = b.qh[32 * h + l];
        const int v0 = (ql[l] & 0xF) | ((qh & 3) << 4);
        const int v1 = (ql[l + 32] & 0xF) | (((qh >> 2) & 3) << 4);
        const int v2 = (ql[l] >> 4) | (((qh >> 4) & 3) << 4);
        const int v3 = (ql[l + 32] >> 4) | (((qh >> 6) & 3) << 4);
        o.u[128 * h + l] = static_cast<int8_t>(v0 - 32);
        o.u[128 * h + l + 32] = static_cast<int8_t>(v1 - 32);
        o.u[128 * h + l + 64] = static_cast<int8_t>(v2 - 32);
        o.u[128 * h + l + 96] = static_cast<int8_t>(v3 - 32);
      }
    for (int i = 0; i < 256; ++i) o.sc[i] = b.scales[i / 16];
    std::memset(o.mn, 0, sizeof o.mn);
    o.d = fp16_to_fp32(b.d);
    o.dmin = 0;
    return;
  }
  assert(t == GgmlType::Q4_K || t == GgmlType::Q5_K);
  const bool five = t == GgmlType::Q5_K;
  const uint8_t* scales = five ? reinterpret_cast<const BlockQ5_K*>(block)->scales
                               : reinterpret_cast<const BlockQ4_K*>(block)->scales;
  const uint8_t* qs = five ? reinterpret_cast<const BlockQ5_K*>(block)->qs
                           : reinterpret_cast<const BlockQ4_K*>(block)->qs;
  const uint16_t d = five ? reinterpret_cast<const BlockQ5_K*>(block)->d
                          : reinterpret_cast<const BlockQ4_K*>(block)->d;
  const uint16_t dmin = five ? reinterpret_cast<const BlockQ5_K*>(block)->dmin
                             : reinterpret_cast<const BlockQ4_K*>(block)->dmin;
  for (int k = 0; k < 4; ++k)  // 64 values: 32 low nibbles, then 32 high
    for (int l = 0; l < 32; ++l) {
      int lo = qs[32 * k + l] & 0xF, hi = qs[32 * k + l] >> 4;
      if (five) {
        const uint8_t qh = reinterpret_cast<const BlockQ5_K*>(block)->qh[l];
        lo |= ((qh >> (2 * k)) & 1) << 4;
        hi |= ((qh >> (2 * k + 1)) & 1) << 4;
      }
      o.u[64 * k + l] = static_cast<int8_t>(lo);
      o.u[64 * k + 32 + l] = static_cast<int8_t>(hi);
    }
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, mn;
    q4_k_scale_min(j, scales, &sc, &mn);
    for (int i = 0; i < 32; ++i) o.sc[32 * j + i] = sc;
    o.mn[j] = mn;
  }
  o.d = fp16_to_fp32(d);
  o.dmin = fp16_to_fp32(dmin);
}

void dot_q8c_scalar(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                    float* y, int64_t ldy, const RowPrefetch& pf) {
  (void)pf;
  assert(n_tok >= 1 && n_tok <= kDotMaxTokens && x.qc && x.n % 256 == 0);
  const uint64_t chunk_bytes = ggml_row_bytes(t, QK_K);
  const bool has_min = t != GgmlType::Q6_K;
  Q8cChunkTerms w;
  float acc[kDotMaxTokens] = {};
  for (int64_t c = 0; 256 * c < x.n; ++c, row += chunk_bytes) {
    q8c_chunk_terms(t, row, w);
    for (int k = 0; k < n_tok; ++k) {
      const int8_t* q = x.qc_at(t0 + k) + 256 * c;
      const int16_t* bs = x.bsc_at(t0 + k) + 8 * c;
      const float dx = x.dc_at(t0 + k)[c];
      int32_t a = 0, b = 0;
      for (int i = 0; i < 256; ++i) a += int32_t{w.sc[i]} * w.u[i] * q[i];
      for (int j = 0; j < 8; ++j) b += int32_t{w.mn[j]} * bs[j];
      float s = acc[k];
      s = s + static_cast<float>(a) * (w.d * dx);
      if (has_min) s = s - static_cast<float>(b) * (w.dmin * dx);
      acc[k] = s;
    }
  }
  for (int k = 0; k < n_tok; ++k) y[k * ldy] = acc[k];
}

DotQ8Fn dot_q8c_fn(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Avx512:
      return cpu_has_avx512_vnni() ? dot_q8c_avx512 : dot_q8c_avx2;
    case CpuIsa::Avx2:
      return dot_q8c_avx2;
    default:
      return dot_q8c_scalar;
  }
}

const char* dot_q8c_name(CpuIsa isa) {
  const DotQ8Fn f = dot_q8c_fn(isa);
  return f == dot_q8c_avx512 ? "avx512vnni" : f == dot_q8c_avx2 ? "avx2" : "portable";
}

namespace {
// -1: not forced; 0 / 1: lanes / chunks.
std::atomic<int> g_chunks_forced{-1};
}  // namespace

bool cpu_q8_chunks_active() {
  const int f = g_chunks_forced.load(std::memory_order_relaxed);
  if (f >= 0) return f == 1;
  static const bool env = [] {
    const char* e = std::getenv("LS_CPU_Q8_FORM");
    // The default is the lane form: on the H200 host the chunk form's wide
    // steps won (width 32: +2-8 %) but its one-token dot cost a CPU layer
    // 2-12 % more (bench/results/2026-12-04-h200-s24.md), and batch 1 must
    // not fall.
    if (!e || !*e || std::strcmp(e, "lanes") == 0) return false;
    if (std::strcmp(e, "chunks") == 0) return true;
    std::fprintf(stderr, "LS_CPU_Q8_FORM=%s: want lanes or chunks; using lanes\n", e);
    return false;
  }();
  return env;
}

void cpu_q8_chunks_override(std::optional<bool> on) {
  g_chunks_forced.store(on ? (*on ? 1 : 0) : -1, std::memory_order_relaxed);
}

}  // namespace ls
