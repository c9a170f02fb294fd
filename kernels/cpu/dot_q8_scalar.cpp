// Portable int8-activation dot (kernels/cpu/dot_q8.h): per block of 256 (or
// 32 for Q4_0 / Q8_0) the weights are decoded into a small stack buffer by the
// portable unpacker (kernels/cpu/unpack.h, tested bit for bit against the
// reference), then, per token and per 32-block, an exact int32 dot and two
// float terms: (s * d_x) * isum and m * ds. Q6_K has a scale per 16 values,
// so its two halves of a 32-block are separate terms. The quants are already
// signed here (nibble - 8, 6 bits - 32), so no offset is carried.
//
// Also: the run-time choice of variant (dot_q8_fn) and the bound's R.
// defines: dot_q8_scalar, dot_q8_legacy_tail, cpu_has_avx512_vnni, dot_q8_fn, dot_q8_name,
//          dot_q8_bound_r (kernels/cpu/dot_q8.h)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <cassert>

#include "kernels/cpu/dot_q8.h"
#include "kernels/cpu/unpack.h"
#include "kernels/quant_blocks.h"

namespace ls {

namespace {

// Values decoded per step: a super-block for the K-quants, a block otherwise.
int step_values(GgmlType t) {
  return (t == GgmlType::Q4_0 || t == GgmlType::Q8_0) ? 32 : QK_K;
}

int32_t idot(const int8_t* a, const int8_t* b, int n) {
  int32_t s = 0;
  for (int i = 0; i < n; ++i) s += int32_t(a[i]) * int32_t(b[i]);
  return s;
}

// Adds the terms of values [v0, v0 + nv) (decoded in u, at offset 0) to acc.
void add_terms(GgmlType t, const G16Row& u, int nv, const ActQ8View& x, int64_t tok, int64_t v0,
               float* acc) {
  const int8_t* xq = x.q_at(tok) + v0;
  const float* d = x.d_at(tok) + v0 / 32;
  const float* ds = x.ds_at(tok) + v0 / 32;
  for (int b = 0; b < nv / 32; ++b) {
    if (t == GgmlType::Q6_K) {
      for (int h = 0; h < 2; ++h) {
        const int g = 2 * b + h;
        *acc += (u.s[g] * d[b]) * static_cast<float>(idot(u.q + 16 * g, xq + 16 * g, 16));
      }
    } else {
      *acc += (u.s[2 * b] * d[b]) * static_cast<float>(idot(u.q + 32 * b, xq + 32 * b, 32));
      if (u.m) *acc -= u.m[2 * b] * ds[b];
    }
  }
}

}  // namespace

void dot_q8_scalar(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                   float* y, int64_t ldy, const RowPrefetch& pf) {
  (void)pf;
  assert(n_tok >= 1 && n_tok <= kDotMaxTokens);
  const int step = step_values(t);
  const uint64_t step_bytes = ggml_row_bytes(t, step);
  int8_t q[QK_K];
  float s[QK_K / 16], m[QK_K / 16];
  const G16Row u{q, s, g16_has_min(t) ? m : nullptr};
  float acc[kDotMaxTokens] = {};
  for (int64_t v0 = 0; v0 < x.n; v0 += step, row += step_bytes) {
    unpack_g16_scalar(t, row, step, u);
    for (int k = 0; k < n_tok; ++k) add_terms(t, u, step, x, t0 + k, v0, &acc[k]);
  }
  for (int k = 0; k < n_tok; ++k) y[k * ldy] = acc[k];
}

float dot_q8_legacy_tail(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t tok,
                         int64_t b0, int64_t b1) {
  const uint64_t bytes = ggml_row_bytes(t, 32);
  int8_t q[32];
  float s[2];
  const G16Row u{q, s, nullptr};
  float acc = 0;
  for (int64_t b = b0; b < b1; ++b) {
    unpack_g16_scalar(t, row + b * bytes, 32, u);
    add_terms(t, u, 32, x, tok, 32 * b, &acc);
  }
  return acc;
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
