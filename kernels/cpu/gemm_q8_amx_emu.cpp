// The AMX tile kernel with the tile unit emulated in plain C++ from the
// instructions' definition (tile registers of up to 16 rows of 64 bytes;
// TDPBUSD / TDPBSSD: C[m][n] += the sum over k of A[m][k] · B[k / 4][4n + k %
// 4], exact in int32): the tests' way to run the AMX path's layouts and float
// step on a CPU without AMX (kernels/cpu/gemm_q8_amx.h).
// defines: gemm_q8_amx_tile_emu (kernels/cpu/gemm_q8_amx.h), gemm_q8c_amx_tile_emu
//          (kernels/cpu/gemm_q8c.h)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
// 64-byte vectors without AVX-512: inlined, no ABI (gcc and clang read this).
#pragma GCC diagnostic ignored "-Wpsabi"

#include <cmath>
#include <cstring>

#include "kernels/cpu/gemm_q8_amx.h"
#include "kernels/cpu/gemm_q8c.h"

#define LS_AMX_TARGET
#include "kernels/cpu/gemm_q8_amx_body.h"
#include "kernels/cpu/gemm_q8c_amx_body.h"

namespace ls {
namespace {

struct AmxEmu {
  uint8_t t[8][16][64];
  uint8_t rows[8];
  uint16_t colsb[8];

  void config(const AmxTileConfig& c) {
    for (int i = 0; i < 8; ++i) {
      rows[i] = c.rows[i];
      colsb[i] = c.colsb[i];
    }
  }
  void release() {}
  template <int T>
  void load(const void* p, int64_t stride) {
    for (int r = 0; r < rows[T]; ++r)
      std::memcpy(t[T][r], static_cast<const uint8_t*>(p) + r * stride, colsb[T]);
  }
  template <int T>
  void store(void* p, int64_t stride) {
    for (int r = 0; r < rows[T]; ++r)
      std::memcpy(static_cast<uint8_t*>(p) + r * stride, t[T][r], colsb[T]);
  }
  template <int T>
  void zero() {
    std::memset(t[T], 0, sizeof t[T]);
  }
  template <int C, int A, int B, bool kSignedA>
  void dp() {
    for (int m = 0; m < rows[A]; ++m)
      for (int n = 0; n < colsb[B] / 4; ++n) {
        int32_t acc;
        std::memcpy(&acc, &t[C][m][4 * n], 4);
        for (int k = 0; k < colsb[A]; ++k) {
          const int32_t a =
              kSignedA ? int32_t(static_cast<int8_t>(t[A][m][k])) : int32_t(t[A][m][k]);
          acc += a * int32_t(static_cast<int8_t>(t[B][k / 4][4 * n + k % 4]));
        }
        std::memcpy(&t[C][m][4 * n], &acc, 4);
      }
  }
  template <int C, int A, int B>
  void dp_us() {
    dp<C, A, B, false>();
  }
  template <int C, int A, int B>
  void dp_ss() {
    dp<C, A, B, true>();
  }
  static LsAmxV16i dpwssd(LsAmxV16i acc, LsAmxV16i a, int32_t b) {
    const int32_t b0 = static_cast<int16_t>(b & 0xFFFF), b1 = static_cast<int16_t>(b >> 16);
    for (int i = 0; i < 16; ++i)
      acc[i] += int32_t{static_cast<int16_t>(a[i] & 0xFFFF)} * b0 +
                int32_t{static_cast<int16_t>(a[i] >> 16)} * b1;
    return acc;
  }
  static LsAmxV16f fma(LsAmxV16f a, LsAmxV16f b, LsAmxV16f c) {
    for (int i = 0; i < 16; ++i) c[i] = std::fma(a[i], b[i], c[i]);
    return c;
  }
  static LsAmxV16f fnma(float a, LsAmxV16f b, LsAmxV16f c) {
    for (int i = 0; i < 16; ++i) c[i] = std::fma(-a, b[i], c[i]);
    return c;
  }
};

}  // namespace

void gemm_q8_amx_tile_emu(GgmlType t, const GemmQ8WChunk* w, int64_t nc, const GemmQ8AmxX* x,
                          int n_groups, int n_rows, int n_tok, float* y, int64_t ldy,
                          GemmQ8AmxForm form) {
  amx_tile_any<AmxEmu>(t, w, nc, x, n_groups, n_rows, n_tok, y, ldy, form);
}

void gemm_q8c_amx_tile_emu(GgmlType t, const GemmQ8cW* w, int64_t nc, const GemmQ8cX* x,
                           int n_groups, int n_rows, int n_tok, float* y, int64_t ldy) {
  amx_chunk_tile_any<AmxEmu>(t, w, nc, x, n_groups, n_rows, n_tok, y, ldy);
}

}  // namespace ls
