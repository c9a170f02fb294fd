// convert_f16 (kernels/cpu/convert_f16.h): F16C when cpu_isa_supported says
// AVX2 (which implies F16C here), the scalar functions of kernels/half.h
// for the tails and for other CPUs.
// defines: fp16_to_fp32_n, fp32_to_fp16_n
#include "kernels/cpu/convert_f16.h"

#include "kernels/cpu/isa.h"
#include "kernels/half.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define LS_HAVE_F16C 1
#endif

namespace ls {

namespace {

#ifdef LS_HAVE_F16C
__attribute__((target("avx,f16c"))) int64_t to_f32_f16c(const uint16_t* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  return i;
}

__attribute__((target("avx,f16c"))) int64_t to_f16_f16c(const float* in, uint16_t* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
  return i;
}
#endif

bool has_f16c() {
  static const bool yes = cpu_isa_supported(CpuIsa::Avx2);
  return yes;
}

}  // namespace

void fp16_to_fp32_n(const uint16_t* in, float* out, int64_t n) {
  int64_t i = 0;
#ifdef LS_HAVE_F16C
  if (has_f16c()) i = to_f32_f16c(in, out, n);
#endif
  for (; i < n; ++i) out[i] = fp16_to_fp32(in[i]);
}

void fp32_to_fp16_n(const float* in, uint16_t* out, int64_t n) {
  int64_t i = 0;
#ifdef LS_HAVE_F16C
  if (has_f16c()) i = to_f16_f16c(in, out, n);
#endif
  for (; i < n; ++i) out[i] = fp32_to_fp16(in[i]);
}

}  // namespace ls
