// What the tests of the CPU tier's int8-activation kernels (the dot and the
// GEMM) run over: the five weight formats they take, and each ISA this CPU
// supports, de-duplicated by the kernels it picks (AVX-512 without VNNI runs
// the AVX2 ones), saying which it skips.
// defines: test::kQ8Types, test::q8_isas()
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "io/ggml_type.h"
#include "kernels/cpu/dot_q8.h"
#include "kernels/cpu/isa.h"

namespace ls::test {

inline constexpr GgmlType kQ8Types[] = {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K,
                                        GgmlType::Q5_K, GgmlType::Q6_K};

inline std::vector<CpuIsa> q8_isas() {
  std::vector<CpuIsa> v;
  for (CpuIsa i : {CpuIsa::Portable, CpuIsa::Avx2, CpuIsa::Avx512}) {
    if (!cpu_isa_supported(i)) {
      MESSAGE("SKIPPED: " << std::string(cpu_isa_name(i)) << " (not on this CPU)");
      continue;
    }
    if (i == CpuIsa::Avx512 && !cpu_has_avx512_vnni()) {
      MESSAGE("SKIPPED: avx512vnni (no AVX-512 VNNI on this CPU; avx2 covers it)");
      continue;
    }
    v.push_back(i);
  }
  return v;
}

}  // namespace ls::test
