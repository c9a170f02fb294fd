// Stage 2, portable (kernels/cpu/dot.h): 16 independent lanes per token, so
// that a compiler can vectorise it for whatever baseline the build targets,
// and so that its summation order does not depend on that. Contraction is
// off: w = s * q - m must round twice, as the reference does.
// defines: dot_g16_f32_scalar (kernels/cpu/dot.h)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <cassert>

#include "kernels/cpu/dot.h"

namespace ls {

void dot_g16_f32_scalar(const G16Row& w, int64_t n, const float* x, int64_t ldx, int n_tok,
                        float* y, int64_t ldy, const RowPrefetch& pf) {
  assert(n % 32 == 0 && n_tok >= 1 && n_tok <= kDotMaxTokens);
  (void)pf;
  float acc[kDotMaxTokens][16] = {};
  for (int64_t g = 0; g < n / 16; ++g) {
    float wf[16];
    const float s = w.s[g], m = w.m ? w.m[g] : 0.0f;
    for (int k = 0; k < 16; ++k) wf[k] = s * static_cast<float>(w.q[16 * g + k]) - m;
    for (int t = 0; t < n_tok; ++t) {
      const float* xt = x + t * ldx + 16 * g;
      for (int k = 0; k < 16; ++k) acc[t][k] += wf[k] * xt[k];
    }
  }
  for (int t = 0; t < n_tok; ++t) {
    float* a = acc[t];
    for (int width = 8; width >= 1; width /= 2)
      for (int k = 0; k < width; ++k) a[k] += a[k + width];
    y[t * ldy] = a[0];
  }
}

}  // namespace ls
