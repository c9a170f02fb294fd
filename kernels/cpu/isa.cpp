// Run-time ISA selection for kernels/cpu/ (see isa.h). __builtin_cpu_supports
// reads CPUID once (libgcc initialises it before main) and also checks that
// the OS saves the wide registers (XGETBV), which CPUID alone does not say.
// defines: cpu_isa_name, cpu_isa_from_name, cpu_isa_supported, cpu_isa_best,
//          cpu_isa_active, cpu_isa_override (kernels/cpu/isa.h)
#include "kernels/cpu/isa.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace ls {
namespace {

// -1: automatic; else a CpuIsa.
std::atomic<int> g_override{-1};

std::optional<CpuIsa> env_isa() {
  static const std::optional<CpuIsa> isa = []() -> std::optional<CpuIsa> {
    const char* e = std::getenv("LS_CPU_ISA");
    if (!e || !*e) return std::nullopt;
    auto i = cpu_isa_from_name(e);
    if (!i || !cpu_isa_supported(*i)) {
      std::fprintf(stderr,
                   "LS_CPU_ISA=%s: not a variant this CPU runs (portable, avx2, avx512); "
                   "using %s\n",
                   e, cpu_isa_name(cpu_isa_best()));
      return std::nullopt;
    }
    return i;
  }();
  return isa;
}

#if defined(__x86_64__) || defined(__i386__)
// F16C from CPUID leaf 1 (ECX bit 29): clang 14, the sanitizer build's
// compiler, has no "f16c" in __builtin_cpu_supports. It needs no OS state of
// its own beyond AVX's, which the "avx2" check covers. Read once: in a
// virtual machine CPUID traps to the hypervisor (2.5 us on the dev VM), and
// the CPU backend asks cpu_isa_active() for every matmul and attention call;
// read per call (sessions 52-53), it cost the bench's 1k read-alone rows
// about 25 us a call (ten a thread) and the engine a few a layer.
bool cpu_has_f16c() {
  static const bool has = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
  }();
  return has;
}
#endif

}  // namespace

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Portable:
      return "portable";
    case CpuIsa::Avx2:
      return "avx2";
    case CpuIsa::Avx512:
      return "avx512";
  }
  return "?";
}

std::optional<CpuIsa> cpu_isa_from_name(std::string_view name) {
  for (CpuIsa i : {CpuIsa::Portable, CpuIsa::Avx2, CpuIsa::Avx512})
    if (name == cpu_isa_name(i)) return i;
  return std::nullopt;
}

bool cpu_isa_supported(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Portable:
      return true;
#if defined(__x86_64__) || defined(__i386__)
    // F16C (fp16 scales) came before AVX2 on every x86 CPU, but is checked
    // anyway: the unpackers use it.
    case CpuIsa::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
    case CpuIsa::Avx512:
      return cpu_isa_supported(CpuIsa::Avx2) && __builtin_cpu_supports("avx512f");
#else
    default:
      return false;
#endif
  }
  return false;
}

CpuIsa cpu_isa_best() {
  static const CpuIsa best = [] {
    if (cpu_isa_supported(CpuIsa::Avx512)) return CpuIsa::Avx512;
    if (cpu_isa_supported(CpuIsa::Avx2)) return CpuIsa::Avx2;
    return CpuIsa::Portable;
  }();
  return best;
}

CpuIsa cpu_isa_active() {
  const int o = g_override.load(std::memory_order_relaxed);
  if (o >= 0) return static_cast<CpuIsa>(o);
  if (auto e = env_isa()) return *e;
  return cpu_isa_best();
}

bool cpu_isa_override(std::optional<CpuIsa> isa) {
  if (isa && !cpu_isa_supported(*isa)) return false;
  g_override.store(isa ? static_cast<int>(*isa) : -1, std::memory_order_relaxed);
  return true;
}

}  // namespace ls
