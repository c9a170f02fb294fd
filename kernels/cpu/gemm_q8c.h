// The chunk form's GEMM (kernels/cpu/q8_chunks.h) on the AMX tile unit, for
// the K-quants at 8-64+ tokens: y = x · Wᵀ, bit for bit what the chunk
// form's dot (kernels/cpu/dot_q8c.h) gives each token alone.
//
// Why it is cheap where the lane form's AMX path is not: the weights'
// sub-block scales go into the quants before the multiply. Per row and
// chunk, v_i = sc(i) · u_i (Q6_K: sc(i) · (u_i - 32)) is at most 13 bits
// signed (-3968..4096), so it is split into two byte planes, v = 64 · hi
// + lo with lo = v & 63 (0..63) and hi = v >> 6 (-62..64): the tile unit
// sums a whole chunk of each plane against the activations (four
// multiplies of K = 64, accumulating in the C tile), and A = 64 · A_hi +
// A_lo is exact in int32. So a chunk of 16 rows × 16 tokens costs the tile unit 8 full
// multiplies and the vector units one float step per chunk (the lane form:
// 8 half-empty multiplies and a float step per block of 32), and B (the
// mins' term) is 4 vpdpwssd of the 32-block sums against the row's mins.
//
// Layouts (built per call):
//   GemmQ8cW  one chunk of a tile of 16 rows: each plane as 4 A tiles of K
//             = 64 values (16 rows of 64 bytes, contiguous: a tile load
//             reads 1 KiB in a row, stride 64), the rows' d and dmin as
//             f32, their 8 mins as int16 pairs.
//   GemmQ8cX  one chunk of a group of 16 tokens: 4 B tiles of K = 64
//             values (row k4, bytes 4t + e = token t's value 64s + 4k4 + e:
//             the tile unit's "VNNI" layout), dx of the 16 tokens, and the
//             32-block sums as int16 pairs (j = 2p, 2p + 1) per token.
// The tile body (gemm_q8c_amx_body.h) is written once over the tile
// operations, run by the hardware (gemm_q8_amx.cpp) or by their emulation
// in plain C++ (gemm_q8_amx_emu.cpp: tests on any CPU).
// defines: GemmQ8cW, GemmQ8cX, GemmQ8cTileFn, gemm_q8c_amx_tile_hw(), gemm_q8c_amx_tile_emu(),
//          gemm_q8c_pack_w(), gemm_q8c_pack_w_fast(), gemm_q8c_zero_row(), gemm_q8c_pack_x(),
//          kGemmQ8cRows, GemmQ8cScratch,
//          gemm_q8c_parts(), gemm_q8c_min_tokens(), gemm_q8c_kernel()
#pragma once

#include <cstdint>
#include <vector>

#include "io/ggml_type.h"
#include "kernels/cpu/act_q8_cpu.h"
#include "kernels/cpu/gemm_q8.h"
#include "kernels/cpu/matmul_part.h"
#include "runtime/thread_pool.h"

namespace ls {

struct alignas(64) GemmQ8cW {
  int8_t hi[4][16][64];   // [K step][row][value 64s + k]: v >> 6
  uint8_t lo[4][16][64];  // v & 63
  float d[16], dmin[16];  // dmin 0 for Q6_K
  int32_t mn[4][16];      // [pair][row]: mins (2p) | (2p + 1) << 16, vpdpwssd pairs (0: Q6_K)
};
static_assert(sizeof(GemmQ8cW) == 8576, "GemmQ8cW is 134 lines");
inline constexpr int kGemmQ8cRows = 16;  // rows a GemmQ8cW holds

struct alignas(64) GemmQ8cX {
  int8_t b[4][1024];  // K-step s: 16 rows of 64 bytes
  float dx[16];       // 0 past the batch's end
  int32_t bs[4][16];  // token t: bsum(2p) | bsum(2p + 1) << 16
};
static_assert(sizeof(GemmQ8cX) == 4416, "GemmQ8cX is 69 lines");

// y[t * ldy + r] = row r · token t for r < n_rows (<= 16), t < n_tok (<= 16
// · n_groups, n_groups 1 or 2). w: the 16 rows' nc chunks (rows past n_rows
// are computed and dropped: zeros do), chunk c at w[c]; x: group g chunk c
// at x[g * nc + c].
using GemmQ8cTileFn = void (*)(GgmlType t, const GemmQ8cW* w, int64_t nc, const GemmQ8cX* x,
                               int n_groups, int n_rows, int n_tok, float* y, int64_t ldy);
void gemm_q8c_amx_tile_hw(GgmlType t, const GemmQ8cW* w, int64_t nc, const GemmQ8cX* x,
                          int n_groups, int n_rows, int n_tok, float* y, int64_t ldy);
void gemm_q8c_amx_tile_emu(GgmlType t, const GemmQ8cW* w, int64_t nc, const GemmQ8cX* x,
                           int n_groups, int n_rows, int n_tok, float* y, int64_t ldy);

// One row of n values (n % 256 == 0) of type t into place r (< 16) of the
// n / 256 chunks at out: plain C++, and the AVX-512 BW variant (same bytes;
// where the CPU has it).
void gemm_q8c_pack_w(GgmlType t, const uint8_t* row, int64_t n, GemmQ8cW* out, int r);
void gemm_q8c_pack_w_fast(GgmlType t, const uint8_t* row, int64_t n, GemmQ8cW* out, int r);
// Place r of the n / 256 chunks at out zeroed (a tile's rows past the matrix).
void gemm_q8c_zero_row(int64_t nc, GemmQ8cW* out, int r);
// Chunks [c0, c1) of tokens [t0, t1) of x (chunk form set) into the panel
// (t0 a multiple of 16; token t in group t / 16, group g chunk c at
// panel[g * nc + c]); a group's places from t1 on are zeroed.
void gemm_q8c_pack_x(const ActQ8View& x, int64_t t0, int64_t t1, int64_t c0, int64_t c1,
                     GemmQ8cX* panel);

class GemmQ8cScratch {
 public:
  void reserve(int n_threads, int64_t tile_chunks, int64_t panel_chunks);
  GemmQ8cX* panel() { return panel_.data(); }
  GemmQ8cW* tile(int thread) { return tiles_[thread].data(); }

 private:
  std::vector<GemmQ8cX> panel_;
  std::vector<std::vector<GemmQ8cW>> tiles_;
};

// The kernel a call takes: the tile unit where amx is On or (Auto) where
// gemm_q8_amx_enabled, the emulation for Emulated, else null (no chunk
// GEMM here: the caller runs the chunk form's dot).
GemmQ8cTileFn gemm_q8c_kernel(GemmQ8Amx amx);
// From how many tokens the engine takes the chunk GEMM rather than the dot
// (LS_CPU_Q8C_GEMM_MIN overrides it for A/B timing).
int64_t gemm_q8c_min_tokens();

// y = x · Wᵀ for each part: every part a K-quant, x with its chunk form.
// kernel from gemm_q8c_kernel (not null).
void gemm_q8c_parts(ThreadPool& pool, const MatmulQ8Part* parts, int n_parts, const ActQ8View& x,
                    int64_t n_tok, GemmQ8cScratch& scratch, GemmQ8cTileFn kernel,
                    const GemmQ8Tuning& tune = {});

}  // namespace ls
