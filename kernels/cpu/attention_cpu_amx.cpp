// The AMX attention block on the hardware (attention_cpu_amx_body.h): the
// scores on the tile unit (TDPBF16PS), the keys split into bf16 parts with
// AVX-512 as they are read, the softmax and the values with AVX-512
// (attention_cpu_vec512.h).
// defines: attention_block_amx (kernels/cpu/attention_cpu_block.h)
#include "kernels/cpu/attention_cpu_block.h"

#if defined(__x86_64__) && defined(__linux__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593, see dot_avx512.cpp
#endif
#define LS_ATTN_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma,f16c,amx-tile,amx-bf16")))

#include "kernels/cpu/attention_cpu_vec512.h"
#include "kernels/cpu/attention_cpu_amx_body.h"

namespace ls {
namespace {

// GCC's tile loads are asm without a memory operand: without this barrier
// the compiler may move the stores that packed a tile's rows past its load.
#define LS_TILE_FENCE() __asm__ volatile("" ::: "memory")
#define LS_TILE_CASES(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

struct AttnAmxHw {
  LS_ATTN_TARGET void config(int ngp) {
    static const AmxAttnTileConfig c8(8), c16(16);
    _tile_loadconfig(ngp == 8 ? &c8 : &c16);
  }
  LS_ATTN_TARGET void release() { _tile_release(); }
  template <int T>
  LS_ATTN_TARGET void load(const void* p, int64_t stride) {
    LS_TILE_FENCE();
#define LS_LOAD(n) \
  if constexpr (T == n) _tile_loadd(n, p, stride);
    LS_TILE_CASES(LS_LOAD)
#undef LS_LOAD
  }
  template <int T>
  LS_ATTN_TARGET void store(void* p, int64_t stride) {
#define LS_STORE(n) \
  if constexpr (T == n) _tile_stored(n, p, stride);
    LS_TILE_CASES(LS_STORE)
#undef LS_STORE
  }
  template <int T>
  LS_ATTN_TARGET void zero() {
#define LS_ZERO(n) \
  if constexpr (T == n) _tile_zero(n);
    LS_TILE_CASES(LS_ZERO)
#undef LS_ZERO
  }
  // The (C, A, B) triples the body uses.
  template <int C, int A, int B>
  LS_ATTN_TARGET void dp() {
    if constexpr (C == 0 && A == 2 && B == 6) _tile_dpbf16ps(0, 2, 6);
    if constexpr (C == 0 && A == 3 && B == 6) _tile_dpbf16ps(0, 3, 6);
    if constexpr (C == 1 && A == 4 && B == 6) _tile_dpbf16ps(1, 4, 6);
    if constexpr (C == 1 && A == 5 && B == 6) _tile_dpbf16ps(1, 5, 6);
    if constexpr (C == 0 && A == 2 && B == 7) _tile_dpbf16ps(0, 2, 7);
    if constexpr (C == 0 && A == 3 && B == 7) _tile_dpbf16ps(0, 3, 7);
    if constexpr (C == 1 && A == 4 && B == 7) _tile_dpbf16ps(1, 4, 7);
    if constexpr (C == 1 && A == 5 && B == 7) _tile_dpbf16ps(1, 5, 7);
  }

  // 32 f16 at a time: f32, the top 16 bits (sign, exponent, 7 mantissa bits)
  // kept for hi, the exact rest for lo; VCVTNE2PS2BF16 packs each pair of
  // vectors (exactly: both are bf16 values already).
  LS_ATTN_TARGET static void pack_keys(const uint16_t* k, int hd, uint16_t* hi, uint16_t* lo) {
    const __m512i mask = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
    for (int i = 0; i < hd; i += 32) {
      const __m512 x0 = VecAvx512::load(k + i), x1 = VecAvx512::load(k + i + 16);
      const __m512 h0 = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x0), mask));
      const __m512 h1 = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x1), mask));
      _mm512_store_si512(hi + i, (__m512i)_mm512_cvtne2ps_pbh(h1, h0));
      _mm512_store_si512(
          lo + i, (__m512i)_mm512_cvtne2ps_pbh(_mm512_sub_ps(x1, h1), _mm512_sub_ps(x0, h0)));
    }
  }

  // The f32 value of the 16 bf16 of b (a 256-bit half of a packed vector).
  LS_ATTN_TARGET static __m512 widen(__m256i b) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
  }

  // Per head and 32 dims: the three parts (each the nearest bf16 to the rest
  // of the earlier parts, VCVTNE2PS2BF16), each 16 dim pairs scattered down
  // the part's B tile (dword r to row r, column n).
  LS_ATTN_TARGET static void pack_q(const float* q, int group, int ngp, int hd, uint16_t* qt) {
    const int nch = hd / 32;
    const int64_t part = int64_t{nch} * 16 * ngp * 2;  // bf16
    if (group < ngp) std::memset(qt, 0, static_cast<size_t>(3 * part * 2));
    const __m512i rows =
        _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                           _mm512_set1_epi32(ngp));
    for (int n = 0; n < group; ++n)
      for (int c = 0; c < nch; ++c) {
        __m512 x0 = _mm512_loadu_ps(q + int64_t{n} * hd + 32 * c);
        __m512 x1 = _mm512_loadu_ps(q + int64_t{n} * hd + 32 * c + 16);
        uint16_t* dst = qt + int64_t{c} * 16 * ngp * 2 + 2 * n;
        for (int j = 0; j < 3; ++j) {
          const __m512i b = (__m512i)_mm512_cvtne2ps_pbh(x1, x0);
          _mm512_i32scatter_epi32(dst + j * part, rows, b, 4);
          if (j < 2) {
            x0 = _mm512_sub_ps(x0, widen(_mm512_castsi512_si256(b)));
            x1 = _mm512_sub_ps(x1, widen(_mm512_extracti64x4_epi64(b, 1)));
          }
        }
      }
  }
};
#undef LS_TILE_CASES
#undef LS_TILE_FENCE

}  // namespace

void attention_block_amx(const AttnBlockArgs& a) {
  attn_block_amx<VecAvx512, AttnAmxHw>(a);
}

}  // namespace ls

#else  // no AMX in this build: never called (cpu_amx_bf16_usable says no), but must link.

namespace ls {
void attention_block_amx(const AttnBlockArgs& a) {
  attention_block_amx_emu(a);
}
}  // namespace ls

#endif
