// gemm_q8_parts (kernels/cpu/gemm_q8.h): pack x once, then (row range,
// token group) tasks, each packing its rows once and running the ISA's tile
// kernel over them, token block by token block. The arithmetic is all in the
// tile kernels (gemm_q8_{avx512,avx2,scalar}.cpp), and which task computes
// an output does not change it: results do not depend on the thread count,
// the blocking or the tile shape.
// defines: gemm_q8_plan, gemm_q8_parts, gemm_q8_min_tokens (both; kernels/cpu/gemm_q8.h)
#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

#include "kernels/cpu/dot_q8.h"
#include "kernels/cpu/gemm_q8.h"
#include "kernels/cpu/gemm_q8_amx.h"
#include "kernels/cpu/matmul_cpu.h"
#include "runtime/env.h"

namespace ls {

namespace {

// This core's L2 (half of it holds a token block's panel); 512 KiB where the
// system does not say.
int64_t l2_bytes() {
  static const int64_t b = [] {
#if defined(_SC_LEVEL2_CACHE_SIZE)
    const long v = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (v > 0) return static_cast<int64_t>(v);
#endif
    return int64_t{512} << 10;
  }();
  return b;
}

// Everything the tasks share, behind one pointer (pool.run allocates nothing).
struct JobG {
  const MatmulQ8Part* parts;
  int n_parts;
  int64_t range_start[kMatmulQ8MaxParts + 1];  // first row range of each part
  uint64_t row_bytes[kMatmulQ8MaxParts];
  const GemmQ8XChunk* panel;
  GemmQ8Scratch* scratch;
  GemmQ8Kernel k;
  GemmQ8AmxTileFn amx;     // the AMX path's kernel, else null
  GemmQ8AmxForm amx_form;  // its form (GemmQ8Tuning::amx_ahead, amx_lanes)
  bool direct;             // parts of a type the direct tile takes skip the pack
  int direct_pairs_min;    // GemmQ8Tuning::direct_pairs_min
  GemmQ8AmxX* amx_panel;
  CpuIsa isa;
  int64_t n, nc, n_tok;
  GemmQ8Plan plan;
  int64_t n_ranges, tokens_per_group;
};

// One row range of one part, for one group of tokens: its rows packed once,
// then token block by token block (the block's panel in L2), row tile by row
// tile (in L1), the kernel over the block's token tiles.
// A task's rows [r0, r1) of one part and tokens [g0, g1), its rows packed
// into the thread's tile (natural: the AMX path's order and layout: rows in
// tiles of 16, each tile chunk-major, row i's chunk c at c * 16 + i, so that
// a tile load's 16 rows are 384 bytes apart. Row-major, they were nc * 384
// apart: at the 70b's n_in = 8192, 12 KiB, all 16 in one set of L1, along
// with the float step's scales of the same rows).
struct TaskRows {
  const WeightView* w;
  float* y;
  int64_t r0, r1, g0, g1;
  GemmQ8WChunk* tile;
  uint64_t row_bytes;
  bool packed;  // false: the direct tile reads the rows as they are
};
TaskRows pack_task(const JobG& j, int64_t task, int thread, bool natural) {
  const int64_t range = task % j.n_ranges, group = task / j.n_ranges;
  int p = 0;
  while (range >= j.range_start[p + 1]) ++p;
  TaskRows t;
  t.w = &j.parts[p].w;
  t.y = j.parts[p].y;
  t.r0 = (range - j.range_start[p]) * j.plan.rows_per_range;
  t.r1 = std::min(t.w->n_out, t.r0 + j.plan.rows_per_range);
  t.g0 = group * j.tokens_per_group;
  t.g1 = std::min(j.n_tok, t.g0 + j.tokens_per_group);
  t.tile = j.scratch->tile(thread);
  t.row_bytes = j.row_bytes[p];
  t.packed = !(j.direct && gemm_q8_direct_supported(t.w->type, j.n));
  if (!t.packed) return t;
  const uint8_t* rows = static_cast<const uint8_t*>(t.w->data);
  for (int64_t r = t.r0; r < t.r1; ++r) {
    const int64_t i = r - t.r0,
                  at = natural ? i / kGemmQ8AmxRows * kGemmQ8AmxRows * j.nc + i % kGemmQ8AmxRows
                               : i * j.nc;
    gemm_q8_pack_w(t.w->type, rows + r * j.row_bytes[p], j.n, t.tile + at, j.isa, natural,
                   natural ? kGemmQ8AmxRows : 1);
  }
  return t;
}

void run_task(const JobG& j, int64_t task, int thread) {
  const TaskRows tr = pack_task(j, task, thread, false);
  const WeightView& w = *tr.w;
  float* y = tr.y;
  const int64_t r0 = tr.r0, r1 = tr.r1, g0 = tr.g0, g1 = tr.g1;
  GemmQ8WChunk* tile = tr.tile;
  if (!tr.packed) {  // the direct tile: kGemmQ8DirectRows rows at a time, all the group's tokens
    const uint8_t* rows = static_cast<const uint8_t*>(w.data);
    for (int64_t r = r0; r < r1; r += kGemmQ8DirectRows)
      for (int64_t t = g0; t < g1; t += kGemmQ8DirectToks)
        gemm_q8_direct_avx512(w.type, rows + r * tr.row_bytes, tr.row_bytes,
                              static_cast<int>(std::min<int64_t>(kGemmQ8DirectRows, r1 - r)),
                              j.panel + t * j.nc,
                              static_cast<int>(std::min<int64_t>(kGemmQ8DirectToks, g1 - t)), j.nc,
                              y + t * w.n_out + r, w.n_out, j.direct_pairs_min);
    return;
  }
  for (int64_t b0 = g0; b0 < g1; b0 += j.plan.tokens_per_block) {
    const int64_t b1 = std::min(g1, b0 + j.plan.tokens_per_block);
    for (int64_t r = r0; r < r1; r += j.k.rows) {
      const int nr = static_cast<int>(std::min<int64_t>(j.k.rows, r1 - r));
      for (int64_t t = b0; t < b1; t += j.k.toks) {
        const int nt = static_cast<int>(std::min<int64_t>(j.k.toks, b1 - t));
        j.k.tile(w.type, tile + (r - r0) * j.nc, nr, j.panel + t * j.nc, nt, j.nc,
                 y + t * w.n_out + r, w.n_out);
      }
    }
  }
}

// The same on the AMX path: rows packed in natural order into tiles of 16
// (pack_task), the last tile's rows past r1 zeros, tokens 32 at a time (two
// groups of the panel; a range of tokens starts on a group).
void run_task_amx(const JobG& j, int64_t task, int thread) {
  const TaskRows tr = pack_task(j, task, thread, true);
  const WeightView& w = *tr.w;
  float* y = tr.y;
  const int64_t r0 = tr.r0, r1 = tr.r1, g0 = tr.g0, g1 = tr.g1;
  GemmQ8WChunk* tile = tr.tile;
  if (const int64_t rem = (r1 - r0) % kGemmQ8AmxRows; rem) {
    GemmQ8WChunk* last = tile + (r1 - r0 - rem) * j.nc;
    for (int64_t c = 0; c < j.nc; ++c)
      std::fill(last + c * kGemmQ8AmxRows + rem, last + (c + 1) * kGemmQ8AmxRows, GemmQ8WChunk{});
  }
  for (int64_t b0 = g0; b0 < g1; b0 += j.plan.tokens_per_block) {
    const int64_t b1 = std::min(g1, b0 + j.plan.tokens_per_block);
    for (int64_t r = r0; r < r1; r += kGemmQ8AmxRows) {
      const int nr = static_cast<int>(std::min<int64_t>(kGemmQ8AmxRows, r1 - r));
      for (int64_t t = b0; t < b1; t += kGemmQ8AmxToks) {
        const int nt = static_cast<int>(std::min<int64_t>(kGemmQ8AmxToks, b1 - t));
        const int ng = (nt + kGemmQ8AmxGroup - 1) / kGemmQ8AmxGroup;
        j.amx(w.type, tile + (r - r0) * j.nc, j.nc, j.amx_panel + t / kGemmQ8AmxGroup * j.nc, ng,
              nr, nt, y + t * w.n_out + r, w.n_out, j.amx_form);
      }
    }
  }
}

// The AMX kernel, when this call takes the AMX path (else null).
GemmQ8AmxTileFn amx_kernel(CpuIsa isa, int64_t n_tok, GemmQ8Amx amx) {
  switch (amx) {
    case GemmQ8Amx::Off:
      return nullptr;
    case GemmQ8Amx::On:
      assert(cpu_amx_usable());
      return cpu_amx_usable() ? gemm_q8_amx_tile_hw : nullptr;
    case GemmQ8Amx::Emulated:
      return gemm_q8_amx_tile_emu;
    case GemmQ8Amx::Auto:
      break;
  }
  return isa == CpuIsa::Avx512 && n_tok >= gemm_q8_amx_min_tokens() && gemm_q8_amx_enabled()
             ? gemm_q8_amx_tile_hw
             : nullptr;
}

// The pairs tile (GemmQ8Tuning::pairs; LS_GEMM_PAIRS=0 turns it off for
// whole runs).
bool pairs_wanted(const GemmQ8Tuning& tune) {
  static const bool env_off = [] {
    const char* e = std::getenv("LS_GEMM_PAIRS");
    return e && std::strcmp(e, "0") == 0;
  }();
  const bool want = tune.pairs == 1 || (tune.pairs < 0 && !env_off);
  return want && gemm_q8_pairs_supported();
}

// The direct tile (GemmQ8Tuning::direct; LS_GEMM_DIRECT=0 turns it off for
// whole runs), for calls of at most kGemmQ8DirectToks tokens on the pairs
// tile's path (it reads the pairs panel). Past 8 tokens the pack pays for
// itself: on Zen 4 from L2 even at 12 tokens, 0.9x at 16 and 32.
bool direct_env() {
  static const bool on = env_int("LS_GEMM_DIRECT", 1, 0) != 0;
  return on;
}
// The AVX2 tile with AVX-VNNI (GemmQ8Tuning::avx_vnni; LS_AVX_VNNI=0 turns
// it off for whole runs).
bool avx_vnni_wanted(const GemmQ8Tuning& tune) {
  static const bool env_on = env_int("LS_AVX_VNNI", 1, 0) != 0;
  return (tune.avx_vnni == 1 || (tune.avx_vnni < 0 && env_on)) && cpu_has_avx_vnni();
}

bool direct_wanted(const GemmQ8Tuning& tune, int64_t n_tok) {
  return (tune.direct == 1 || (tune.direct < 0 && direct_env())) && n_tok <= kGemmQ8DirectToks;
}

}  // namespace

bool gemm_q8_pairs_supported() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool ok = cpu_has_avx512_vnni() && __builtin_cpu_supports("avx512dq");
  return ok;
#else
  return false;
#endif
}

GemmQ8Plan gemm_q8_plan(CpuIsa isa, int threads, int64_t n_tok, int64_t n, int64_t rows,
                        const GemmQ8Tuning& tune) {
  return gemm_q8_plan_for(gemm_q8_kernel(isa), threads, n_tok, n, rows, tune);
}

GemmQ8Plan gemm_q8_plan_for(const GemmQ8Kernel& k, int threads, int64_t n_tok, int64_t n,
                            int64_t rows, const GemmQ8Tuning& tune) {
  const int64_t nc = gemm_q8_chunks(n);
  GemmQ8Plan pl;
  // Tokens: a block's panel in about half of L2.
  const int64_t x_budget = tune.panel_bytes > 0 ? tune.panel_bytes : l2_bytes() / 2;
  const int64_t per_token = nc * static_cast<int64_t>(sizeof(GemmQ8XChunk));
  pl.tokens_per_block =
      std::min(n_tok, std::max<int64_t>(k.toks, x_budget / per_token / k.toks * k.toks));
  // Rows: a range's packed rows in about a quarter of L2, and at least 4
  // ranges per thread where there are rows enough.
  const int64_t w_budget = tune.range_bytes > 0 ? tune.range_bytes : l2_bytes() / 4;
  const int64_t per_row = nc * static_cast<int64_t>(sizeof(GemmQ8WChunk));
  int64_t rb = tune.rows_per_task > 0
                   ? tune.rows_per_task
                   : std::min(w_budget / per_row, rows / (4 * static_cast<int64_t>(threads)));
  pl.rows_per_range = std::clamp<int64_t>(rb / k.rows * k.rows, k.rows, 64);
  // Tokens split too where rows are few: ranges × groups >= 4 tasks a thread.
  const int64_t ranges = (rows + pl.rows_per_range - 1) / pl.rows_per_range;
  const int64_t want = 4 * static_cast<int64_t>(threads);
  pl.token_groups = ranges >= want ? 1
                                   : std::clamp<int64_t>((want + ranges - 1) / ranges, 1,
                                                         (n_tok + k.toks - 1) / k.toks);
  pl.tile_chunks = pl.rows_per_range * nc;
  return pl;
}

void gemm_q8_parts(ThreadPool& pool, const MatmulQ8Part* parts, int n_parts, const ActQ8View& x,
                   int64_t n_tok, GemmQ8Scratch& scratch, CpuIsa isa, const GemmQ8Tuning& tune) {
  assert(n_parts >= 1 && n_parts <= kMatmulQ8MaxParts && cpu_isa_supported(isa));
  if (n_tok <= 0) return;
  JobG j;
  j.parts = parts;
  j.n_parts = n_parts;
  j.amx = amx_kernel(isa, n_tok, tune.amx);
  j.amx_form = gemm_q8_amx_form();
  if (tune.amx_ahead > 0) j.amx_form.ahead = std::min(tune.amx_ahead, 2);
  if (tune.amx_lanes >= 0) j.amx_form.lanes = tune.amx_lanes > 0;
  j.k = j.amx ? GemmQ8Kernel{nullptr, kGemmQ8AmxRows, kGemmQ8AmxToks, "amx"} : gemm_q8_kernel(isa);
  if (!j.amx && j.k.tile == gemm_q8_tile_avx512vnni && pairs_wanted(tune))
    j.k = GemmQ8Kernel{gemm_q8_tile_avx512vnni_pairs, 4, 4, "avx512vnni-pairs"};
  if (!j.amx && j.k.tile == gemm_q8_tile_avx2 && avx_vnni_wanted(tune))
    j.k = GemmQ8Kernel{gemm_q8_tile_avx2_vnni, 2, 4, "avx2-vnni"};
  j.direct = j.k.tile == gemm_q8_tile_avx512vnni_pairs && direct_wanted(tune, n_tok);
  j.direct_pairs_min = tune.direct_pairs_min;
  j.isa = isa;
  j.n = x.n;
  j.nc = gemm_q8_chunks(x.n);
  j.n_tok = n_tok;
  int64_t total_rows = 0;
  for (int p = 0; p < n_parts; ++p) {
    assert(matmul_cpu_supports(parts[p].w) && parts[p].w.n_in == x.n);
    j.row_bytes[p] = ggml_row_bytes(parts[p].w.type, static_cast<uint64_t>(x.n));
    total_rows += std::max<int64_t>(0, parts[p].w.n_out);
  }
  if (total_rows == 0) return;
  const int threads = pool.size();
  j.plan = gemm_q8_plan_for(j.k, threads, n_tok, x.n, total_rows, tune);
  const int64_t n_groups_x = (n_tok + kGemmQ8AmxGroup - 1) / kGemmQ8AmxGroup;
  const bool pairs = j.k.tile == gemm_q8_tile_avx512vnni_pairs;
  // A pairs panel of an odd batch holds its last token twice.
  const int64_t panel_tok = pairs ? (n_tok + 1) / 2 * 2 : n_tok;
  scratch.reserve(threads, j.plan.tile_chunks, j.amx ? 0 : panel_tok * j.nc,
                  j.amx ? n_groups_x * j.nc : 0);
  j.scratch = &scratch;
  j.panel = scratch.panel();
  j.amx_panel = scratch.amx_panel();

  if (j.amx) {  // the panel in tile layout, split over the threads by token group and chunks
    // (by group alone, a 32-token step packed on 2 threads while the others waited)
    struct PackAmx {
      const ActQ8View* x;
      GemmQ8AmxX* panel;
      int64_t n_tok, nc, slices;
    } pa{&x, j.amx_panel, n_tok, j.nc,
         std::clamp<int64_t>((4 * threads + n_groups_x - 1) / n_groups_x, 1, j.nc)};
    const PackAmx* pp = &pa;
    pool.run(n_groups_x * pa.slices, [pp](int64_t task, int) {
      const int64_t g = task / pp->slices, s = task % pp->slices;
      gemm_q8_amx_pack_x(*pp->x, g * kGemmQ8AmxGroup,
                         std::min(pp->n_tok, (g + 1) * kGemmQ8AmxGroup), pp->panel,
                         pp->nc * s / pp->slices, pp->nc * (s + 1) / pp->slices);
    });
  }

  // The panel, split over the threads by tokens (pairs of them for the pairs
  // tile).
  if (pairs) {
    struct PackPairs {
      const ActQ8View* x;
      GemmQ8XChunk* panel;
      int64_t n_tok, n_pairs, n_tasks;
      CpuIsa isa;
    } pj{&x, scratch.panel(), n_tok, panel_tok / 2, std::min<int64_t>(panel_tok / 2, 4 * threads),
         isa};
    const PackPairs* pp = &pj;
    pool.run(pj.n_tasks, [pp](int64_t task, int) {
      gemm_q8_pack_x_pairs(*pp->x, pp->n_pairs * task / pp->n_tasks,
                           pp->n_pairs * (task + 1) / pp->n_tasks, pp->n_tok, pp->panel, pp->isa);
    });
  } else if (!j.amx) {
    struct PackJob {
      const ActQ8View* x;
      GemmQ8XChunk* panel;
      int64_t n_tok, n_tasks;
      CpuIsa isa;
    } pj{&x, scratch.panel(), n_tok, std::min<int64_t>(n_tok, 4 * threads), isa};
    const PackJob* pp = &pj;
    pool.run(pj.n_tasks, [pp](int64_t task, int) {
      gemm_q8_pack_x(*pp->x, pp->n_tok * task / pp->n_tasks, pp->n_tok * (task + 1) / pp->n_tasks,
                     pp->panel, pp->isa);
    });
  }

  const int64_t rb = j.plan.rows_per_range;
  j.range_start[0] = 0;
  for (int p = 0; p < n_parts; ++p)
    j.range_start[p + 1] =
        j.range_start[p] + (std::max<int64_t>(0, parts[p].w.n_out) + rb - 1) / rb;
  j.n_ranges = j.range_start[n_parts];
  // Groups of whole token tiles.
  const int64_t per_group = (n_tok + j.plan.token_groups - 1) / j.plan.token_groups;
  j.tokens_per_group = (per_group + j.k.toks - 1) / j.k.toks * j.k.toks;
  const int64_t n_groups = (n_tok + j.tokens_per_group - 1) / j.tokens_per_group;
  const JobG* jp = &j;
  pool.run(n_groups * j.n_ranges, [jp](int64_t task, int thread) {
    if (jp->amx)
      run_task_amx(*jp, task, thread);
    else
      run_task(*jp, task, thread);
  });
}

// Measured on the AVX2 machine (2-core AMD EPYC, Zen 1, shared and busy:
// one thread, thread CPU time, bench/results/2026-12-02-cpu-gemm-q8.md): at
// 8 tokens the GEMM beat the dot in every run (Q4_K 1.4-1.9x, Q6_K
// 1.04-1.2x), at 4 it won or lost by 15-25% from run to run, at 1 the dot is
// 2x. The AVX-512 machine is not measured yet: 8 as well, which keeps the
// decode widths its dot was tuned for. The portable tile has no reuse to win
// with: the dot.
//
// With the direct tile (unless LS_GEMM_DIRECT=0), from 4 tokens on AVX-512
// VNNI: on Zen 4 (2 threads, 70b shapes from DRAM) it read 1.12-1.25x the
// dot at 4 tokens and lost to it at 2 (bench/results/2026-12-05-s34-no-device.md).
// Since its prefetch fetches the next tile's rows (session 37) it reads
// about 1.05-1.7x the dot at 2 and 3 tokens there too, and on the GPU
// machine's Xeon (16 threads, 70b shapes from DRAM, session 38) 1.07-1.26x
// the dot at 2 tokens and 1.09-1.40x at 3 on the large shapes (q4_K and
// q6_K), even with it on 8192 x 1024 (0.96-1.09x; q6_K 8192 x 8192 0.96x):
// so from 2 (bench/results/2026-12-05-s38.md). LS_GEMM_MIN_TOKENS=2..8 sets
// the width for A/B runs.
int64_t gemm_q8_min_tokens(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Avx2:
      return 8;
    case CpuIsa::Avx512: {
      static const int64_t direct_min =
          std::min<int64_t>(env_int("LS_GEMM_MIN_TOKENS", 2, 2), kGemmQ8DirectToks);
      return direct_env() && gemm_q8_pairs_supported() ? direct_min : 8;
    }
    default:
      return INT64_MAX;
  }
}

int64_t gemm_q8_min_tokens(CpuIsa isa, GgmlType t, int64_t n) {
  const int64_t m = gemm_q8_min_tokens(isa);
  // Below 8 tokens only the direct tile beats the dot: rows it does not
  // take stay on the dot there (the packed tile at 4 tokens read 0.9x the
  // dot on Zen 4).
  return m < 8 && !gemm_q8_direct_supported(t, n) ? 8 : m;
}

}  // namespace ls
