// AVX-512 emulated by SIMDe (portable), AVX2 native: for running the AVX-512 kernels' logic here.
#pragma once
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#include <simde/x86/f16c.h>
// Missing from SIMDe 0.7.4: lane by lane.
static inline simde__m512 ls_emu_cvtepi32_ps(simde__m512i a) {
  simde__m512i_private p = simde__m512i_to_private(a);
  simde__m512_private r;
  for (int i = 0; i < 16; ++i) r.f32[i] = (float)p.i32[i];
  return simde__m512_from_private(r);
}
static inline simde__m512i ls_emu_cvtepu8_epi32(simde__m128i a) {
  simde__m128i_private p = simde__m128i_to_private(a);
  simde__m512i_private r;
  for (int i = 0; i < 16; ++i) r.i32[i] = p.u8[i];
  return simde__m512i_from_private(r);
}
static inline simde__m512i ls_emu_cvtepi8_epi32(simde__m128i a) {
  simde__m128i_private p = simde__m128i_to_private(a);
  simde__m512i_private r;
  for (int i = 0; i < 16; ++i) r.i32[i] = p.i8[i];
  return simde__m512i_from_private(r);
}
#define _mm512_cvtepi32_ps ls_emu_cvtepi32_ps
#define _mm512_cvtepu8_epi32 ls_emu_cvtepu8_epi32
#define _mm512_cvtepi8_epi32 ls_emu_cvtepi8_epi32
static inline simde__m512i ls_emu_shuffle_i64x2(simde__m512i a, simde__m512i b, int imm) {
  simde__m512i_private pa = simde__m512i_to_private(a), pb = simde__m512i_to_private(b), r;
  for (int i = 0; i < 4; ++i) {
    const simde__m512i_private& src = i < 2 ? pa : pb;
    const int sel = (imm >> (2 * i)) & 3;
    r.i64[2 * i] = src.i64[2 * sel];
    r.i64[2 * i + 1] = src.i64[2 * sel + 1];
  }
  return simde__m512i_from_private(r);
}
#define _mm512_shuffle_i64x2 ls_emu_shuffle_i64x2
