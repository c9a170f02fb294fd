// The body of one attention block (kernels/cpu/attention_cpu_block.h),
// templated over a vector type V, for the ISA files to instantiate: each
// includes it after defining LS_ATTN_TARGET (its target attribute) and V.
// Everything here has internal linkage, so the three copies never mix.
//
// V provides: F (the register type), W (lanes), kAcc (accumulator registers
// the value loop may use), kTiledNg and kTiledAcc (query heads a pass and
// accumulator registers of the tiled scores loop), zero, set1, load(const float*), load(const
// uint16_t*) (f16 -> f32), store, fma(a, b, c) = a·b + c, mul, sub, max, add,
// hsum, hsums(W vectors, scale, out: out[i] = hsum(vector i) · scale), hmax,
// exp (exp(-inf) = 0), prefetch_l1, prefetch_l2.
//
// The scores loop reads the key rows a tile of positions at a time,
// converting W values at a time, and FMAs them into the accumulators of a
// tile of NG query heads (up to 8 at a time) × P positions (block_scores
// says why). It also prefetches (AttnBlockArgs::prefetch; by default) the
// key row `ahead` positions on and the value row of each position (to L2),
// so the value loop finds its block in cache. The value loop runs over tiles of R·W dims: NG × R
// accumulators in registers, each position's value tile converted once and FMA'd with each head's
// broadcast weight. With tiled keys (AttnKv::k_tiled) the scores loop is block_scores_tiled
// instead: a lane per position, no horizontal sums. A block of several tokens of one sequence
// (AttnBlockArgs::tokens) runs the scores loop per token (each token's query rows contiguous)
// and the softmax and value loops over all tokens · group rows: a row's arithmetic is the
// same whatever rows run beside it, so its bits are those of its token alone.
// defines (internal): attn_block<V>
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/cpu/attention_cpu.h"
#include "kernels/cpu/attention_cpu_block.h"

#ifndef LS_ATTN_TARGET
#error "define LS_ATTN_TARGET before including attention_cpu_body.h"
#endif

namespace ls {
namespace {

template <class V, class T>
LS_ATTN_TARGET inline void prefetch_row(const T* p, int64_t bytes, bool l2) {
  const char* c = reinterpret_cast<const char*>(p);
  for (int64_t i = 0; i < bytes; i += 64) {
    if (l2)
      V::prefetch_l2(c + i);
    else
      V::prefetch_l1(c + i);
  }
}

// Scores of the NG query rows at q (head_dim apart) over the block, into the
// score rows at s (kAttnBlock apart); fetch: this is the first pass over the
// keys (prefetch them, and the values).
//
// Tiles of NG heads × P positions, NG·P = W where the group allows: per
// W-dim chunk, P key vectors converted once and NG query vectors loaded
// once feed NG·P accumulators, and V::hsums turns the W accumulators into
// the tile's W scores at once (a transposed reduction: a fraction of the
// shuffles of W separate horizontal sums, which were a third of this
// loop's instructions). The last tile of a block repeats its last position
// past n_pos and drops those scores, so every score is the same arithmetic
// wherever its position falls.
template <class V, class T, int NG>
LS_ATTN_TARGET void block_scores(const AttnBlockArgs& a, const float* q, float* s, bool fetch) {
  using F = typename V::F;
  constexpr int P = V::W >= NG ? V::W / NG : 1;
  const int hd = a.head_dim, n = a.n_pos;
  const int64_t row_bytes = int64_t{hd} * static_cast<int64_t>(sizeof(T));
  const int ahead = a.ahead;
  const bool keys = fetch && (a.prefetch & (kAttnPfKeysL1 | kAttnPfKeysL2));
  const bool keys_l2 = !(a.prefetch & kAttnPfKeysL1);
  const bool values = fetch && (a.prefetch & kAttnPfValues);
  if (keys)
    for (int p = 0; p < ahead && p < n; ++p)
      prefetch_row<V>(kv_row<T>(a, a.k_run, p), row_bytes, keys_l2);
  for (int p0 = 0; p0 < n; p0 += P) {
    const T* kp[P];
    for (int j = 0; j < P; ++j) kp[j] = kv_row<T>(a, a.k_run, p0 + j < n ? p0 + j : n - 1);
    for (int p = p0; p < p0 + P && p < n; ++p) {
      if (keys && p + ahead < n)
        prefetch_row<V>(kv_row<T>(a, a.k_run, p + ahead), row_bytes, keys_l2);
      if (values) prefetch_row<V>(kv_row<T>(a, a.v_run, p), row_bytes, true);
    }
    F acc[NG * P];
    for (int i = 0; i < NG * P; ++i) acc[i] = V::zero();
    for (int c = 0; c < hd; c += V::W) {
      F x[P];
      for (int j = 0; j < P; ++j) x[j] = V::load(kp[j] + c);
      for (int g = 0; g < NG; ++g) {
        const F qg = V::load(q + g * hd + c);
        for (int j = 0; j < P; ++j) acc[g * P + j] = V::fma(qg, x[j], acc[g * P + j]);
      }
    }
    float t[NG * P];
    if constexpr (NG * P == V::W)
      V::hsums(acc, a.scale, t);
    else
      for (int i = 0; i < NG * P; ++i) t[i] = V::hsum(acc[i]) * a.scale;
    for (int g = 0; g < NG; ++g)
      for (int j = 0; j < P && p0 + j < n; ++j) s[g * kAttnBlock + p0 + j] = t[g * P + j];
  }
}

// One step of block_scores_tiled: NG × PV score vectors into to[g·PV + j].
// qt: the NG heads' queries transposed, (hd, NG), so a dim's NG broadcasts
// are one pointer plus constants (with NG row pointers GCC ran out of
// registers and moved them through vector ones, on the FMA ports).
// Prefetches (pk: PV key vectors of a later step, pv: this step's PV
// vectors of value rows; null: none) a line or so every two dims, at the
// dim's share of each run: a key vector's row d lies at d · kAttnKTile
// elements, W value rows hold W · hd elements; so the reads in flight
// follow the loop, rather than 256 prefetches issued at each step's start
// (that form stalled the Xeon: 1.4x slower than the row form on one thread).
// (A function of its own so that acc lives in registers: inline in the
// step loop, GCC kept it in memory too, a store per FMA.)
template <class V, class T, int NG, int PV>
LS_ATTN_TARGET inline void tiled_step(const T* const* kp, const float* qt, int hd, float scale,
                                      float* const* to, const T* const* pk, bool pk_l2,
                                      const T* const* pv) {
  using F = typename V::F;
  constexpr int W = V::W;
  F acc[NG * PV];
  for (int i = 0; i < NG * PV; ++i) acc[i] = V::zero();
  const T* k[PV];
  for (int j = 0; j < PV; ++j) k[j] = kp[j];
  for (int d = 0; d < hd; d += 2) {  // head_dim is even
    if (pk)
      for (int j = 0; j < PV; ++j) {
        const char* c = reinterpret_cast<const char*>(pk[j] + int64_t{d} * kAttnKTile);
        if (pk_l2)
          V::prefetch_l2(c);
        else
          V::prefetch_l1(c);
      }
    if (pv)
      for (int j = 0; j < PV; ++j)
        V::prefetch_l2(reinterpret_cast<const char*>(pv[j] + int64_t{d} * W));
    for (int u = 0; u < 2; ++u) {
      F x[PV];
      for (int j = 0; j < PV; ++j) x[j] = V::load(k[j]), k[j] += kAttnKTile;
      const float* qd = qt + int64_t{d + u} * NG;
      for (int g = 0; g < NG; ++g) {
        const F qg = V::set1(qd[g]);
        for (int j = 0; j < PV; ++j) acc[g * PV + j] = V::fma(qg, x[j], acc[g * PV + j]);
      }
    }
  }
  const F sc = V::set1(scale);
  for (int i = 0; i < NG * PV; ++i) V::store(to[i], V::mul(acc[i], sc));
}

// Scores of the NG query rows at q over tiled keys (AttnKv::k_tiled), into
// the score rows at s: a lane per position. Per dim d, PV vectors of W positions' keys (W
// consecutive values of row d of their tile) are converted once and FMA'd
// with each head's broadcast q[g][d] into NG × PV accumulators: no
// horizontal sums, no scalar stores, and one load of keys per W·NG FMAs
// where the row form needs one of queries per FMA. Each score is one chain
// over d in order, so its bits do not depend on where its position falls.
// Vectors past n_pos repeat the last one and are dropped; lanes past n_pos
// in the last vector hold whatever the tile holds there, and block_softmax
// overwrites them (-inf) before anything reads them. A step prefetches the
// keys of the step `ahead` positions on (at least the next) and its own
// positions' value rows (to L2), spread over its dims (tiled_step).
template <class V, class T, int NG, int PV>
LS_ATTN_TARGET void block_scores_tiled(const AttnBlockArgs& a, const float* q, float* s,
                                       bool fetch) {
  constexpr int W = V::W, kStep = PV * W;
  static_assert(kAttnKTile % W == 0, "a vector's positions lie in one tile");
  const int hd = a.head_dim, n = a.n_pos;
  for (int d = 0; d < hd; ++d)
    for (int g = 0; g < NG; ++g) a.q_t[d * NG + g] = q[int64_t{g} * hd + d];
  const bool keys = fetch && (a.prefetch & (kAttnPfKeysL1 | kAttnPfKeysL2));
  const bool keys_l2 = !(a.prefetch & kAttnPfKeysL1);
  const bool values_first = fetch && (a.prefetch & kAttnPfValuesFirst);
  const bool values = fetch && (a.prefetch & kAttnPfValues) && !values_first;
  // Keys `ahead` positions on, in whole steps, at least one.
  const int ahead = std::max(kStep, (a.ahead + kStep - 1) / kStep * kStep);
  // Position p's vector: row 0 of its tile, at its lane offset.
  auto vec = [&](int p) {
    return kv_row<T>(a, a.k_run, p & ~(kAttnKTile - 1)) + (p & (kAttnKTile - 1));
  };
  if (keys)  // the steps before the first prefetched one
    for (int p = 0; p < ahead && p < n; p += W)
      prefetch_row<V>(vec(p) - (p & (kAttnKTile - 1)), int64_t{hd} * kAttnKTile * sizeof(T),
                      keys_l2);
  if (values_first)  // the block's value rows, a tile's run at a time
    for (int p = 0; p < n; p += kAttnKTile)
      prefetch_row<V>(kv_row<T>(a, a.v_run, p),
                      int64_t{std::min(kAttnKTile, n - p)} * hd * sizeof(T), true);
  const int last = (n - 1) / W * W;  // the last vector's first position
  alignas(64) float sink[W];
  for (int p0 = 0; p0 < n; p0 += kStep) {
    const T* kp[PV];
    const T* pk[PV];
    const T* pv[PV];
    float* to[PV * NG];
    for (int j = 0; j < PV; ++j) {
      const int p = p0 + j * W < n ? p0 + j * W : last;
      kp[j] = vec(p);
      // Past the end: this step's own vector again (in L1 by then).
      pk[j] = p0 + ahead + j * W < n ? vec(p0 + ahead + j * W) : kp[j];
      pv[j] = kv_row<T>(a, a.v_run, p);
      for (int g = 0; g < NG; ++g)
        to[g * PV + j] = p0 + j * W < n ? s + int64_t{g} * kAttnBlock + p0 + j * W : sink;
    }
    // The last step takes only the vectors it has (at AVX2's 3 vectors of
    // 8 a step, a 128-position block's sixth step would compute 24
    // positions for 8); a score's arithmetic is the same in any step.
    const int have = std::min(PV, (n - p0 + W - 1) / W);
    auto run = [&](auto k) {
      constexpr int K = decltype(k)::value;
      const T *kk[K], *pkk[K], *pvv[K];
      float* tt[NG * K];
      for (int j = 0; j < K; ++j) {
        kk[j] = kp[j], pkk[j] = pk[j], pvv[j] = pv[j];
        for (int g = 0; g < NG; ++g) tt[g * K + j] = to[g * PV + j];
      }
      tiled_step<V, T, NG, K>(kk, a.q_t, hd, a.scale, tt, keys ? pkk : nullptr, keys_l2,
                              values ? pvv : nullptr);
    };
    if (have == PV) {
      tiled_step<V, T, NG, PV>(kp, a.q_t, hd, a.scale, to, keys ? pk : nullptr, keys_l2,
                               values ? pv : nullptr);
    } else if constexpr (PV > 1) {
      if (have == 1) run(std::integral_constant<int, 1>{});
      if constexpr (PV > 2)
        if (have == 2) run(std::integral_constant<int, 2>{});
      if constexpr (PV > 3)
        if (have == 3) run(std::integral_constant<int, 3>{});
    }
  }
}

// Tiled scores with as many position vectors as the accumulators allow, up
// to 4 (64 positions a step at W = 16: short blocks waste little).
template <class V, class T, int NG>
LS_ATTN_TARGET void block_scores_tiled_ng(const AttnBlockArgs& a, const float* q, float* s,
                                          bool fetch) {
  constexpr int pv = V::kTiledAcc / NG < 1 ? 1 : V::kTiledAcc / NG > 4 ? 4 : V::kTiledAcc / NG;
  block_scores_tiled<V, T, NG, pv>(a, q, s, fetch);
}

// m, l and e = exp(s - m) in place, per query row (every token's heads). Scores past n_pos (up to
// the next multiple of W) are set to -inf, so whole vectors can be used:
// they become e = 0 and add nothing.
template <class V>
LS_ATTN_TARGET void block_softmax(const AttnBlockArgs& a) {
  using F = typename V::F;
  const int n = a.n_pos, n_pad = (n + V::W - 1) / V::W * V::W;
  const int rows = a.group * a.tokens;
  float* m = a.triple;
  float* l = m + rows;
  for (int g = 0; g < rows; ++g) {
    float* s = a.scores + int64_t{g} * kAttnBlock;
    for (int p = n; p < n_pad; ++p) s[p] = -INFINITY;
    F mx = V::set1(-INFINITY);
    for (int p = 0; p < n_pad; p += V::W) mx = V::max(mx, V::load(s + p));
    const float mg = V::hmax(mx);
    const F mv = V::set1(mg);
    F sum = V::zero();
    for (int p = 0; p < n_pad; p += V::W) {
      const F e = V::exp(V::sub(V::load(s + p), mv));
      V::store(s + p, e);
      sum = V::add(sum, e);
    }
    m[g] = mg;
    l[g] = V::hsum(sum);
  }
}

// acc of query rows g0..g0+NG-1 (of every token's rows): tiles of R·W dims
// (head_dim % (R·W) == 0).
// fetch: prefetch the next block's keys (AttnBlockArgs::next_k) into L2,
// a line per (tile, position) iteration while any is left.
template <class V, class T, int NG, int R>
LS_ATTN_TARGET void block_values(const AttnBlockArgs& a, int g0, bool fetch) {
  using F = typename V::F;
  const int hd = a.head_dim;
  const float* e = a.scores + int64_t{g0} * kAttnBlock;
  float* acc = a.triple + 2 * a.group * a.tokens + int64_t{g0} * hd;
  // The next block's key lines, one per (tile, position) iteration until
  // none is left (a 70B block's keys are as many lines as the loop has
  // iterations at AVX-512's tiles: one a position, four passes).
  const int runs = fetch ? a.next_runs : 0;
  int run = 0;
  const char* line = runs ? static_cast<const char*>(a.next_k[0]) : nullptr;
  int64_t left = runs ? (runs > 1 ? a.next_run_bytes : a.next_last_bytes) : 0;
  for (int d0 = 0; d0 < hd; d0 += R * V::W) {
    F o[NG][R];
    for (int g = 0; g < NG; ++g)
      for (int r = 0; r < R; ++r) o[g][r] = V::zero();
    for (int p = 0; p < a.n_pos; ++p) {
      if (line) {
        V::prefetch_l2(line);
        line += 64, left -= 64;
        if (left <= 0) {
          ++run;
          line = run < runs ? static_cast<const char*>(a.next_k[run]) : nullptr;
          left = run + 1 < runs ? a.next_run_bytes : a.next_last_bytes;
        }
      }
      const T* vp = kv_row<T>(a, a.v_run, p) + d0;
      F x[R];
      for (int r = 0; r < R; ++r) x[r] = V::load(vp + r * V::W);
      for (int g = 0; g < NG; ++g) {
        const F w = V::set1(e[g * kAttnBlock + p]);
        for (int r = 0; r < R; ++r) o[g][r] = V::fma(w, x[r], o[g][r]);
      }
    }
    for (int g = 0; g < NG; ++g)
      for (int r = 0; r < R; ++r) V::store(acc + g * hd + d0 + r * V::W, o[g][r]);
  }
}

// The widest tile (R = 8, 4, 2, 1 vectors) that divides head_dim and keeps
// NG × R accumulators within V::kAcc registers.
template <class V, class T, int NG>
LS_ATTN_TARGET void block_values_ng(const AttnBlockArgs& a, int g0, bool fetch) {
  const int chunks = a.head_dim / V::W;
  if constexpr (NG * 8 <= V::kAcc)
    if (chunks % 8 == 0) return block_values<V, T, NG, 8>(a, g0, fetch);
  if constexpr (NG * 4 <= V::kAcc)
    if (chunks % 4 == 0) return block_values<V, T, NG, 4>(a, g0, fetch);
  if constexpr (NG * 2 <= V::kAcc)
    if (chunks % 2 == 0) return block_values<V, T, NG, 2>(a, g0, fetch);
  return block_values<V, T, NG, 1>(a, g0, fetch);
}

template <class V, class T>
LS_ATTN_TARGET void block_typed(const AttnBlockArgs& a) {
  // Each token's group in runs of 8, 4, 2, 1 query heads (a group of 3:
  // 2 + 1); of at most V::kTiledNg for tiled keys. The first run fetches.
  for (int tok = 0; tok < a.tokens; ++tok)
    for (int g0 = 0; g0 < a.group;) {
      const int left = a.group - g0, most = a.k_tiled ? V::kTiledNg : 8;
      const int ng = left >= 8 && most >= 8 ? 8 : left >= 4 && most >= 4 ? 4 : left >= 2 ? 2 : 1;
      const bool fetch = tok == 0 && g0 == 0;
      const float* q = a.q + tok * a.ldq_tok + int64_t{g0} * a.head_dim;
      float* s = a.scores + (int64_t{tok} * a.group + g0) * kAttnBlock;
      if (a.k_tiled) {
        if (ng == 8) block_scores_tiled_ng<V, T, 8>(a, q, s, fetch);
        if (ng == 4) block_scores_tiled_ng<V, T, 4>(a, q, s, fetch);
        if (ng == 2) block_scores_tiled_ng<V, T, 2>(a, q, s, fetch);
        if (ng == 1) block_scores_tiled_ng<V, T, 1>(a, q, s, fetch);
      } else {
        if (ng == 8) block_scores<V, T, 8>(a, q, s, fetch);
        if (ng == 4) block_scores<V, T, 4>(a, q, s, fetch);
        if (ng == 2) block_scores<V, T, 2>(a, q, s, fetch);
        if (ng == 1) block_scores<V, T, 1>(a, q, s, fetch);
      }
      g0 += ng;
    }
  block_softmax<V>(a);
  // The value loop over every token's rows: a row's sums are the same in any
  // run (one chain per value, positions in order).
  const int rows = a.group * a.tokens;
  for (int g0 = 0; g0 < rows;) {
    const int left = rows - g0, ng = left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
    const bool fetch = g0 == 0;
    if (ng == 8) block_values_ng<V, T, 8>(a, g0, fetch);
    if (ng == 4) block_values_ng<V, T, 4>(a, g0, fetch);
    if (ng == 2) block_values_ng<V, T, 2>(a, g0, fetch);
    if (ng == 1) block_values_ng<V, T, 1>(a, g0, fetch);
    g0 += ng;
  }
}

template <class V>
LS_ATTN_TARGET void attn_block(const AttnBlockArgs& a) {
  if (a.type == AttnKvType::F16) return block_typed<V, uint16_t>(a);
  return block_typed<V, float>(a);
}

}  // namespace
}  // namespace ls
