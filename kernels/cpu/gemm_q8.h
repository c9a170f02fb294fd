// The CPU tier's int8-activation matmul for wide batches (prompts; batched
// decode): y = x · Wᵀ for n_tok tokens at once, tiled over (rows × tokens) so
// that each weight block is decoded once per tile and multiplied from
// registers by several tokens, and each token's activations by several rows.
// It computes the lane form of kernels/cpu/q8_lanes.h, the same arithmetic as
// the row-by-row dot (kernels/cpu/dot_q8.h): a token's output has the same
// bits whether it is computed alone by the dot or inside a 512-token batch
// here, on every ISA (tests/unit/kernels/test_cpu_gemm_q8.cpp checks it with
// memcmp). So the CPU backend may pick either path by width alone.
//
// Layouts. Both operands are repacked into chunks of 256 values in which the
// 8 blocks of 32 are interleaved by 4-byte groups:
//     byte 32v + 4j + e of a chunk = value 32j + 4v + e      (v, j < 8; e < 4)
// so 32 bytes (one ymm, "slice v") hold 4 values of each of the 8 blocks, and
// maddubs + madd (or vpdpbusd) put block j's products in int32 lane j: the
// sum over the 8 slices is the lane form's I_j with no horizontal step.
//   x panel  (GemmQ8XChunk): every token's chunks, with the block factors
//            (d_x, ds, Q6_K's ds16 split into lo/hi) beside them; built once
//            per call (gemm_q8_pack_x). The AVX-512 pairs tile's panel holds
//            tokens two by two, side by side (GemmQ8XPair).
//   w tile   (GemmQ8WChunk): a few rows' chunks, unsigned u with the blocks'
//            s and m; built per (row tile, token block) from the packed GGUF
//            rows (gemm_q8_pack_w) and then used for every token of the block.
// A row that ends inside a chunk (Q4_0 / Q8_0) is padded with zero quants and
// zero factors: the padded lanes add +0 and keep their value, as the lane
// form says.
//
// Tiles and reuse (per ISA; gemm_q8_kernel says which):
//   avx2       : 2 rows × 4 tokens. Per slice: 2 weight vectors and 4 token
//                vectors loaded, 8 maddubs into 8 int16 accumulators (no
//                overflow: Q4_0 / Q4_K sum all 8 slices, at most 8 · 2 · 15 ·
//                127; Q5_K 4, Q6_K 2, Q8_0 1, then madd to int32); per chunk
//                and (row, token) the float step of the lane form.
//   avx512vnni : 4 rows × 4 tokens, vpdpbusd into int32 (two slices per zmm).
//   direct     : 2 rows × up to 8 tokens with no weight pack: the rows'
//                GGUF blocks decoded into the interleaved order in
//                registers (gemm_q8_direct_avx512.cpp; AVX-512 VNNI, Q4_K,
//                Q5_K, Q6_K and Q8_0 rows of whole chunks, calls of 4-8
//                tokens: GemmQ8Tuning::direct).
//   portable   : 1 × 1, plain C++ over the same layouts.
//   amx        : 16 rows × 32 tokens on the tile unit, from 16 tokens on
//                CPUs that have it (kernels/cpu/gemm_q8_amx.h: natural-order
//                weights and its own x panel, GemmQ8AmxX; same bits).
// Blocking (gemm_q8_plan): a task is a range of rows (packed once per call,
// about a quarter of L2) for a group of tokens (all of them unless rows are
// few); within it, tokens in blocks whose panel fills about half of L2, and
// per block each row tile (in L1) meets the block's tokens, a tile of tokens
// at a time. So a weight row is read from memory and packed once per call,
// and x comes from L2. Threads split rows, and tokens where rows are few.
// defines: GemmQ8XChunk, GemmQ8XPair, gemm_q8_pack_x_pairs(), GemmQ8WChunk, GemmQ8TileFn,
// GemmQ8Kernel, gemm_q8_kernel(),
//          gemm_q8_pack_x(), gemm_q8_pack_w(), gemm_q8_pack_x_from(), gemm_q8_pack_x_avx2(),
//          gemm_q8_pack_w_avx2(), GemmQ8Scratch, GemmQ8Tuning, GemmQ8Plan, gemm_q8_plan(),
//          gemm_q8_parts(), gemm_q8_plan_for(), GemmQ8AmxX, GemmQ8Amx,
//          gemm_q8_min_tokens(), gemm_q8_tile_avx512vnni_pairs(), gemm_q8_pairs_supported(),
//          gemm_q8_direct_supported(), gemm_q8_direct_avx512(), kGemmQ8DirectToks,
//          gemm_q8_tile_avx2_vnni(), cpu_has_avx_vnni()
#pragma once

#include <cstdint>
#include <vector>

#include "io/ggml_type.h"
#include "kernels/cpu/act_q8_cpu.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/matmul_part.h"
#include "runtime/thread_pool.h"

namespace ls {

// One chunk of 256 values of one token.
struct alignas(32) GemmQ8XChunk {
  int8_t q[256];   // interleaved (see the top)
  float d[8];      // d_x of block j (0 past the row's end)
  float ds[8];     // ds of block j
  float ds_lo[8];  // ds16 of block j's first 16 values (Q6_K)
  float ds_hi[8];  // ... and of its last 16
  int32_t sum[8];  // sum of block j's q (exact), for corrections of the weights' offsets
};
static_assert(sizeof(GemmQ8XChunk) == 416, "GemmQ8XChunk is 416 bytes");

// The pairs tile's panel (gemm_q8_tile_avx512vnni_pairs): tokens 2p and
// 2p + 1 side by side, slice by slice, so that one load gives the zmm of a
// slice of both (token 2p in its low half): chunk c of pair p at pair p · nc
// + c. Two GemmQ8XChunk's bytes, so the per-token panel's offset of token
// 2p (2p · nc chunks) is pair p's. A batch of odd length repeats its last
// token as the last pair's second (computed, never stored).
struct alignas(32) GemmQ8XPair {
  int8_t q[512];  // slice v: token 2p's 32 bytes, then 2p + 1's
  float d[16];    // token 2p's 8 blocks, then 2p + 1's
  float ds[16];
  float ds_lo[16];
  float ds_hi[16];
  int32_t sum[16];
};
static_assert(sizeof(GemmQ8XPair) == 2 * sizeof(GemmQ8XChunk), "a pair is two chunks' bytes");
static_assert(sizeof(GemmQ8XPair) % 64 == 0, "pairs start on cache lines (GemmQ8Scratch::panel)");

// One chunk of 256 values of one weight row, in the lane form's terms.
struct alignas(32) GemmQ8WChunk {
  uint8_t u[256];  // interleaved; Q8_0: signed bytes
  float s[8];      // lane j: block j's scale (Q6_K: its lo group's)
  float m[8];      // lane j: min or offset factor (0 when the type has none)
  float s_hi[8];   // Q6_K: the hi group's scale
  float m_hi[8];   // Q6_K: the hi group's offset factor
};
static_assert(sizeof(GemmQ8WChunk) == 384, "GemmQ8WChunk is 384 bytes");

// AMX (kernels/cpu/gemm_q8_amx.h): one chunk of 256 values of a group of 16
// tokens, as the tile multiply reads it. Block j is a B tile of 8 rows of 64
// bytes: row k, bytes 4t + e = token t's value 32j + 4k + e (the "VNNI"
// layout: four consecutive values of one token side by side), so one
// multiply of a 16-row weight tile by it gives the 16 x 16 exact sums I_j of
// the lane form at once. The factors are per block, 16 tokens wide (a
// token past the batch's end has zeros everywhere).
struct alignas(64) GemmQ8AmxX {
  int8_t b[8][512];
  float d[8][16], ds[8][16], ds_lo[8][16], ds_hi[8][16];
};
static_assert(sizeof(GemmQ8AmxX) == 6144, "GemmQ8AmxX is 6 KiB");
inline constexpr int kGemmQ8AmxGroup = 16;  // tokens a GemmQ8AmxX holds

inline int64_t gemm_q8_chunks(int64_t n) {
  return (n + 255) / 256;
}

// y[t * ldy + r] = row r of w · token t of x, for r < n_rows, t < n_tok (at
// most the kernel's rows and toks); w: n_rows rows of nc chunks each, x:
// n_tok tokens of nc chunks each.
using GemmQ8TileFn = void (*)(GgmlType t, const GemmQ8WChunk* w, int n_rows, const GemmQ8XChunk* x,
                              int n_tok, int64_t nc, float* y, int64_t ldy);
struct GemmQ8Kernel {
  GemmQ8TileFn tile;
  int rows, toks;  // the tile's largest shape
  const char* name;
};
void gemm_q8_tile_scalar(GgmlType t, const GemmQ8WChunk* w, int n_rows, const GemmQ8XChunk* x,
                         int n_tok, int64_t nc, float* y, int64_t ldy);
void gemm_q8_tile_avx2(GgmlType t, const GemmQ8WChunk* w, int n_rows, const GemmQ8XChunk* x,
                       int n_tok, int64_t nc, float* y, int64_t ldy);
void gemm_q8_tile_avx512vnni(GgmlType t, const GemmQ8WChunk* w, int n_rows, const GemmQ8XChunk* x,
                             int n_tok, int64_t nc, float* y, int64_t ldy);
// The AVX2 tile with AVX-VNNI's 256-bit vpdpbusd (gemm_q8_avx2.cpp, the same
// bits; GemmQ8Tuning::avx_vnni), and whether this CPU has AVX-VNNI.
void gemm_q8_tile_avx2_vnni(GgmlType t, const GemmQ8WChunk* w, int n_rows, const GemmQ8XChunk* x,
                            int n_tok, int64_t nc, float* y, int64_t ldy);
bool cpu_has_avx_vnni();
// The same tile over token pairs (gemm_q8_avx512.cpp, the same bits; the
// default where the CPU runs it: GemmQ8Tuning::pairs). Needs AVX-512 VNNI
// and DQ. x is a pairs panel (GemmQ8XPair, gemm_q8_pack_x_pairs) at an even
// token.
void gemm_q8_tile_avx512vnni_pairs(GgmlType t, const GemmQ8WChunk* w, int n_rows,
                                   const GemmQ8XChunk* x, int n_tok, int64_t nc, float* y,
                                   int64_t ldy);
// Whether this CPU runs the pairs tile.
bool gemm_q8_pairs_supported();
// The direct tile (gemm_q8_direct_avx512.cpp, the same bits; GemmQ8Tuning::
// direct): n_rows (1 to kGemmQ8DirectRows) rows of type t straight from their GGUF bytes (row
// r at w + r * row_bytes) times n_tok (1-8) tokens of a pairs panel (x at an
// even token), no weight pack. Whether it takes rows of n values of type t
// on this CPU:
bool gemm_q8_direct_supported(GgmlType t, int64_t n);
// pairs_min: GemmQ8Tuning::direct_pairs_min.
void gemm_q8_direct_avx512(GgmlType t, const uint8_t* w, uint64_t row_bytes, int n_rows,
                           const GemmQ8XChunk* x, int n_tok, int64_t nc, float* y, int64_t ldy,
                           int pairs_min = 0);
// The kernel for isa (Avx512 without VNNI runs avx2's, as dot_q8_fn).
GemmQ8Kernel gemm_q8_kernel(CpuIsa isa);

// Tokens [t0, t1) of x into panel (token t at panel + t * nc); isa picks
// the packer (every one gives the same bytes).
void gemm_q8_pack_x(const ActQ8View& x, int64_t t0, int64_t t1, GemmQ8XChunk* panel,
                    CpuIsa isa = CpuIsa::Portable);
// One weight row of n values of type t into nc chunks, chunk c at out[c *
// stride] (natural: u in the values' own order, block j = bytes 32j.., for
// the AMX path, whose tiles interleave 16 rows: stride 16).
void gemm_q8_pack_w(GgmlType t, const uint8_t* row, int64_t n, GemmQ8WChunk* out,
                    CpuIsa isa = CpuIsa::Portable, bool natural = false, int64_t stride = 1);
// Pairs [p0, p1) of the n_tok tokens of x into a pairs panel (the pairs
// tile's; isa picks the per-token packer it interleaves).
void gemm_q8_pack_x_pairs(const ActQ8View& x, int64_t p0, int64_t p1, int64_t n_tok,
                          GemmQ8XChunk* panel, CpuIsa isa);
// The packers: portable (chunks c0.. of each token only), and AVX2.
void gemm_q8_pack_x_from(const ActQ8View& x, int64_t t0, int64_t t1, int64_t c0,
                         GemmQ8XChunk* panel);
void gemm_q8_pack_x_avx2(const ActQ8View& x, int64_t t0, int64_t t1, GemmQ8XChunk* panel);
void gemm_q8_pack_w_avx2(GgmlType t, const uint8_t* row, int64_t n, GemmQ8WChunk* out,
                         bool natural = false, int64_t stride = 1);

// The panel and the per-thread tiles; grows in reserve only.
class GemmQ8Scratch {
 public:
  // tile_chunks per thread (GemmQ8Plan::tile_chunks), panel_chunks: n_tok ·
  // gemm_q8_chunks(n) (the AMX path: token groups · chunks, in amx_chunks).
  void reserve(int n_threads, int64_t tile_chunks, int64_t panel_chunks, int64_t amx_chunks = 0);
  // 64-byte aligned (one chunk on where the vector's storage is not: a chunk
  // is 6.5 lines), so that the direct tile's 64-byte loads of a pair's
  // slice (GemmQ8XPair: 13 lines) never split a cache line.
  GemmQ8XChunk* panel() {
    GemmQ8XChunk* p = panel_.data();
    return reinterpret_cast<uintptr_t>(p) % 64 ? p + 1 : p;
  }
  GemmQ8AmxX* amx_panel() { return amx_panel_.data(); }
  GemmQ8WChunk* tile(int thread) { return tiles_[thread].data(); }

 private:
  std::vector<GemmQ8XChunk> panel_;
  std::vector<GemmQ8AmxX> amx_panel_;
  std::vector<std::vector<GemmQ8WChunk>> tiles_;
};

// Knobs of the blocking (the defaults are what the engine runs;
// bench_cpu_matmul sweeps them).
// Whether the AMX tile multiply computes the products (kernels/cpu/gemm_q8_amx.h).
enum class GemmQ8Amx {
  Auto,      // where the CPU has it (gemm_q8_amx_enabled) and the call is wide enough
  Off,       // the ISA's tile kernel
  On,        // the AMX path (the CPU must have it)
  Emulated,  // the AMX path with the tile unit emulated in plain C++ (tests, any CPU)
};

// The order of the AMX path's steps (kernels/cpu/gemm_q8_amx_body.h); the
// same bits in every form. ahead: how many steps (a chunk's block of 32) the
// tile multiplies run ahead of the float step, 1 or 2 (2: a tile store has
// a whole float step more to land before its sums are loaded). lanes: steps
// lane-major (each group's lane through all chunks, its 16 accumulators in
// registers) rather than chunk-major (every accumulator loaded and stored a
// step).
struct GemmQ8AmxForm {
  int ahead = 1;
  bool lanes = false;
};

struct GemmQ8Tuning {
  int64_t panel_bytes = 0;  // a token block's panel; 0: half of this core's L2
  int rows_per_task = 0;    // rows a task packs and computes; 0: from range_bytes
  int64_t range_bytes = 0;  // those rows packed; 0: a quarter of L2 (and >= 4 tasks a thread)
  GemmQ8Amx amx = GemmQ8Amx::Auto;
  // The AVX-512 VNNI tile over token pairs instead of the one-token tile
  // (same bits; gemm_q8_avx512.cpp): 1 on where gemm_q8_pairs_supported, 0
  // off, -1 on unless LS_GEMM_PAIRS=0 (A/B timing of whole runs). Measured
  // 1.1-1.45x the one-token tile at 8-32 tokens on the GPU machine's Xeon
  // (bench/results/2026-12-03-h200-s21.md).
  int pairs = -1;
  // The direct tile for calls of at most kGemmQ8DirectToks tokens, on the
  // parts whose type it takes (gemm_q8_direct_supported; the pairs tile's
  // path packs the others): 1 on, 0 off, -1 on unless LS_GEMM_DIRECT=0.
  // Measured on Zen 4 only (1.1-1.35x the pairs tile at 8 tokens; the
  // engine's widths 6-8 12-32 % faster: bench/results/2026-12-05-s34-no-
  // device.md); on the Xeon, session 35: 1.04-1.36x at 8 tokens.
  int direct = -1;
  // The width from which the direct tile takes its pairs form (one row for
  // two tokens a register; gemm_q8_direct_common.h's DirectForm; the same
  // bits): 0 for LS_DIRECT_PAIRS_MIN, else 4; 2-9 (9: never) for tests and
  // A/B.
  int direct_pairs_min = 0;
  // The AVX2 path's tile with AVX-VNNI where the CPU has it: 1 on (if it
  // has), 0 off, -1 on unless LS_AVX_VNNI=0. Measured on Zen 4 only (bench/
  // results/2026-12-05-s34-no-device.md); for Intel's client cores (Alder
  // Lake on), which have AVX-VNNI but no AVX-512.
  int avx_vnni = -1;
  // The AMX path's form (GemmQ8AmxForm): amx_ahead 0 and amx_lanes -1 take
  // gemm_q8_amx_form's (LS_AMX_AHEAD, LS_AMX_LANES); the same bits.
  int amx_ahead = 0;
  int amx_lanes = -1;
};
inline constexpr int kGemmQ8DirectToks = 8, kGemmQ8DirectRows = 8;

// How gemm_q8_parts cuts a call (gemm_q8_plan computes it; the CPU backend
// sizes the scratch with it).
struct GemmQ8Plan {
  int64_t tokens_per_block;  // tokens whose panel is read while a row tile stays in L1
  int64_t rows_per_range;    // rows a task packs (whole tiles, at most 64)
  int64_t token_groups;      // the tokens cut into this many tasks too (few rows)
  int64_t tile_chunks;       // per-thread scratch: rows_per_range · chunks
};
GemmQ8Plan gemm_q8_plan(CpuIsa isa, int threads, int64_t n_tok, int64_t n, int64_t rows,
                        const GemmQ8Tuning& tune = {});
// The same for a kernel's tile shape (the AMX path's: 16 rows x 32 tokens).
GemmQ8Plan gemm_q8_plan_for(const GemmQ8Kernel& k, int threads, int64_t n_tok, int64_t n,
                            int64_t rows, const GemmQ8Tuning& tune = {});

// y = x · Wᵀ for each part (parts share x, n_tok tokens of x.n values).
// Requires matmul_cpu_supports(part.w) and x.n == part.w.n_in.
void gemm_q8_parts(ThreadPool& pool, const MatmulQ8Part* parts, int n_parts, const ActQ8View& x,
                   int64_t n_tok, GemmQ8Scratch& scratch, CpuIsa isa = cpu_isa_active(),
                   const GemmQ8Tuning& tune = {});

// From how many tokens the CPU backend runs gemm_q8_parts rather than the
// row-by-row dot (measured: bench/results/, see gemm_q8.cpp).
int64_t gemm_q8_min_tokens(CpuIsa isa);
// The same for rows of n values of type t (the least over types is the one
// above: the direct tile's 4 where it runs, 8 for the types it does not take).
int64_t gemm_q8_min_tokens(CpuIsa isa, GgmlType t, int64_t n);

}  // namespace ls
