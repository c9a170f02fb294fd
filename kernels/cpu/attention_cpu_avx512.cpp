// One attention block (kernels/cpu/attention_cpu_block.h) with AVX-512F
// (the vector type: attention_cpu_vec512.h).
// defines: attention_block_avx512 (kernels/cpu/attention_cpu_block.h)
#include "kernels/cpu/attention_cpu_block.h"

#if defined(__x86_64__) || defined(__i386__)
// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized (see dot_avx512.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define LS_ATTN_TARGET __attribute__((target("avx512f,avx2,fma,f16c")))

#include "kernels/cpu/attention_cpu_vec512.h"
#include "kernels/cpu/attention_cpu_body.h"

namespace ls {
void attention_block_avx512(const AttnBlockArgs& a) {
  attn_block<VecAvx512>(a);
}
}  // namespace ls

#else  // not x86: never called (cpu_isa_supported says no), but must link.

namespace ls {
void attention_block_avx512(const AttnBlockArgs& a) {
  attention_block_portable(a);
}
}  // namespace ls

#endif
