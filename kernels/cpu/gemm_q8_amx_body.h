// The AMX tile kernel's body (kernels/cpu/gemm_q8_amx.h), written once for
// two policies: the hardware's tile instructions (gemm_q8_amx.cpp) and their
// emulation (gemm_q8_amx_emu.cpp). Each includes it after defining
// LS_AMX_TARGET (the function attribute of its ISA) and
// the policy class, which has:
//     config(cfg), release()               the tile shapes (LDTILECFG) / back to init
//     load<T>(p, stride), store<T>(p, stride), zero<T>()
//     dp_us<C, A, B>(), dp_ss<C, A, B>()   C += A · B, A unsigned / signed bytes
//     fma(a, b, c), fnma(s, b, c)          a · b + c, c - s · b per lane (s: a float), one
//                                          rounding (static)
// Tiles: 0, 1: the int32 sums of token groups 0 and 1 (16 x 16); 2: 16
// weight rows' block (32 bytes); 3, 4: the groups' block (8 x 64); 5, 6, 7:
// the same for half a block (Q6_K's groups of 16 values).
//
// The float step is GCC vector code, 16 tokens a vector: one AVX-512
// instruction per operation in the hardware build, emulated lane by lane
// elsewhere, with the lane form's IEEE operations either way (contraction is
// off in both files; the lane form's fused steps are the policy's fma).
// (no defines: a body for gemm_q8_amx.cpp and gemm_q8_amx_emu.cpp)
#pragma once

#include <cstdint>
#include <cstring>

#include "io/ggml_type.h"
#include "kernels/cpu/gemm_q8.h"
#include "kernels/cpu/q8_lanes.h"

// Internal to the file that includes it: the two builds differ in their ISA.
namespace ls {
namespace {

typedef float LsAmxV16f __attribute__((vector_size(64)));
typedef int32_t LsAmxV16i __attribute__((vector_size(64)));

template <class V>
LS_AMX_TARGET inline V amx_load16(const void* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The lane form's accumulators of a call: row, token group, lane j; 16
// tokens a vector. Zeroed (+0, as the lane form starts), and at the end
// each (row, token)'s 8 lanes summed in the lane form's order into y.
using LsAmxAcc = LsAmxV16f[ls::kGemmQ8AmxGroup][2][8];
LS_AMX_TARGET inline void amx_acc_zero(LsAmxAcc& acc) {
  for (auto& r : acc)
    for (auto& g : r)
      for (auto& l : g) l = LsAmxV16f{};
}
LS_AMX_TARGET inline void amx_acc_out(const LsAmxAcc& acc, int n_rows, int n_tok, float* y,
                                      int64_t ldy) {
  for (int r = 0; r < n_rows; ++r)
    for (int t = 0; t < n_tok; ++t) {
      float lanes[8];
      for (int j = 0; j < 8; ++j) lanes[j] = acc[r][t / 16][j][t % 16];
      y[t * ldy + r] = ls::q8_lanes_sum(lanes);
    }
}

// The shapes of the tiles above, as LDTILECFG reads them (palette 1).
struct alignas(64) AmxTileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {64, 64, 32, 64, 64, 16, 64, 64};
  uint8_t rows[16] = {16, 16, 16, 8, 8, 16, 4, 4};
};
static_assert(sizeof(AmxTileConfig) == 64, "LDTILECFG reads 64 bytes");
constexpr AmxTileConfig kAmxLaneTiles{};

// D: how many steps ahead of the float step the tile unit multiplies
// (gemm_q8_amx.h: GemmQ8AmxTileFn's ahead); D + 1 buffers of sums.
template <class Ops, ls::GgmlType TY, int D>
LS_AMX_TARGET void amx_tile(const ls::GemmQ8WChunk* w, int64_t nc, const ls::GemmQ8AmxX* x,
                            int n_groups, int n_rows, int n_tok, float* y, int64_t ldy) {
  using ls::GgmlType;
  constexpr bool kQ6 = TY == GgmlType::Q6_K, kQ8 = TY == GgmlType::Q8_0;
  constexpr int R = ls::kGemmQ8AmxGroup;  // rows of a weight tile (16, as the group)
  Ops o;
  o.config(kAmxLaneTiles);
  alignas(64) LsAmxAcc acc;
  amx_acc_zero(acc);
  // The tiles' sums as stored, D + 1 steps' worth: [step % (D + 1)][g] the
  // block (Q6_K: its lo half), [step % (D + 1)][2 + g] Q6_K's hi half.
  constexpr int kBufs = D + 1;
  alignas(64) int32_t cb[kBufs][4][R][16];
  // Row r's chunk c at w[c * R + r] (kernels/cpu/gemm_q8_amx.h): a tile
  // load's rows are a chunk apart.
  const int64_t stride = static_cast<int64_t>(sizeof(ls::GemmQ8WChunk));
  const bool two = n_groups > 1;
  // The tile multiplies of step (c, j) into cb[buf].
  auto multiply = [&](int64_t c, int j, int buf) LS_AMX_TARGET {
    const ls::GemmQ8WChunk* wc = w + c * R;
    const ls::GemmQ8AmxX* xc0 = x + c;
    const ls::GemmQ8AmxX* xc1 = x + nc + c;
    if constexpr (kQ6) {
      for (int h = 0; h < 2; ++h) {
        o.template load<5>(wc->u + 32 * j + 16 * h, stride);
        o.template load<6>(xc0->b[j] + 256 * h, 64);
        o.template zero<0>();
        o.template dp_us<0, 5, 6>();
        o.template store<0>(cb[buf][2 * h], 64);
        if (two) {
          o.template load<7>(xc1->b[j] + 256 * h, 64);
          o.template zero<1>();
          o.template dp_us<1, 5, 7>();
          o.template store<1>(cb[buf][2 * h + 1], 64);
        }
      }
    } else {
      o.template load<2>(wc->u + 32 * j, stride);
      o.template load<3>(xc0->b[j], 64);
      o.template zero<0>();
      if constexpr (kQ8)
        o.template dp_ss<0, 2, 3>();
      else
        o.template dp_us<0, 2, 3>();
      o.template store<0>(cb[buf][0], 64);
      if (two) {
        o.template load<4>(xc1->b[j], 64);
        o.template zero<1>();
        if constexpr (kQ8)
          o.template dp_ss<1, 2, 4>();
        else
          o.template dp_us<1, 2, 4>();
        o.template store<1>(cb[buf][1], 64);
      }
    }
  };
  // Steps (c, j) in order; the tile unit multiplies step i + D while the
  // vector units run step i's float step (the sums go to another buffer:
  // the float step reads sums stored D steps before). D = 1 left the two
  // parts barely overlapping on the Xeon (session 21: each cost what the
  // whole did less the other); D = 2 gives a tile store a whole float step
  // more to land before its sums are loaded (LS_AMX_AHEAD, session 43).
  const int64_t steps = nc * 8;
  for (int64_t s = 0; s < D && s < steps; ++s)
    multiply(s / 8, static_cast<int>(s % 8), static_cast<int>(s % kBufs));
  for (int64_t i = 0; i < steps; ++i) {
    const int64_t c = i / 8;
    const int j = static_cast<int>(i % 8), buf = static_cast<int>(i % kBufs);
    if (i + D < steps)
      multiply((i + D) / 8, static_cast<int>((i + D) % 8), static_cast<int>((i + D) % kBufs));
    // The float step of lane j, chunk c: every (row, token) pair.
    const ls::GemmQ8WChunk* wc = w + c * R;
    const ls::GemmQ8AmxX* xg[2] = {x + c, x + nc + c};
    LsAmxV16f d[2] = {}, dl[2] = {}, dh[2] = {};
    for (int g = 0; g < n_groups; ++g) {
      d[g] = amx_load16<LsAmxV16f>(xg[g]->d[j]);
      if constexpr (kQ6) {
        dl[g] = amx_load16<LsAmxV16f>(xg[g]->ds_lo[j]);
        dh[g] = amx_load16<LsAmxV16f>(xg[g]->ds_hi[j]);
      } else {
        dl[g] = amx_load16<LsAmxV16f>(xg[g]->ds[j]);
      }
    }
    for (int r = 0; r < R; ++r) {
      const ls::GemmQ8WChunk& wr = wc[r];
      const float s = wr.s[j], m = wr.m[j];
      for (int g = 0; g < n_groups; ++g) {
        LsAmxV16f a = acc[r][g][j];
        const LsAmxV16f I =
            __builtin_convertvector(amx_load16<LsAmxV16i>(cb[buf][g][r]), LsAmxV16f);
        a = Ops::fma(s * d[g], I, a);
        if constexpr (kQ6) {
          const LsAmxV16f hi =
              __builtin_convertvector(amx_load16<LsAmxV16i>(cb[buf][2 + g][r]), LsAmxV16f);
          a = Ops::fma(wr.s_hi[j] * d[g], hi, a);
          a = Ops::fnma(m, dl[g], a);
          a = Ops::fnma(wr.m_hi[j], dh[g], a);
        } else if constexpr (!kQ8) {
          a = Ops::fnma(m, dl[g], a);
        }
        acc[r][g][j] = a;
      }
    }
  }
  o.release();
  amx_acc_out(acc, n_rows, n_tok, y, ldy);
}

// The same products and float steps in lane-major order (GemmQ8AmxForm::
// lanes): for each token group g and lane j the chunks c in order, so the
// 16 rows' accumulators of (g, j) live in registers through the chunks, not
// in memory (the order above loads and stores an accumulator for every
// (row, group) a step: half the float step's memory operations, and 32
// stores of 64 bytes a step beside the tile stores). Each accumulator lane
// sees the same operations in the same order (chunk by chunk), so the bits
// are the same. The price: one token group a tile multiply (the weight tile
// is loaded again for the second group, from L1 or L2).
template <class Ops, ls::GgmlType TY, int D>
LS_AMX_TARGET void amx_tile_lanes(const ls::GemmQ8WChunk* w, int64_t nc, const ls::GemmQ8AmxX* x,
                                  int n_groups, int n_rows, int n_tok, float* y, int64_t ldy) {
  using ls::GgmlType;
  constexpr bool kQ6 = TY == GgmlType::Q6_K, kQ8 = TY == GgmlType::Q8_0;
  constexpr int R = ls::kGemmQ8AmxGroup;
  Ops o;
  o.config(kAmxLaneTiles);
  alignas(64) LsAmxAcc acc;
  amx_acc_zero(acc);
  // [step % (D + 1)][0] the block's sums (Q6_K: its lo half), [..][1] Q6_K's hi half.
  constexpr int kBufs = D + 1;
  alignas(64) int32_t cb[kBufs][2][R][16];
  const int64_t stride = static_cast<int64_t>(sizeof(ls::GemmQ8WChunk));
  // A step's place: chunk c of lane j of group g (c fastest).
  struct Pos {
    int64_t c = 0;
    int j = 0, g = 0;
    void next(int64_t n) {
      if (++c < n) return;
      c = 0;
      if (++j < 8) return;
      j = 0;
      ++g;
    }
  };
  auto multiply = [&](const Pos& p, int buf) LS_AMX_TARGET {
    const ls::GemmQ8WChunk* wc = w + p.c * R;
    const ls::GemmQ8AmxX* xc = x + p.g * nc + p.c;
    if constexpr (kQ6) {
      for (int h = 0; h < 2; ++h) {
        o.template load<5>(wc->u + 32 * p.j + 16 * h, stride);
        o.template load<6>(xc->b[p.j] + 256 * h, 64);
        o.template zero<0>();
        o.template dp_us<0, 5, 6>();
        o.template store<0>(cb[buf][h], 64);
      }
    } else {
      o.template load<2>(wc->u + 32 * p.j, stride);
      o.template load<3>(xc->b[p.j], 64);
      o.template zero<0>();
      if constexpr (kQ8)
        o.template dp_ss<0, 2, 3>();
      else
        o.template dp_us<0, 2, 3>();
      o.template store<0>(cb[buf][0], 64);
    }
  };
  const int64_t steps = int64_t{n_groups} * 8 * nc;
  Pos ahead;  // the step the tile unit multiplies next
  for (int64_t s = 0; s < D && s < steps; ++s) {
    multiply(ahead, static_cast<int>(s % kBufs));
    ahead.next(nc);
  }
  Pos at;
  LsAmxV16f a[R];
  for (int64_t s = 0; s < steps; ++s) {
    if (s + D < steps) {
      multiply(ahead, static_cast<int>((s + D) % kBufs));
      ahead.next(nc);
    }
    if (at.c == 0)
      for (auto& v : a) v = LsAmxV16f{};  // +0, as the lane form starts
    const int buf = static_cast<int>(s % kBufs), j = at.j;
    const ls::GemmQ8WChunk* wc = w + at.c * R;
    const ls::GemmQ8AmxX* xc = x + at.g * nc + at.c;
    const LsAmxV16f d = amx_load16<LsAmxV16f>(xc->d[j]);
    const LsAmxV16f dl = amx_load16<LsAmxV16f>(kQ6 ? xc->ds_lo[j] : xc->ds[j]);
    const LsAmxV16f dh = kQ6 ? amx_load16<LsAmxV16f>(xc->ds_hi[j]) : LsAmxV16f{};
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const ls::GemmQ8WChunk& wr = wc[r];
      const LsAmxV16f I = __builtin_convertvector(amx_load16<LsAmxV16i>(cb[buf][0][r]), LsAmxV16f);
      a[r] = Ops::fma(wr.s[j] * d, I, a[r]);
      if constexpr (kQ6) {
        const LsAmxV16f hi =
            __builtin_convertvector(amx_load16<LsAmxV16i>(cb[buf][1][r]), LsAmxV16f);
        a[r] = Ops::fma(wr.s_hi[j] * d, hi, a[r]);
        a[r] = Ops::fnma(wr.m[j], dl, a[r]);
        a[r] = Ops::fnma(wr.m_hi[j], dh, a[r]);
      } else if constexpr (!kQ8) {
        a[r] = Ops::fnma(wr.m[j], dl, a[r]);
      }
    }
    if (at.c == nc - 1)
      for (int r = 0; r < R; ++r) acc[r][at.g][j] = a[r];
    at.next(nc);
  }
  o.release();
  amx_acc_out(acc, n_rows, n_tok, y, ldy);
}

// The kernel for a type (the types gemm_q8_parts takes) and a lookahead.
template <class Ops, int D, bool kLanes>
LS_AMX_TARGET void amx_tile_type(ls::GgmlType t, const ls::GemmQ8WChunk* w, int64_t nc,
                                 const ls::GemmQ8AmxX* x, int n_groups, int n_rows, int n_tok,
                                 float* y, int64_t ldy) {
  using ls::GgmlType;
  auto run = [&]<GgmlType T>() LS_AMX_TARGET {
    if constexpr (kLanes)
      amx_tile_lanes<Ops, T, D>(w, nc, x, n_groups, n_rows, n_tok, y, ldy);
    else
      amx_tile<Ops, T, D>(w, nc, x, n_groups, n_rows, n_tok, y, ldy);
  };
  switch (t) {
    case GgmlType::Q4_0:
      return run.template operator()<GgmlType::Q4_0>();
    case GgmlType::Q8_0:
      return run.template operator()<GgmlType::Q8_0>();
    case GgmlType::Q4_K:
      return run.template operator()<GgmlType::Q4_K>();
    case GgmlType::Q5_K:
      return run.template operator()<GgmlType::Q5_K>();
    case GgmlType::Q6_K:
      return run.template operator()<GgmlType::Q6_K>();
    default:
      return;
  }
}
template <class Ops>
LS_AMX_TARGET void amx_tile_any(ls::GgmlType t, const ls::GemmQ8WChunk* w, int64_t nc,
                                const ls::GemmQ8AmxX* x, int n_groups, int n_rows, int n_tok,
                                float* y, int64_t ldy, ls::GemmQ8AmxForm form) {
  if (form.lanes) {
    if (form.ahead >= 2)
      return amx_tile_type<Ops, 2, true>(t, w, nc, x, n_groups, n_rows, n_tok, y, ldy);
    return amx_tile_type<Ops, 1, true>(t, w, nc, x, n_groups, n_rows, n_tok, y, ldy);
  }
  if (form.ahead >= 2)
    return amx_tile_type<Ops, 2, false>(t, w, nc, x, n_groups, n_rows, n_tok, y, ldy);
  return amx_tile_type<Ops, 1, false>(t, w, nc, x, n_groups, n_rows, n_tok, y, ldy);
}

}  // namespace
}  // namespace ls
