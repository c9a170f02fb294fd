// Portable int8-activation dot (kernels/cpu/dot_q8.h): the lane form of
// kernels/cpu/q8_lanes.h written out in plain C++. Per chunk of 256 values
// the weights are decoded into a small stack buffer by the portable unpacker
// (kernels/cpu/unpack.h, tested bit for bit against the reference); then per
// token and per block an exact int32 sum and the block's lane update. The
// unpacker gives Q4_0 and Q6_K signed (nibble - 8, 6 bits - 32); the lane
// form's u is the unsigned value, so its sum is the signed one plus offset *
// sum(q_x), in integers.
//
// Also: the run-time choice of variant (dot_q8_fn) and the bound's R.
// defines: dot_q8_scalar, dot_q8_lanes_chunk, dot_q8_lanes_tail, cpu_has_avx512_vnni,
//          dot_q8_fn, dot_q8_name, dot_q8_bound_r (kernels/cpu/dot_q8.h)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <string_view>

#include "kernels/cpu/dot_q8.h"
#include "kernels/cpu/q8_lanes.h"
#include "kernels/quant_blocks.h"
#include "runtime/env.h"

namespace ls {

namespace {

int32_t idot(const int8_t* a, const int8_t* b, int n) {
  int32_t s = 0;
  for (int i = 0; i < n; ++i) s += int32_t(a[i]) * int32_t(b[i]);
  return s;
}

int32_t isum(const int8_t* a, int n) {
  int32_t s = 0;
  for (int i = 0; i < n; ++i) s += a[i];
  return s;
}

}  // namespace

void dot_q8_lanes_chunk(GgmlType t, const G16Row& u, int nv, const ActQ8View& x, int64_t tok,
                        int64_t c, float* acc) {
  const int64_t b0 = 8 * c;
  const int8_t* xq = x.q_at(tok) + 256 * c;
  const float* d = x.d_at(tok) + b0;
  const float* ds = x.ds_at(tok) + b0;
  const float* ds16 = x.ds16_at(tok) + 2 * b0;
  for (int j = 0; j < nv / 32; ++j) {
    const int8_t* q = u.q + 32 * j;
    const int8_t* xj = xq + 32 * j;
    float a = acc[j];
    if (t == GgmlType::Q6_K) {
      const int32_t lo = idot(q, xj, 16) + 32 * isum(xj, 16);
      const int32_t hi = idot(q + 16, xj + 16, 16) + 32 * isum(xj + 16, 16);
      const float s_lo = u.s[2 * j], s_hi = u.s[2 * j + 1];
      a = q8_lane_add(a, s_lo * d[j], lo);
      a = q8_lane_add(a, s_hi * d[j], hi);
      a = q8_lane_sub(a, 32.0f * s_lo, ds16[2 * j]);
      a = q8_lane_sub(a, 32.0f * s_hi, ds16[2 * j + 1]);
    } else {
      int32_t i = idot(q, xj, 32);
      if (t == GgmlType::Q4_0) i += 8 * isum(xj, 32);
      const float s = u.s[2 * j];
      a = q8_lane_add(a, s * d[j], i);
      if (t == GgmlType::Q4_0) a = q8_lane_sub(a, 8.0f * s, ds[j]);
      if (u.m) a = q8_lane_sub(a, u.m[2 * j], ds[j]);
    }
    acc[j] = a;
  }
}

void dot_q8_scalar(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                   float* y, int64_t ldy, const RowPrefetch& pf) {
  (void)pf;
  assert(n_tok >= 1 && n_tok <= kDotMaxTokens);
  const uint64_t chunk_bytes = ggml_row_bytes(t, QK_K);
  int8_t q[QK_K];
  float s[QK_K / 16], m[QK_K / 16];
  const G16Row u{q, s, g16_has_min(t) ? m : nullptr};
  float acc[kDotMaxTokens][kQ8Lanes] = {};
  for (int64_t c = 0; 256 * c < x.n; ++c, row += chunk_bytes) {
    const int nv = static_cast<int>(std::min<int64_t>(256, x.n - 256 * c));
    unpack_g16_scalar(t, row, nv, u);
    for (int k = 0; k < n_tok; ++k) dot_q8_lanes_chunk(t, u, nv, x, t0 + k, c, acc[k]);
  }
  for (int k = 0; k < n_tok; ++k) y[k * ldy] = q8_lanes_sum(acc[k]);
}

float dot_q8_lanes_tail(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t tok,
                        float* acc) {
  const int64_t c = x.n / 256;
  const int nv = static_cast<int>(x.n - 256 * c);
  if (nv > 0) {
    int8_t q[QK_K];
    float s[QK_K / 16];
    unpack_g16_scalar(t, row + c * ggml_row_bytes(t, QK_K), nv, {q, s, nullptr});
    dot_q8_lanes_chunk(t, {q, s, nullptr}, nv, x, tok, c, acc);
  }
  return q8_lanes_sum(acc);
}

bool cpu_has_avx512_vnni() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool has = cpu_isa_supported(CpuIsa::Avx512) && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512vnni");
  return has;
#else
  return false;
#endif
}

bool dot_q8_interleaved() {
  static const bool on = [] {
    const char* e = std::getenv("LS_DOT_IL");
    return !(e && std::string_view(e) == "0");
  }();
  return on;
}

bool dot_q8_pairs() {
  static const bool on = env_int("LS_DOT_PAIRS", 1, 0) != 0;
  return on;
}

DotQ8Fn dot_q8_fn(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Avx512:
      return cpu_has_avx512_vnni() ? dot_q8_avx512vnni : dot_q8_avx2;
    case CpuIsa::Avx2:
      return dot_q8_avx2;
    default:
      return dot_q8_scalar;
  }
}

const char* dot_q8_name(CpuIsa isa) {
  const DotQ8Fn f = dot_q8_fn(isa);
  return f == dot_q8_avx512vnni ? "avx512vnni" : f == dot_q8_avx2 ? "avx2" : "portable";
}

int dot_q8_bound_r(GgmlType t) {
  switch (t) {
    case GgmlType::Q4_0:
    case GgmlType::Q4_K:
      return 16;
    case GgmlType::Q5_K:
      return 32;
    case GgmlType::Q6_K:
      return 64;
    default:
      return 256;
  }
}

}  // namespace ls
