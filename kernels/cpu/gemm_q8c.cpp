// gemm_q8c_parts and its packers (kernels/cpu/gemm_q8c.h): x packed once
// per call into 16-token groups, then (row range, token group) tasks, each
// packing its rows into the two byte planes once and running the tile
// kernel over them, 16 rows by 32 tokens. The arithmetic is all in the tile
// kernel; which task computes an output does not change it.
// defines: gemm_q8c_pack_w, gemm_q8c_pack_x, GemmQ8cScratch::reserve, gemm_q8c_kernel,
//          gemm_q8c_min_tokens, gemm_q8c_parts (kernels/cpu/gemm_q8c.h)
#include "kernels/cpu/gemm_q8c.h"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels/cpu/dot_q8c.h"
#include "kernels/cpu/gemm_q8_amx.h"
#include "kernels/cpu/q8_chunks.h"
#include "kernels/quant_blocks.h"
#include "runtime/env.h"

namespace ls {

namespace {
// Two int16 as one vpdpwssd operand: lo | hi << 16.
int32_t pair16(int lo, int hi) {
  return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(lo)) |
                              static_cast<uint32_t>(static_cast<uint16_t>(hi)) << 16);
}
}  // namespace

void gemm_q8c_pack_w(GgmlType t, const uint8_t* row, int64_t n, GemmQ8cW* out, int r) {
  const uint64_t cb = ggml_row_bytes(t, QK_K);
  Q8cChunkTerms w;
  for (int64_t c = 0; c < n / 256; ++c) {
    q8c_chunk_terms(t, row + c * cb, w);
    GemmQ8cW& o = out[c];
    for (int i = 0; i < 256; ++i) {
      const int v = w.sc[i] * w.u[i];
      o.hi[i / 64][r][i % 64] = static_cast<int8_t>(v >> 6);
      o.lo[i / 64][r][i % 64] = static_cast<uint8_t>(v & 63);
    }
    o.d[r] = w.d;
    o.dmin[r] = w.dmin;
    for (int p = 0; p < 4; ++p) o.mn[p][r] = pair16(w.mn[2 * p], w.mn[2 * p + 1]);
  }
}

void gemm_q8c_zero_row(int64_t nc, GemmQ8cW* out, int r) {
  for (int64_t c = 0; c < nc; ++c) {
    GemmQ8cW& o = out[c];
    for (int s = 0; s < 4; ++s) {
      std::memset(o.hi[s][r], 0, 64);
      std::memset(o.lo[s][r], 0, 64);
      o.mn[s][r] = 0;
    }
    o.d[r] = o.dmin[r] = 0;
  }
}

void gemm_q8c_pack_x(const ActQ8View& x, int64_t t0, int64_t t1, int64_t c0, int64_t c1,
                     GemmQ8cX* panel) {
  assert(x.qc && t0 % kGemmQ8AmxGroup == 0);
  const int64_t nc = x.n / 256;
  const int64_t g0 = t0 / kGemmQ8AmxGroup, g1 = (t1 + kGemmQ8AmxGroup - 1) / kGemmQ8AmxGroup;
  for (int64_t g = g0; g < g1; ++g)
    for (int64_t c = c0; c < c1; ++c) {
      GemmQ8cX& o = panel[g * nc + c];
      std::memset(&o, 0, sizeof o);
      for (int tt = 0; tt < kGemmQ8AmxGroup; ++tt) {
        const int64_t t = g * kGemmQ8AmxGroup + tt;
        if (t >= t1) break;
        const int8_t* q = x.qc_at(t) + 256 * c;
        for (int s = 0; s < 4; ++s)
          for (int k = 0; k < 16; ++k) std::memcpy(&o.b[s][64 * k + 4 * tt], q + 64 * s + 4 * k, 4);
        o.dx[tt] = x.dc_at(t)[c];
        const int16_t* bs = x.bsc_at(t) + 8 * c;
        for (int p = 0; p < 4; ++p) o.bs[p][tt] = pair16(bs[2 * p], bs[2 * p + 1]);
      }
    }
}

void GemmQ8cScratch::reserve(int n_threads, int64_t tile_chunks, int64_t panel_chunks) {
  if (static_cast<int64_t>(panel_.size()) < panel_chunks) panel_.resize(panel_chunks);
  if (static_cast<int>(tiles_.size()) < n_threads) tiles_.resize(n_threads);
  for (auto& t : tiles_)
    if (static_cast<int64_t>(t.size()) < tile_chunks) t.resize(tile_chunks);
}

GemmQ8cTileFn gemm_q8c_kernel(GemmQ8Amx amx) {
  switch (amx) {
    case GemmQ8Amx::Off:
      return nullptr;
    case GemmQ8Amx::On:
      return cpu_amx_usable() ? gemm_q8c_amx_tile_hw : nullptr;
    case GemmQ8Amx::Emulated:
      return gemm_q8c_amx_tile_emu;
    case GemmQ8Amx::Auto:
      break;
  }
  return gemm_q8_amx_enabled() ? gemm_q8c_amx_tile_hw : nullptr;
}

// Not measured yet on the tile unit: 8, the width from which the lane
// form's GEMM beats its dot (gemm_q8_min_tokens).
int64_t gemm_q8c_min_tokens() {
  static const int64_t v = env_int("LS_CPU_Q8C_GEMM_MIN", 8, 1);
  return v;
}

namespace {

struct JobC {
  const MatmulQ8Part* parts;
  int n_parts;
  int64_t range_start[kMatmulQ8MaxParts + 1];
  uint64_t row_bytes[kMatmulQ8MaxParts];
  GemmQ8cScratch* scratch;
  GemmQ8cTileFn kernel;
  const GemmQ8cX* panel;
  int64_t n, nc, n_tok;
  GemmQ8Plan plan;
  int64_t n_ranges, tokens_per_group;
  bool fast_pack;
};

// Rows [r0, r1) of one part packed into tiles of 16 (the last padded with
// zero rows), then tokens 32 at a time (a group starts on 16).
void run_task(const JobC& j, int64_t task, int thread) {
  const int64_t range = task % j.n_ranges, group = task / j.n_ranges;
  int p = 0;
  while (range >= j.range_start[p + 1]) ++p;
  const WeightView& w = j.parts[p].w;
  float* y = j.parts[p].y;
  const int64_t r0 = (range - j.range_start[p]) * j.plan.rows_per_range;
  const int64_t r1 = std::min(w.n_out, r0 + j.plan.rows_per_range);
  const int64_t g0 = group * j.tokens_per_group;
  const int64_t g1 = std::min(j.n_tok, g0 + j.tokens_per_group);
  GemmQ8cW* tile = j.scratch->tile(thread);
  const uint8_t* rows = static_cast<const uint8_t*>(w.data);
  constexpr int64_t R = kGemmQ8cRows;
  const int64_t padded = (r1 - r0 + R - 1) / R * R;
  for (int64_t r = r0; r < r0 + padded; ++r) {
    GemmQ8cW* at = tile + (r - r0) / R * j.nc;
    const int place = static_cast<int>((r - r0) % R);
    if (r >= r1)
      gemm_q8c_zero_row(j.nc, at, place);
    else if (j.fast_pack)
      gemm_q8c_pack_w_fast(w.type, rows + r * j.row_bytes[p], j.n, at, place);
    else
      gemm_q8c_pack_w(w.type, rows + r * j.row_bytes[p], j.n, at, place);
  }
  for (int64_t b0 = g0; b0 < g1; b0 += j.plan.tokens_per_block) {
    const int64_t b1 = std::min(g1, b0 + j.plan.tokens_per_block);
    for (int64_t r = r0; r < r1; r += R) {
      const int nr = static_cast<int>(std::min<int64_t>(R, r1 - r));
      for (int64_t t = b0; t < b1; t += 32) {
        const int nt = static_cast<int>(std::min<int64_t>(32, b1 - t));
        j.kernel(w.type, tile + (r - r0) / R * j.nc, j.nc, j.panel + t / 16 * j.nc, (nt + 15) / 16,
                 nr, nt, y + t * w.n_out + r, w.n_out);
      }
    }
  }
}

}  // namespace

void gemm_q8c_parts(ThreadPool& pool, const MatmulQ8Part* parts, int n_parts, const ActQ8View& x,
                    int64_t n_tok, GemmQ8cScratch& scratch, GemmQ8cTileFn kernel,
                    const GemmQ8Tuning& tune) {
  assert(n_parts >= 1 && n_parts <= kMatmulQ8MaxParts && kernel && x.qc && x.n % 256 == 0);
  if (n_tok <= 0) return;
  JobC j;
  j.parts = parts;
  j.n_parts = n_parts;
  j.kernel = kernel;
  j.n = x.n;
  j.nc = x.n / 256;
  j.n_tok = n_tok;
  // The fast packer where the tile unit runs (a CPU with AMX has AVX-512 BW);
  // the emulation packs in plain C++ (the same bytes: the tests compare).
  j.fast_pack = kernel == gemm_q8c_amx_tile_hw && cpu_amx_usable();
  int64_t total_rows = 0;
  for (int p = 0; p < n_parts; ++p) {
    assert(q8c_type(parts[p].w.type) && parts[p].w.n_in == x.n);
    j.row_bytes[p] = ggml_row_bytes(parts[p].w.type, static_cast<uint64_t>(x.n));
    total_rows += std::max<int64_t>(0, parts[p].w.n_out);
  }
  if (total_rows == 0) return;
  const int threads = pool.size();
  // The lane form's blocking for a 16 x 32 tile (the chunk form's rows and
  // tokens are 1.5x and 0.66x the lane form's bytes: close enough for
  // budgets of a quarter and a half of L2).
  j.plan = gemm_q8_plan_for(GemmQ8Kernel{nullptr, 16, 32, "amx-chunks"}, threads, n_tok, x.n,
                            total_rows, tune);
  j.plan.tokens_per_block = (j.plan.tokens_per_block + 31) / 32 * 32;
  const int64_t n_groups_x = (n_tok + 15) / 16;
  const int64_t tiles = (j.plan.rows_per_range + kGemmQ8cRows - 1) / kGemmQ8cRows;
  scratch.reserve(threads, tiles * j.nc, n_groups_x * j.nc);
  j.scratch = &scratch;
  j.panel = scratch.panel();
  {  // the panel: tasks of (token group, range of chunks), every thread busy
    struct PackX {
      const ActQ8View* x;
      GemmQ8cX* panel;
      int64_t n_tok, nc, per_group, n_tasks;
    } px{&x, scratch.panel(), n_tok, j.nc, 0, 0};
    px.per_group = std::clamp<int64_t>(2 * threads / n_groups_x, 1, j.nc);
    px.n_tasks = n_groups_x * px.per_group;
    const PackX* pp = &px;
    pool.run(px.n_tasks, [pp](int64_t task, int) {
      const int64_t g = task / pp->per_group, k = task % pp->per_group;
      gemm_q8c_pack_x(*pp->x, g * 16, std::min(pp->n_tok, g * 16 + 16), pp->nc * k / pp->per_group,
                      pp->nc * (k + 1) / pp->per_group, pp->panel);
    });
  }
  const int64_t rb = j.plan.rows_per_range;
  j.range_start[0] = 0;
  for (int p = 0; p < n_parts; ++p)
    j.range_start[p + 1] =
        j.range_start[p] + (std::max<int64_t>(0, parts[p].w.n_out) + rb - 1) / rb;
  j.n_ranges = j.range_start[n_parts];
  const int64_t per_group = (n_tok + j.plan.token_groups - 1) / j.plan.token_groups;
  j.tokens_per_group = (per_group + 31) / 32 * 32;
  const int64_t n_groups = (n_tok + j.tokens_per_group - 1) / j.tokens_per_group;
  const JobC* jp = &j;
  pool.run(n_groups * j.n_ranges, [jp](int64_t task, int thread) { run_task(*jp, task, thread); });
}

}  // namespace ls
