// One attention block (kernels/cpu/attention_cpu_block.h) in half-precision
// arithmetic (AVX512-FP16: Sapphire Rapids and later), for f16 caches with
// tiled keys and head_dim a multiple of 32; attention_cpu.cpp picks it where
// the CPU has it (AttnCpuTuning::f16).
//
// Why: the f32 variant spends a conversion and eight f32 FMAs on every 16
// cached values (a GQA group of 8 query heads), about half of a 1k-context
// call's time on a 16-core Xeon, where the reads alone would take 0.6 of it
// (bench_cpu_attention --read). Here the f16 values are FMA'd as they are,
// 32 to an instruction, and only short partial sums are widened:
//   scores: a vector holds dim d of two key tiles (32 positions: row d of
//           each tile, 16 positions, in each half); each head's FMA takes
//           q[d] · scale in f16, broadcast. After kChainK dims (each lane
//           a chain of kChainK products) the halves are widened and added
//           into the two tiles' f32 scores: per score, head_dim / kChainK f16
//           chains summed in f32, in dim order.
//   softmax: the f32 one of the AVX-512 variant (attention_softmax_avx512),
//           then e rounded to f16 (in place in the scores rows, as pairs).
//   values: each position's value row, 32 dims a vector, FMA'd with the
//           head's broadcast f16 e; every kChainV positions the f16 sums are
//           widened and added into the f32 accumulator, in position order.
// Both phases use about 0.55-0.65 of the f32 variant's FMA-port
// instructions.
// Error: q · scale and e rounded to f16 (as the GPU's tensor-core attention
// does), and each f16 chain's roundings (kChainK or kChainV terms, relative
// 2^-11 each); tests/unit/kernels/test_cpu_attention.cpp bounds it against
// the f64 reference.
// Every score and value is the same arithmetic wherever its block, thread or
// neighbouring heads fall, as in the f32 variants.
//
// Built with the AVX512-FP16 flags for this file alone (CMakeLists.txt:
// clang 14 has _Float16 only with them). So that no code of this file
// serves callers on other CPUs, it defines no inline function or template
// with external linkage that another file could share: everything is in an
// anonymous namespace, and it calls nothing inline from the headers.
// defines: attention_block_avx512fp16 (kernels/cpu/attention_cpu_block.h)
#include "kernels/cpu/attention_cpu_block.h"

#if defined(__x86_64__) && (defined(__clang__) || __GNUC__ >= 12)
#include <immintrin.h>

#define LS_FP16_TARGET \
  __attribute__((target("avx512fp16,avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))

namespace ls {
namespace {

constexpr int kChainK = kAttnF16ChainK, kChainV = kAttnF16ChainV;  // attention_cpu.h

// Row p of a block's runs (kv_row of attention_cpu_block.h, not called: see
// the top).
LS_FP16_TARGET inline const uint16_t* row_at(const AttnBlockArgs& a, const void* const* runs,
                                             int p) {
  return static_cast<const uint16_t*>(runs[p >> a.run_shift]) +
         int64_t{p & ((1 << a.run_shift) - 1)} * a.ld_pos;
}

LS_FP16_TARGET inline void prefetch(const void* p, bool l2) {
  if (l2)
    _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T1);
  else
    _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0);
}

// dst[0..31] (f32) += the 32 f16 lanes of h, or = them (first).
LS_FP16_TARGET inline void widen_into(__m512h h, float* dst, bool first) {
  const __m512i b = _mm512_castph_si512(h);
  const __m512 lo = _mm512_cvtph_ps(_mm512_castsi512_si256(b));
  const __m512 hi = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(b, 1));
  if (first) {
    _mm512_storeu_ps(dst, lo);
    _mm512_storeu_ps(dst + 16, hi);
  } else {
    _mm512_storeu_ps(dst, _mm512_add_ps(_mm512_loadu_ps(dst), lo));
    _mm512_storeu_ps(dst + 16, _mm512_add_ps(_mm512_loadu_ps(dst + 16), hi));
  }
}

// Scores of NG query heads over PV pairs of key tiles (the pair's first
// rows at k[2j] and k[2j + 1], the second null where the block has no
// more), into out[2·(g·PV + j)] and out[2·(g·PV + j) + 1] (16 floats each:
// the two tiles' positions; f32 sums there from the first chain on).
// qd: the heads' q[d] · scale as f16 pairs (q, q), (head_dim, NG).
// pv: 2·PV value-row runs (16 rows each) to prefetch to L2 over the loop,
// pk: 2·PV key tiles to prefetch (null: none). A tile's keys and 16
// value rows are head_dim / 2 lines each: a line of each every two dims.
template <int NG, int PV>
LS_FP16_TARGET inline void scores_step(const uint16_t* const* k, const uint32_t* qd, int hd,
                                       float* const* out, const uint16_t* const* pk, bool pk_l2,
                                       const uint16_t* const* pv) {
  constexpr int T = kAttnKTile;  // 16
  for (int d0 = 0; d0 < hd; d0 += kChainK) {
    __m512h h[NG * PV];
    for (int i = 0; i < NG * PV; ++i) h[i] = _mm512_setzero_ph();
    for (int d = d0; d < d0 + kChainK && d < hd; ++d) {
      if (d % 2 == 0) {
        for (int j = 0; j < 2 * PV; ++j) {
          if (pk && pk[j]) prefetch(pk[j] + int64_t{d} * T, pk_l2);
          if (pv && pv[j]) prefetch(pv[j] + int64_t{d} * T, true);
        }
      }
      __m512h x[PV];
      for (int j = 0; j < PV; ++j) {
        const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(k[2 * j] + d * T));
        const uint16_t* b = k[2 * j + 1] ? k[2 * j + 1] : k[2 * j];
        const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + d * T));
        x[j] = _mm512_castsi512_ph(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1));
      }
      for (int g = 0; g < NG; ++g) {
        const __m512h qg =
            _mm512_castsi512_ph(_mm512_set1_epi32(static_cast<int>(qd[d * NG + g])));
        for (int j = 0; j < PV; ++j) h[g * PV + j] = _mm512_fmadd_ph(qg, x[j], h[g * PV + j]);
      }
    }
    for (int i = 0; i < NG * PV; ++i) {
      const __m512i b = _mm512_castph_si512(h[i]);
      for (int half = 0; half < 2; ++half) {
        float* o = out[2 * i + half];
        if (!o) continue;
        const __m512 f = _mm512_cvtph_ps(half ? _mm512_extracti64x4_epi64(b, 1)
                                              : _mm512_castsi512_si256(b));
        _mm512_storeu_ps(o, d0 == 0 ? f : _mm512_add_ps(_mm512_loadu_ps(o), f));
      }
    }
  }
}

// The scores of NG query rows at q over the block's tiled keys, into the
// score rows at s (kAttnBlock apart), 16 positions a tile, up to 4 tiles a
// step; the prefetches of attention_cpu_body.h's block_scores_tiled (keys
// `ahead` on, the step's value rows or the block's all at the start).
template <int NG>
LS_FP16_TARGET void block_scores(const AttnBlockArgs& a, const float* q, float* s, bool fetch) {
  constexpr int T = kAttnKTile, PV = 2, kStep = 2 * PV * T;  // 64 positions a step
  const int hd = a.head_dim, n = a.n_pos;
  // q[d] · scale in f16, twice in 32 bits (a broadcast from a load port),
  // head-minor: a dim's NG broadcasts from one line.
  uint32_t* qd = reinterpret_cast<uint32_t*>(a.q_t);
  for (int g = 0; g < NG; ++g)
    for (int d = 0; d < hd; ++d) {
      const _Float16 x = static_cast<_Float16>(q[int64_t{g} * hd + d] * a.scale);
      uint16_t b;
      __builtin_memcpy(&b, &x, 2);
      qd[d * NG + g] = uint32_t{b} * 0x10001u;
    }
  const bool keys = fetch && (a.prefetch & (kAttnPfKeysL1 | kAttnPfKeysL2));
  const bool keys_l2 = !(a.prefetch & kAttnPfKeysL1);
  const bool values_first = fetch && (a.prefetch & kAttnPfValuesFirst);
  const bool values = fetch && (a.prefetch & kAttnPfValues) && !values_first;
  const int ahead = a.ahead > kStep ? (a.ahead + kStep - 1) / kStep * kStep : kStep;
  const int64_t tile_bytes = int64_t{hd} * T * 2;
  if (keys)
    for (int p = 0; p < ahead && p < n; p += T) {
      const char* c = reinterpret_cast<const char*>(row_at(a, a.k_run, p));
      for (int64_t o = 0; o < tile_bytes; o += 64) prefetch(c + o, keys_l2);
    }
  if (values_first)
    for (int p = 0; p < n; p += T) {
      const char* c = reinterpret_cast<const char*>(row_at(a, a.v_run, p));
      const int64_t bytes = int64_t{n - p < T ? n - p : T} * hd * 2;
      for (int64_t o = 0; o < bytes; o += 64) prefetch(c + o, true);
    }
  for (int p0 = 0; p0 < n; p0 += kStep) {
    // Tiles t = 0..3 of the step at p0 + 16·t: k[t] (null past the block),
    // the keys `ahead` on, the value rows.
    const uint16_t *k[2 * PV], *pk[2 * PV], *v[2 * PV];
    float* out[2 * NG * PV];
    for (int t = 0; t < 2 * PV; ++t) {
      const int p = p0 + t * T;
      k[t] = p < n ? row_at(a, a.k_run, p) : nullptr;
      v[t] = p < n ? row_at(a, a.v_run, p) : nullptr;
      pk[t] = keys && p + ahead < n ? row_at(a, a.k_run, p + ahead) : nullptr;
    }
    const int pairs = p0 + 2 * T < n ? 2 : 1;  // pairs of tiles this step has
    for (int g = 0; g < NG; ++g)
      for (int t = 0; t < 2 * pairs; ++t)
        out[2 * (g * pairs + t / 2) + t % 2] = k[t] ? s + int64_t{g} * kAttnBlock + p0 + t * T
                                                    : nullptr;
    const bool any_pk = keys && p0 + ahead < n;
    if (pairs == 2)
      scores_step<NG, 2>(k, qd, hd, out, any_pk ? pk : nullptr, keys_l2, values ? v : nullptr);
    else
      scores_step<NG, 1>(k, qd, hd, out, any_pk ? pk : nullptr, keys_l2, values ? v : nullptr);
  }
}

// e (f32, rows of kAttnBlock floats) rounded to f16 in place, each as a
// pair (e, e) in the 32 bits it held: the value loop's broadcasts are then
// 32-bit loads (a load port's; a 16-bit broadcast also takes a shuffle
// port, which the FMAs use).
LS_FP16_TARGET void e_to_f16_pairs(const AttnBlockArgs& a) {
  const int rows = a.group * a.tokens, n_pad = (a.n_pos + 15) / 16 * 16;
  for (int g = 0; g < rows; ++g) {
    float* s = a.scores + int64_t{g} * kAttnBlock;
    for (int p = 0; p < n_pad; p += 16) {
      const __m512i h = _mm512_cvtepu16_epi32(
          _mm512_cvtps_ph(_mm512_loadu_ps(s + p), _MM_FROUND_TO_NEAREST_INT));
      _mm512_storeu_si512(s + p, _mm512_or_si512(h, _mm512_slli_epi32(h, 16)));
    }
  }
}

// acc of query rows g0..g0+NG-1 (of every token's rows), R vectors of 32
// dims at a time; fetch: the next block's keys to L2, a line per (pass,
// position) while any is left (attention_cpu_body.h's block_values).
template <int NG, int R>
LS_FP16_TARGET void block_values(const AttnBlockArgs& a, int g0, bool fetch) {
  const int hd = a.head_dim, n = a.n_pos;
  const int rows = a.group * a.tokens;
  const uint32_t* e = reinterpret_cast<const uint32_t*>(a.scores + int64_t{g0} * kAttnBlock);
  float* acc = a.triple + 2 * rows + int64_t{g0} * hd;
  const int runs = fetch ? a.next_runs : 0;
  int run = 0;
  const char* line = runs ? static_cast<const char*>(a.next_k[0]) : nullptr;
  int64_t left = runs ? (runs > 1 ? a.next_run_bytes : a.next_last_bytes) : 0;
  for (int d0 = 0; d0 < hd; d0 += R * 32) {
    for (int p0 = 0; p0 < n; p0 += kChainV) {
      __m512h o[NG][R];
      for (int g = 0; g < NG; ++g)
        for (int r = 0; r < R; ++r) o[g][r] = _mm512_setzero_ph();
      for (int p = p0; p < p0 + kChainV && p < n; ++p) {
        if (line) {
          prefetch(line, true);
          line += 64, left -= 64;
          if (left <= 0) {
            ++run;
            line = run < runs ? static_cast<const char*>(a.next_k[run]) : nullptr;
            left = run + 1 < runs ? a.next_run_bytes : a.next_last_bytes;
          }
        }
        const uint16_t* vp = row_at(a, a.v_run, p) + d0;
        __m512h x[R];
        for (int r = 0; r < R; ++r) x[r] = _mm512_castsi512_ph(_mm512_loadu_si512(vp + 32 * r));
        for (int g = 0; g < NG; ++g) {
          const __m512h w = _mm512_castsi512_ph(
              _mm512_set1_epi32(static_cast<int>(e[g * kAttnBlock + p])));
          for (int r = 0; r < R; ++r) o[g][r] = _mm512_fmadd_ph(w, x[r], o[g][r]);
        }
      }
      for (int g = 0; g < NG; ++g)
        for (int r = 0; r < R; ++r) widen_into(o[g][r], acc + g * hd + d0 + 32 * r, p0 == 0);
    }
  }
}

template <int NG>
LS_FP16_TARGET void block_values_ng(const AttnBlockArgs& a, int g0, bool fetch) {
  if (NG <= 8 && a.head_dim % 64 == 0) return block_values<NG, 2>(a, g0, fetch);
  return block_values<NG, 1>(a, g0, fetch);
}

}  // namespace

LS_FP16_TARGET void attention_block_avx512fp16(const AttnBlockArgs& a) {
  // Each token's group in runs of 8, 4, 2, 1 query heads; the first fetches.
  for (int tok = 0; tok < a.tokens; ++tok)
    for (int g0 = 0; g0 < a.group;) {
      const int left = a.group - g0, ng = left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
      const bool fetch = tok == 0 && g0 == 0;
      const float* q = a.q + tok * a.ldq_tok + int64_t{g0} * a.head_dim;
      float* s = a.scores + (int64_t{tok} * a.group + g0) * kAttnBlock;
      if (ng == 8) block_scores<8>(a, q, s, fetch);
      if (ng == 4) block_scores<4>(a, q, s, fetch);
      if (ng == 2) block_scores<2>(a, q, s, fetch);
      if (ng == 1) block_scores<1>(a, q, s, fetch);
      g0 += ng;
    }
  attention_softmax_avx512(a);
  e_to_f16_pairs(a);
  const int rows = a.group * a.tokens;
  for (int g0 = 0; g0 < rows;) {
    const int left = rows - g0, ng = left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
    const bool fetch = g0 == 0;
    if (ng == 8) block_values_ng<8>(a, g0, fetch);
    if (ng == 4) block_values_ng<4>(a, g0, fetch);
    if (ng == 2) block_values_ng<2>(a, g0, fetch);
    if (ng == 1) block_values_ng<1>(a, g0, fetch);
    g0 += ng;
  }
}

}  // namespace ls

#else  // no AVX512-FP16 in this compiler or target: never called
       // (attention_cpu_f16_supported says no), but must link.

namespace ls {
void attention_block_avx512fp16(const AttnBlockArgs& a) {
  attention_block_avx512(a);
}
}  // namespace ls

#endif
