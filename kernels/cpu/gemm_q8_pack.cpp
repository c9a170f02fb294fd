// The GEMM's operand layouts (kernels/cpu/gemm_q8.h): the x panel from the
// 8-bit activations, a weight row's chunks from its packed GGUF blocks, and
// the scratch that holds them. Plain C++, value by value, as the layout
// reads: the reference for the AVX2 packers (gemm_q8_pack_avx2.cpp, which
// must give the same bytes) and the portable variant's. Contraction off: m =
// 8 * s and 32 * s are the lane form's exact products.
// defines: gemm_q8_pack_x, gemm_q8_pack_x_from, gemm_q8_pack_w, GemmQ8Scratch::reserve
//          (kernels/cpu/gemm_q8.h)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <algorithm>
#include <cassert>
#include <cstring>
#include <vector>

#include "kernels/cpu/gemm_q8.h"
#include "kernels/cpu/unpack.h"
#include "kernels/quant_blocks.h"

namespace ls {

namespace {

// 256 natural-order bytes (block j = bytes 32j..32j+31; blocks past nb are
// zero) into the interleaved order: byte 32v + 4j + e = value 32j + 4v + e.
void interleave(const int8_t* src, int nb, uint8_t* dst) {
  for (int j = 0; j < 8; ++j)
    for (int v = 0; v < 8; ++v) {
      uint32_t word = 0;
      if (j < nb) std::memcpy(&word, src + 32 * j + 4 * v, 4);
      std::memcpy(dst + 32 * v + 4 * j, &word, 4);
    }
}

}  // namespace

void gemm_q8_pack_x_from(const ActQ8View& x, int64_t t0, int64_t t1, int64_t c0,
                         GemmQ8XChunk* panel) {
  const int64_t n = x.n, nc = gemm_q8_chunks(n), nb = n / 32;
  for (int64_t t = t0; t < t1; ++t) {
    const int8_t* q = x.q_at(t);
    for (int64_t c = c0; c < nc; ++c) {
      GemmQ8XChunk& o = panel[t * nc + c];
      const int nbc = static_cast<int>(std::min<int64_t>(8, nb - 8 * c));
      interleave(q + 256 * c, nbc, reinterpret_cast<uint8_t*>(o.q));
      for (int j = 0; j < 8; ++j) {
        const int64_t b = 8 * c + j;
        const bool in = j < nbc;
        o.d[j] = in ? x.d_at(t)[b] : 0.0f;
        o.ds[j] = in ? x.ds_at(t)[b] : 0.0f;
        o.ds_lo[j] = in ? x.ds16_at(t)[2 * b] : 0.0f;
        o.ds_hi[j] = in ? x.ds16_at(t)[2 * b + 1] : 0.0f;
        int32_t sum = 0;
        if (in)
          for (int i = 0; i < 32; ++i) sum += q[32 * b + i];
        o.sum[j] = sum;
      }
    }
  }
}

void gemm_q8_pack_x(const ActQ8View& x, int64_t t0, int64_t t1, GemmQ8XChunk* panel, CpuIsa isa) {
  if (isa == CpuIsa::Portable)
    gemm_q8_pack_x_from(x, t0, t1, 0, panel);
  else
    gemm_q8_pack_x_avx2(x, t0, t1, panel);
}

namespace {
// Token t of x as a view of one token (its own token 0).
ActQ8View token_view(const ActQ8View& x, int64_t t) {
  ActQ8View v = x;
  auto at = [](auto* p, int64_t off) { return p ? p + off : p; };
  v.q = at(x.q, t * x.n);
  v.d = at(x.d, t * (x.n / kActQ8Block));
  v.ds = at(x.ds, t * (x.n / kActQ8Block));
  v.ds16 = at(x.ds16, t * (x.n / 16));
  v.qk4 = at(x.qk4, t * x.n);
  v.qil = at(x.qil, t * x.n);
  v.qc = at(x.qc, t * x.n);
  v.dc = at(x.dc, t * (x.n / 256));
  v.bsc = at(x.bsc, t * (x.n / kActQ8Block));
  return v;
}
}  // namespace

void gemm_q8_pack_x_pairs(const ActQ8View& x, int64_t p0, int64_t p1, int64_t n_tok,
                          GemmQ8XChunk* panel, CpuIsa isa) {
  const int64_t nc = gemm_q8_chunks(x.n);
  // The pair's tokens as per-token chunks: grown once per thread, so a
  // decode step's GEMMs allocate nothing.
  thread_local std::vector<GemmQ8XChunk> one;
  if (one.size() < static_cast<size_t>(2 * nc)) one.resize(static_cast<size_t>(2 * nc));
  GemmQ8XPair* pairs = reinterpret_cast<GemmQ8XPair*>(panel);
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t a = 2 * p, b = std::min(2 * p + 1, n_tok - 1);
    // Each token packed as the per-token panel has it.
    gemm_q8_pack_x(token_view(x, a), 0, 1, one.data(), isa);
    gemm_q8_pack_x(token_view(x, b), 0, 1, one.data() + nc, isa);
    for (int64_t c = 0; c < nc; ++c) {
      const GemmQ8XChunk& ta = one[static_cast<size_t>(c)];
      const GemmQ8XChunk& tb = one[static_cast<size_t>(nc + c)];
      GemmQ8XPair& o = pairs[p * nc + c];
      for (int v = 0; v < 8; ++v) {
        std::memcpy(o.q + 64 * v, ta.q + 32 * v, 32);
        std::memcpy(o.q + 64 * v + 32, tb.q + 32 * v, 32);
      }
      auto both = [](float* out, const float* x0, const float* x1) {
        std::memcpy(out, x0, 32);
        std::memcpy(out + 8, x1, 32);
      };
      both(o.d, ta.d, tb.d);
      both(o.ds, ta.ds, tb.ds);
      both(o.ds_lo, ta.ds_lo, tb.ds_lo);
      both(o.ds_hi, ta.ds_hi, tb.ds_hi);
      std::memcpy(o.sum, ta.sum, 32);
      std::memcpy(o.sum + 8, tb.sum, 32);
    }
  }
}

void gemm_q8_pack_w(GgmlType t, const uint8_t* row, int64_t n, GemmQ8WChunk* out, CpuIsa isa,
                    bool natural, int64_t stride) {
  if (isa != CpuIsa::Portable) return gemm_q8_pack_w_avx2(t, row, n, out, natural, stride);
  const int64_t nc = gemm_q8_chunks(n);
  const uint64_t chunk_bytes = ggml_row_bytes(t, QK_K);
  const bool has_min = g16_has_min(t);
  // The unpacker's Q4_0 and Q6_K quants are signed (nibble - 8, 6 bits - 32);
  // the lane form's u is the unsigned value.
  const int8_t offset = t == GgmlType::Q4_0 ? 8 : t == GgmlType::Q6_K ? 32 : 0;
  alignas(32) int8_t q[QK_K];
  float s[QK_K / 16], m[QK_K / 16];
  const G16Row u{q, s, has_min ? m : nullptr};
  for (int64_t c = 0; c < nc; ++c, row += chunk_bytes) {
    const int nv = static_cast<int>(std::min<int64_t>(QK_K, n - QK_K * c));
    unpack_g16_scalar(t, row, nv, u);
    if (offset)
      for (int i = 0; i < nv; ++i) q[i] = static_cast<int8_t>(q[i] + offset);
    GemmQ8WChunk& o = out[c * stride];
    const int nb = nv / 32;
    if (natural) {
      std::memset(o.u, 0, sizeof o.u);
      std::memcpy(o.u, q, 32 * static_cast<size_t>(nb));
    } else {
      interleave(q, nb, o.u);
    }
    for (int j = 0; j < 8; ++j) {
      const bool in = j < nb;
      const float s_lo = in ? s[2 * j] : 0.0f, s_hi = in ? s[2 * j + 1] : 0.0f;
      o.s[j] = s_lo;
      o.s_hi[j] = t == GgmlType::Q6_K ? s_hi : 0.0f;
      switch (t) {
        case GgmlType::Q4_0:
          o.m[j] = 8.0f * s_lo;
          o.m_hi[j] = 0.0f;
          break;
        case GgmlType::Q6_K:
          o.m[j] = 32.0f * s_lo;
          o.m_hi[j] = 32.0f * s_hi;
          break;
        default:
          o.m[j] = has_min && in ? m[2 * j] : 0.0f;
          o.m_hi[j] = 0.0f;
      }
    }
  }
}

void GemmQ8Scratch::reserve(int n_threads, int64_t tile_chunks, int64_t panel_chunks,
                            int64_t amx_chunks) {
  // One more: panel() may start one chunk in, for its alignment.
  if (static_cast<int64_t>(panel_.size()) < panel_chunks + 1) panel_.resize(panel_chunks + 1);
  if (static_cast<int64_t>(amx_panel_.size()) < amx_chunks) amx_panel_.resize(amx_chunks);
  if (static_cast<int>(tiles_.size()) < n_threads) tiles_.resize(n_threads);
  for (auto& tile : tiles_)
    if (static_cast<int64_t>(tile.size()) < tile_chunks) tile.resize(tile_chunks);
}

}  // namespace ls
