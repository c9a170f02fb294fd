// Portable GEMM tile (kernels/cpu/gemm_q8.h): one row by one token at a
// time over the interleaved layouts, the lane form of kernels/cpu/q8_lanes.h
// in plain C++ (the SIMD tiles' arithmetic, and dot_q8_scalar's, so it is
// bit for bit theirs). It is the fallback of CPUs without AVX2, and the
// tests' check that the layouts hold what the lane form needs.
// Also: the kernel table (gemm_q8_kernel).
// defines: gemm_q8_tile_scalar, gemm_q8_kernel (kernels/cpu/gemm_q8.h)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "kernels/cpu/dot_q8.h"
#include "kernels/cpu/gemm_q8.h"
#include "kernels/cpu/q8_lanes.h"

namespace ls {

namespace {

// Sum over slices [v0, v1) of lane j's products (Q8_0: u is signed).
int32_t lane_sum(const GemmQ8WChunk& w, const GemmQ8XChunk& x, int j, int v0, int v1, bool sgn) {
  int32_t s = 0;
  for (int v = v0; v < v1; ++v)
    for (int e = 0; e < 4; ++e) {
      const int i = 32 * v + 4 * j + e;
      const int32_t u = sgn ? int32_t(static_cast<int8_t>(w.u[i])) : int32_t(w.u[i]);
      s += u * int32_t(x.q[i]);
    }
  return s;
}

float dot_one(GgmlType t, const GemmQ8WChunk* w, const GemmQ8XChunk* x, int64_t nc) {
  const bool q6 = t == GgmlType::Q6_K, q8 = t == GgmlType::Q8_0;
  float a[kQ8Lanes] = {};
  for (int64_t c = 0; c < nc; ++c) {
    const GemmQ8WChunk& wc = w[c];
    const GemmQ8XChunk& xc = x[c];
    for (int j = 0; j < kQ8Lanes; ++j) {
      float l = a[j];
      if (q6) {
        const int32_t lo = lane_sum(wc, xc, j, 0, 4, false), hi = lane_sum(wc, xc, j, 4, 8, false);
        l = q8_lane_add(l, wc.s[j] * xc.d[j], lo);
        l = q8_lane_add(l, wc.s_hi[j] * xc.d[j], hi);
        l = q8_lane_sub(l, wc.m[j], xc.ds_lo[j]);
        l = q8_lane_sub(l, wc.m_hi[j], xc.ds_hi[j]);
      } else {
        const int32_t i = lane_sum(wc, xc, j, 0, 8, q8);
        l = q8_lane_add(l, wc.s[j] * xc.d[j], i);
        if (!q8) l = q8_lane_sub(l, wc.m[j], xc.ds[j]);  // m = 0 past a row's end: l - 0 = l
      }
      a[j] = l;
    }
  }
  return q8_lanes_sum(a);
}

}  // namespace

void gemm_q8_tile_scalar(GgmlType t, const GemmQ8WChunk* w, int n_rows, const GemmQ8XChunk* x,
                         int n_tok, int64_t nc, float* y, int64_t ldy) {
  for (int k = 0; k < n_tok; ++k)
    for (int r = 0; r < n_rows; ++r) y[k * ldy + r] = dot_one(t, w + r * nc, x + k * nc, nc);
}

GemmQ8Kernel gemm_q8_kernel(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Avx512:
      if (cpu_has_avx512_vnni()) return {gemm_q8_tile_avx512vnni, 4, 4, "avx512vnni"};
      [[fallthrough]];
    case CpuIsa::Avx2:
      return {gemm_q8_tile_avx2, 2, 4, "avx2"};
    default:
      return {gemm_q8_tile_scalar, 1, 1, "portable"};
  }
}

}  // namespace ls
