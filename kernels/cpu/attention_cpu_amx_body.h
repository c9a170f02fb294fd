// The AMX attention block's body (kernels/cpu/attention_cpu_block.h), written
// once for two policies: the hardware's tile instructions with AVX-512
// (attention_cpu_amx.cpp) and their emulation in plain C++
// (attention_cpu_amx_emu.cpp). Each includes it after defining
// LS_ATTN_TARGET and its vector type V (attention_cpu_body.h's, W = 16) and
// tile policy, which has:
//     config(ngp), release()                tiles below / back to init
//     load<T>(p, stride), store<T>(p, stride), zero<T>()
//     dp<C, A, B>()                         TDPBF16PS: C += A · B
//     pack_keys(k, hd, hi, lo)              a key row into its two bf16 rows
//     pack_q(q, group, ngp, hd, qt)         the queries into B tiles
// Tiles: 0, 1: the scores of positions 0-15 and 16-31 of a span of 32 (16
// rows × ngp floats); 2, 3: keys hi and lo of positions 0-15 (16 rows × 32
// bf16: 32 dims); 4, 5: the same for positions 16-31; 6, 7: one part of the
// queries for 32 dims (16 rows of dim pairs × ngp heads × 2 bf16).
//
// The scores as products of bf16 parts, exact to f32's precision:
//   k = k_hi + k_lo   k_hi: k (an f16 value) truncated to bf16, k_lo = k -
//                     k_hi: both exact (f16's 11 significant bits are 8 + 3);
//   q = q1 + q2 + q3  each the bf16 nearest to what the earlier parts left
//                     (f32's 24 bits are 8 + 8 + 8);
//   q·k = q1·k_hi + q1·k_lo + q2·k_hi + q2·k_lo + q3·k_hi  (+ q3·k_lo, left
//         out: below 2^-23 of |q|·|k|, as an f32 rounding).
// Each bf16 product is exact in f32; TDPBF16PS sums them in f32 (round to
// nearest even). So a score has an f32 dot product's error, in another order
// (the CPU tests' bound, tests/unit/kernels/test_cpu_attention.cpp).
//
// Layouts (thread-local, L1-sized): the block's keys in spans of 32
// positions, hi and lo rows of head_dim bf16; the query parts as B tiles,
// part j of dims [32c, 32c + 32) at qt + (j · n_chunks + c) · 16 · ngp · 2,
// row r holding dims 32c + 2r and 32c + 2r + 1 of heads 0..ngp-1 (heads from
// group on zero); the scores position-major, ngp a position (ngp = 8, or 16
// for groups of 9-16): the weights' layout EP = ngp of block_values_all.
// defines (internal): attn_block_amx<V, Tiles>, kAmxMaxHeadDim, kAmxMaxGroup
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/attention_cpu_block.h"
#include "kernels/cpu/attention_cpu_body.h"

#ifndef LS_ATTN_TARGET
#error "define LS_ATTN_TARGET before including attention_cpu_amx_body.h"
#endif

namespace ls {
namespace {

inline constexpr int kAmxSpan = 32;  // positions a span of tile multiplies covers
inline constexpr int kAmxMaxHeadDim = 256;
inline constexpr int kAmxMaxGroup = 16;

// The tile shapes above, as LDTILECFG reads them (palette 1).
struct alignas(64) AmxAttnTileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
  explicit AmxAttnTileConfig(int ngp) {
    for (int t = 0; t < 8; ++t) {
      rows[t] = 16;
      colsb[t] = static_cast<uint16_t>(t >= 2 && t <= 5 ? 64 : ngp * 4);
    }
  }
};
static_assert(sizeof(AmxAttnTileConfig) == 64, "LDTILECFG reads 64 bytes");

// A thread's buffers (64-byte aligned: tile rows and vector stores).
struct alignas(64) AmxAttnScratch {
  uint16_t qt[3 * (kAmxMaxHeadDim / 32) * 16 * kAmxMaxGroup * 2];  // the query parts
  uint16_t k_hi[kAmxSpan * kAmxMaxHeadDim], k_lo[kAmxSpan * kAmxMaxHeadDim];
  float st[kAttnBlock * kAmxMaxGroup];  // scores, then weights: (position, ngp)
};

inline AmxAttnScratch& amx_attn_scratch() {
  static thread_local AmxAttnScratch s;
  return s;
}

// Scores of the block into s.st (unscaled, position-major; rows past n_pos
// hold zeros' products), prefetching as the AVX-512 scores loop does.
template <class V, class Tiles>
LS_ATTN_TARGET void amx_scores(const AttnBlockArgs& a, int ngp, Tiles& o, AmxAttnScratch& s) {
  const int hd = a.head_dim, n = a.n_pos, nch = hd / 32;
  const int64_t row_bytes = int64_t{hd} * 2, q_part = int64_t{nch} * 16 * ngp * 2;
  const bool keys = a.prefetch & (kAttnPfKeysL1 | kAttnPfKeysL2);
  const bool keys_l2 = !(a.prefetch & kAttnPfKeysL1);
  const bool values = a.prefetch & kAttnPfValues;
  if (keys)
    for (int p = 0; p < a.ahead && p < n; ++p)
      prefetch_row<V>(kv_row<uint16_t>(a, a.k_run, p), row_bytes, keys_l2);
  o.pack_q(a.q, a.group, ngp, hd, s.qt);
  for (int p0 = 0; p0 < n; p0 += kAmxSpan) {
    for (int j = 0; j < kAmxSpan; ++j) {
      const int p = p0 + j;
      uint16_t* hi = s.k_hi + int64_t{j} * hd;
      uint16_t* lo = s.k_lo + int64_t{j} * hd;
      if (p >= n) {
        std::memset(hi, 0, static_cast<size_t>(row_bytes));
        std::memset(lo, 0, static_cast<size_t>(row_bytes));
        continue;
      }
      if (keys && p + a.ahead < n)
        prefetch_row<V>(kv_row<uint16_t>(a, a.k_run, p + a.ahead), row_bytes, keys_l2);
      if (values) prefetch_row<V>(kv_row<uint16_t>(a, a.v_run, p), row_bytes, true);
      o.pack_keys(kv_row<uint16_t>(a, a.k_run, p), hd, hi, lo);
    }
    o.template zero<0>();
    o.template zero<1>();
    for (int c = 0; c < nch; ++c) {
      o.template load<2>(s.k_hi + c * 32, row_bytes);
      o.template load<3>(s.k_lo + c * 32, row_bytes);
      o.template load<4>(s.k_hi + 16 * hd + c * 32, row_bytes);
      o.template load<5>(s.k_lo + 16 * hd + c * 32, row_bytes);
      const uint16_t* q = s.qt + int64_t{c} * 16 * ngp * 2;
      o.template load<6>(q, ngp * 4);  // q1
      o.template dp<0, 2, 6>();
      o.template dp<1, 4, 6>();
      o.template dp<0, 3, 6>();
      o.template dp<1, 5, 6>();
      o.template load<7>(q + q_part, ngp * 4);  // q2
      o.template dp<0, 2, 7>();
      o.template dp<1, 4, 7>();
      o.template dp<0, 3, 7>();
      o.template dp<1, 5, 7>();
      o.template load<6>(q + 2 * q_part, ngp * 4);  // q3
      o.template dp<0, 2, 6>();
      o.template dp<1, 4, 6>();
    }
    o.template store<0>(s.st + int64_t{p0} * ngp, ngp * 4);
    o.template store<1>(s.st + int64_t{p0 + 16} * ngp, ngp * 4);
  }
}

// Scale, max, exp and sum over the position-major scores, W / NGP positions
// a vector: m and l of each head g < group into the triple, e in place.
template <class V, int NGP>
LS_ATTN_TARGET void amx_softmax(const AttnBlockArgs& a, float* st) {
  using F = typename V::F;
  static_assert(V::W == 16 && (NGP == 8 || NGP == 16), "one or two positions a vector");
  constexpr int kPer = V::W / NGP;  // positions a vector
  const int n = a.n_pos, n_pad = (n + kPer - 1) / kPer * kPer;
  for (int64_t i = int64_t{n} * NGP; i < int64_t{n_pad} * NGP; ++i) st[i] = -INFINITY;
  const F scale = V::set1(a.scale), zero = V::zero();
  F mx = V::set1(-INFINITY);
  for (int64_t i = 0; i < int64_t{n_pad} * NGP; i += V::W) {
    const F x = V::fma(V::load(st + i), scale, zero);  // the f32 product, once rounded
    V::store(st + i, x);
    mx = V::max(mx, x);
  }
  if constexpr (kPer == 2) mx = V::max(mx, V::swap_halves(mx));
  F sum = V::zero();
  for (int64_t i = 0; i < int64_t{n_pad} * NGP; i += V::W) {
    const F e = V::exp(V::sub(V::load(st + i), mx));
    V::store(st + i, e);
    sum = V::add(sum, e);
  }
  if constexpr (kPer == 2) sum = V::add(sum, V::swap_halves(sum));
  alignas(64) float m[V::W], l[V::W];
  V::store(m, mx);
  V::store(l, sum);
  for (int g = 0; g < a.group; ++g) {
    a.triple[g] = m[g];
    a.triple[a.group + g] = l[g];
  }
}

template <class V, class Tiles>
LS_ATTN_TARGET void attn_block_amx(const AttnBlockArgs& a) {
  AmxAttnScratch& s = amx_attn_scratch();
  const int ngp = a.group <= 8 ? 8 : 16;
  Tiles o;
  o.config(ngp);
  amx_scores<V>(a, ngp, o, s);
  o.release();
  if (ngp == 8) {
    amx_softmax<V, 8>(a, s.st);
    block_values_all<V, uint16_t, 8>(a, s.st);
  } else {
    amx_softmax<V, 16>(a, s.st);
    block_values_all<V, uint16_t, 16>(a, s.st);
  }
}

}  // namespace
}  // namespace ls
