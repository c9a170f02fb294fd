// quantize_act_q8_cpu (kernels/cpu/act_q8_cpu.h): portable and AVX2. Both
// follow kernels/act_q8.h step by step (amax, an IEEE division by 127, an
// IEEE reciprocal, x * id rounded to nearest even), so the quants and scales
// are the reference's bits; the sums are exact in int32 before their one
// multiply by d.
// defines: ActQ8Buffer::reserve, quantize_act_q8_cpu, quantize_act_q8_cpu_blocks
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "kernels/cpu/act_q8_cpu.h"

#include <cassert>
#include <cmath>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define LS_AVX2 __attribute__((target("avx2,fma,f16c")))
#endif

namespace ls {

void ActQ8Buffer::reserve(int64_t n_tok, int64_t n) {
  const int64_t vals = n_tok * n;
  if (vals <= capacity()) return;
  q_.assign(vals, 0);
  d_.assign(vals / kActQ8Block, 0.0f);
  ds_.assign(vals / kActQ8Block, 0.0f);
  ds16_.assign(vals / 16, 0.0f);
  qk4_.assign(vals, 0);
  qil_.assign(vals, 0);
  if (chunks_) {
    qc_.assign(vals, 0);
    dc_.assign(vals / 256 + 1, 0.0f);
    bsc_.assign(vals / kActQ8Block, 0);
  }
}

void ActQ8Buffer::set_chunks(bool on) {
  if (on == chunks_) return;
  chunks_ = on;
  const int64_t vals = capacity();
  q_.clear();  // the next reserve allocates everything again, chunks included
  if (vals > 0) reserve(1, vals);
}

void quantize_act_q8c_chunk(const float* x, int8_t* q, float* d, int16_t* bsum) {
  float amax = 0;
  for (int i = 0; i < 256; ++i) amax = std::fmax(amax, std::fabs(x[i]));
  const float dc = act_q8_scale(amax), id = act_q8_inv(dc);
  for (int j = 0; j < 8; ++j) {
    int32_t s = 0;
    for (int i = 32 * j; i < 32 * j + 32; ++i) s += q[i] = act_q8_round(x[i], id);
    bsum[j] = static_cast<int16_t>(s);
  }
  *d = dc;
}

namespace {

// One block of 32: q, d, and the sums.
void quantize_block_portable(const float* x, int8_t* q, float* d, float* ds, float* ds16) {
  float amax = 0;
  for (int i = 0; i < kActQ8Block; ++i) amax = std::fmax(amax, std::fabs(x[i]));
  const float db = act_q8_scale(amax), id = act_q8_inv(db);
  int32_t s0 = 0, s1 = 0;
  for (int i = 0; i < 16; ++i) s0 += q[i] = act_q8_round(x[i], id);
  for (int i = 16; i < 32; ++i) s1 += q[i] = act_q8_round(x[i], id);
  *d = db;
  *ds = db * static_cast<float>(s0 + s1);
  ds16[0] = db * static_cast<float>(s0);
  ds16[1] = db * static_cast<float>(s1);
}

#if defined(__x86_64__) || defined(__i386__)
LS_AVX2 inline int32_t hsum8(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// The same block with AVX2: max of |x| (finite inputs: max_ps = fmax), the
// scalar division and reciprocal, then _mm256_cvtps_epi32 under the default
// rounding mode (nearest, ties to even), as nearbyint.
LS_AVX2 void quantize_block_avx2(const float* x, int8_t* q, float* d, float* ds, float* ds16) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 v[4];
  __m256 m = _mm256_setzero_ps();
  for (int k = 0; k < 4; ++k) {
    v[k] = _mm256_loadu_ps(x + 8 * k);
    m = _mm256_max_ps(m, _mm256_andnot_ps(sign, v[k]));
  }
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
  const float db = act_q8_scale(_mm_cvtss_f32(m4)), id = act_q8_inv(db);
  const __m256 idv = _mm256_set1_ps(id);
  __m256i qi[4];
  for (int k = 0; k < 4; ++k) qi[k] = _mm256_cvtps_epi32(_mm256_mul_ps(v[k], idv));
  const int32_t s0 = hsum8(_mm256_add_epi32(qi[0], qi[1]));
  const int32_t s1 = hsum8(_mm256_add_epi32(qi[2], qi[3]));
  // Pack 32 int32 -> 32 int8 (values fit: |q| <= 127); packs works per
  // 128-bit lane, so the final permute restores the order.
  const __m256i p01 = _mm256_packs_epi32(qi[0], qi[1]);  // lanes: 0-3,8-11 | 4-7,12-15
  const __m256i p23 = _mm256_packs_epi32(qi[2], qi[3]);
  const __m256i p = _mm256_packs_epi16(p01, p23);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), _mm256_permutevar8x32_epi32(p, order));
  *d = db;
  *ds = db * static_cast<float>(s0 + s1);
  ds16[0] = db * static_cast<float>(s0);
  ds16[1] = db * static_cast<float>(s1);
}

// The chunk form's chunk with AVX2 (the same steps as quantize_act_q8c_chunk).
LS_AVX2 void quantize_chunk_avx2(const float* x, int8_t* q, float* d, int16_t* bsum) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 m = _mm256_setzero_ps();
  for (int k = 0; k < 32; ++k)
    m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k)));
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
  const float dc = act_q8_scale(_mm_cvtss_f32(m4)), id = act_q8_inv(dc);
  const __m256 idv = _mm256_set1_ps(id);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int j = 0; j < 8; ++j) {
    __m256i qi[4];
    for (int k = 0; k < 4; ++k)
      qi[k] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 32 * j + 8 * k), idv));
    bsum[j] = static_cast<int16_t>(
        hsum8(_mm256_add_epi32(_mm256_add_epi32(qi[0], qi[1]), _mm256_add_epi32(qi[2], qi[3]))));
    const __m256i p =
        _mm256_packs_epi16(_mm256_packs_epi32(qi[0], qi[1]), _mm256_packs_epi32(qi[2], qi[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * j),
                        _mm256_permutevar8x32_epi32(p, order));
  }
  *d = dc;
}
#endif

}  // namespace

void quantize_act_q8_cpu_blocks(const float* x, int64_t n, int64_t b0, int64_t b1, ActQ8Buffer& out,
                                CpuIsa isa) {
  assert(n % kActQ8Block == 0 && b0 >= 0 && b0 <= b1 && out.capacity() >= b1 * kActQ8Block);
  auto block = [&](int64_t b) {
#if defined(__x86_64__) || defined(__i386__)
    if (isa != CpuIsa::Portable) {
      quantize_block_avx2(x + 32 * b, out.q() + 32 * b, out.d() + b, out.ds() + b,
                          out.ds16() + 2 * b);
      return;
    }
#else
    (void)isa;
#endif
    quantize_block_portable(x + 32 * b, out.q() + 32 * b, out.d() + b, out.ds() + b,
                            out.ds16() + 2 * b);
  };
  const int64_t nb = n / kActQ8Block, full = nb / 8 * 8;  // blocks of a token in whole chunks
  for (int64_t b = b0; b < b1; ++b) {
    block(b);
    const int64_t j = b % nb;  // block within its token
    if (j >= full) continue;
    const int64_t first = b - j % 8;  // the chunk's first block
    std::memcpy(out.qk4() + 32 * (first + kActQ8K4Order[j % 8]), out.q() + 32 * b, 32);
    for (int v = 0; v < 8; ++v)
      std::memcpy(out.qil() + 32 * first + 32 * v + 4 * (j % 8), out.q() + 32 * b + 4 * v, 4);
  }
  if (!out.chunks() || n % 256 != 0) return;
  assert(b0 % 8 == 0 && b1 % 8 == 0);
  for (int64_t c = (b0 + 7) / 8; 8 * c + 8 <= b1; ++c) {
#if defined(__x86_64__) || defined(__i386__)
    if (isa != CpuIsa::Portable) {
      quantize_chunk_avx2(x + 256 * c, out.qc() + 256 * c, out.dc() + c, out.bsc() + 8 * c);
      continue;
    }
#endif
    quantize_act_q8c_chunk(x + 256 * c, out.qc() + 256 * c, out.dc() + c, out.bsc() + 8 * c);
  }
}

void quantize_act_q8_cpu(const float* x, int64_t n_tok, int64_t n, ActQ8Buffer& out, CpuIsa isa) {
  quantize_act_q8_cpu_blocks(x, n, 0, n_tok * n / kActQ8Block, out, isa);
}

}  // namespace ls
