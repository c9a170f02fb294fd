// Which SIMD instruction set the CPU matmul kernels (kernels/cpu/) run with,
// chosen at run time so that one binary, built without any -march flag, uses
// AVX-512 where the CPU has it and still runs on a CPU without AVX at all.
// The choice can be forced (tests run every variant the machine supports;
// LS_CPU_ISA=portable|avx2|avx512 in the environment does the same for a
// whole run, for A/B timing).
// defines: CpuIsa, cpu_isa_name(), cpu_isa_supported(), cpu_isa_best(),
//          cpu_isa_active(), cpu_isa_override()
#pragma once

#include <optional>
#include <string_view>

namespace ls {

enum class CpuIsa {
  Portable,  // plain C++, any CPU
  Avx2,      // AVX2 + FMA + F16C, 256-bit
  Avx512,    // AVX-512F (+ AVX2, FMA, F16C for the unpacking), 512-bit
};

const char* cpu_isa_name(CpuIsa isa);
std::optional<CpuIsa> cpu_isa_from_name(std::string_view name);

// Whether this CPU (and this build: x86-64 only for the SIMD variants) can run isa.
bool cpu_isa_supported(CpuIsa isa);
// The widest supported variant.
CpuIsa cpu_isa_best();
// What matmul_cpu uses when not told: the override if one is set (and
// supported), else LS_CPU_ISA if set (and supported), else cpu_isa_best().
CpuIsa cpu_isa_active();
// Force a variant (nullopt: back to automatic). Returns false, changing
// nothing, if the CPU cannot run it.
bool cpu_isa_override(std::optional<CpuIsa> isa);

}  // namespace ls
