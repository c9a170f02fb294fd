// PLACEHOLDER (being written): the chunk-form dot with AVX2 runs the portable one.
#include "kernels/cpu/dot_q8c.h"

namespace ls {
void dot_q8c_avx2(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                  float* y, int64_t ldy, const RowPrefetch& pf) {
  dot_q8c_scalar(t, row, x, t0, n_tok, y, ldy, pf);
}
void dot_q8c_avx512(GgmlType t, const uint8_t* row, const ActQ8View& x, int64_t t0, int n_tok,
                    float* y, int64_t ldy, const RowPrefetch& pf) {
  dot_q8c_scalar(t, row, x, t0, n_tok, y, ldy, pf);
}
}  // namespace ls
