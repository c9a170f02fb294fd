// The chunk form's AMX tile kernel (kernels/cpu/gemm_q8c.h), written once
// for the two tile policies of gemm_q8_amx_body.h (the hardware's
// instructions, their emulation), included after it by gemm_q8_amx.cpp and
// gemm_q8_amx_emu.cpp. The policy also has dpwssd(acc, a, b): per int32
// lane, acc + a.lo16 · b.lo16 + a.hi16 · b.hi16 (vpdpwssd).
// Tiles: 0 / 1 token group 0's hi / lo sums, 2 / 3 group 1's; 4 / 5 the 16
// rows' hi / lo plane (K = 64 values); 6 / 7 the groups' activations.
// (no defines: a body for gemm_q8_amx.cpp and gemm_q8_amx_emu.cpp)
#pragma once

#include "kernels/cpu/gemm_q8_amx_body.h"
#include "kernels/cpu/gemm_q8c.h"

namespace ls {
namespace {

// Every tile 16 rows of 64 bytes.
constexpr AmxTileConfig kAmxChunkTiles = [] {
  AmxTileConfig c;
  for (int i = 0; i < 8; ++i) {
    c.colsb[i] = 64;
    c.rows[i] = 16;
  }
  return c;
}();

template <class Ops, bool kMin>
LS_AMX_TARGET void amx_chunk_tile(const ls::GemmQ8cW* w, int64_t nc, const ls::GemmQ8cX* x,
                                  int n_groups, int n_rows, int n_tok, float* y, int64_t ldy) {
  constexpr int R = 16;
  Ops o;
  o.config(kAmxChunkTiles);
  alignas(64) LsAmxV16f acc[R][2];
  for (auto& r : acc)
    for (auto& g : r) g = LsAmxV16f{};  // +0, as the chunk form starts
  // The tiles' sums as stored, two chunks' worth: [chunk & 1][2g + plane][row].
  alignas(64) int32_t cb[2][4][R][16];
  const bool two = n_groups > 1;
  // The tile multiplies of chunk c into cb[buf].
  auto multiply = [&](int64_t c, int buf) LS_AMX_TARGET {
    const ls::GemmQ8cW* wc = w + c;
    const ls::GemmQ8cX* x0 = x + c;
    const ls::GemmQ8cX* x1 = x + nc + c;
    o.template zero<0>();
    o.template zero<1>();
    if (two) {
      o.template zero<2>();
      o.template zero<3>();
    }
    for (int s = 0; s < 4; ++s) {
      o.template load<4>(wc->hi[s], 64);
      o.template load<5>(wc->lo[s], 64);
      o.template load<6>(x0->b[s], 64);
      o.template dp_ss<0, 4, 6>();
      o.template dp_us<1, 5, 6>();
      if (two) {
        o.template load<7>(x1->b[s], 64);
        o.template dp_ss<2, 4, 7>();
        o.template dp_us<3, 5, 7>();
      }
    }
    o.template store<0>(cb[buf][0], 64);
    o.template store<1>(cb[buf][1], 64);
    if (two) {
      o.template store<2>(cb[buf][2], 64);
      o.template store<3>(cb[buf][3], 64);
    }
  };
  // Chunk c + 1 on the tile unit while the vector units run chunk c's float
  // step (the sums go to the other buffer).
  multiply(0, 0);
  for (int64_t c = 0; c < nc; ++c) {
    const int buf = static_cast<int>(c & 1);
    if (c + 1 < nc) multiply(c + 1, buf ^ 1);
    const ls::GemmQ8cW& wc = w[c];
    for (int g = 0; g < n_groups; ++g) {
      const ls::GemmQ8cX* xg = x + g * nc + c;
      const LsAmxV16f dx = amx_load16<LsAmxV16f>(xg->dx);
      LsAmxV16i bs[4];
      if constexpr (kMin)
        for (int p = 0; p < 4; ++p) bs[p] = amx_load16<LsAmxV16i>(xg->bs[p]);
      for (int r = 0; r < R; ++r) {
        const LsAmxV16i hi = amx_load16<LsAmxV16i>(cb[buf][2 * g][r]);
        const LsAmxV16i lo = amx_load16<LsAmxV16i>(cb[buf][2 * g + 1][r]);
        const LsAmxV16i A = hi * 64 + lo;  // exact: |A| < 2^28
        LsAmxV16f a = acc[r][g];
        a = a + __builtin_convertvector(A, LsAmxV16f) * (wc.d[r] * dx);
        if constexpr (kMin) {
          LsAmxV16i B = LsAmxV16i{};
          for (int p = 0; p < 4; ++p) B = o.dpwssd(B, bs[p], wc.mn[p][r]);
          a = a - __builtin_convertvector(B, LsAmxV16f) * (wc.dmin[r] * dx);
        }
        acc[r][g] = a;
      }
    }
  }
  o.release();
  for (int r = 0; r < n_rows; ++r)
    for (int t = 0; t < n_tok; ++t) y[t * ldy + r] = acc[r][t / 16][t % 16];
}

template <class Ops>
LS_AMX_TARGET void amx_chunk_tile_any(ls::GgmlType t, const ls::GemmQ8cW* w, int64_t nc,
                                      const ls::GemmQ8cX* x, int n_groups, int n_rows, int n_tok,
                                      float* y, int64_t ldy) {
  if (t == ls::GgmlType::Q6_K)
    amx_chunk_tile<Ops, false>(w, nc, x, n_groups, n_rows, n_tok, y, ldy);
  else
    amx_chunk_tile<Ops, true>(w, nc, x, n_groups, n_rows, n_tok, y, ldy);
}

}  // namespace
}  // namespace ls
