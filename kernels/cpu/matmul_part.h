// One weight of a matmul job whose weights share their input x (q/k/v,
// gate/up): y = x · Wᵀ for each part (kernels/cpu/matmul_cpu.h, gemm_q8.h).
// defines: MatmulQ8Part, kMatmulQ8MaxParts
#pragma once

#include "kernels/ref/matmul.h"

namespace ls {

constexpr int kMatmulQ8MaxParts = 4;
struct MatmulQ8Part {
  WeightView w;
  float* y;  // (n_tok, w.n_out)
};

}  // namespace ls
