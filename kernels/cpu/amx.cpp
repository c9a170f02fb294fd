// CPUID and the OS's permission for AMX (kernels/cpu/amx.h).
// defines: cpu_amx_usable, cpu_amx_bf16_usable (kernels/cpu/amx.h)
#include "kernels/cpu/amx.h"

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace ls {
namespace {

// The OS's permission for this process (Linux 5.16 on; every thread of it),
// asked once.
bool tile_data_granted() {
  static const bool ok = [] {
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return ok;
}

// CPUID leaf 7 subleaf 0, EDX bit `bit` (22 AMX-BF16, 24 AMX-TILE, 25 AMX-INT8).
bool leaf7_edx(int bit) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return (d >> bit) & 1;
}

bool avx512_fbwvl() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}

}  // namespace

bool cpu_amx_usable() {
  static const bool ok = leaf7_edx(24) && leaf7_edx(25) && avx512_fbwvl() && tile_data_granted();
  return ok;
}

bool cpu_amx_bf16_usable() {
  static const bool ok = [] {
    // AVX512_BF16: CPUID leaf 7 subleaf 1, EAX bit 5.
    unsigned a = 0, b = 0, c = 0, d = 0;
    const bool bf16 = __get_cpuid_count(7, 1, &a, &b, &c, &d) && ((a >> 5) & 1);
    return bf16 && leaf7_edx(24) && leaf7_edx(22) && avx512_fbwvl() && tile_data_granted();
  }();
  return ok;
}

}  // namespace ls

#else  // not x86-64 Linux: no AMX

namespace ls {
bool cpu_amx_usable() {
  return false;
}
bool cpu_amx_bf16_usable() {
  return false;
}
}  // namespace ls

#endif
