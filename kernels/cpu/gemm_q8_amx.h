// The GEMM's AMX path (Intel Advanced Matrix Extensions: eight 1 KiB tile
// registers and a unit that multiplies int8 tiles into int32 ones, 1,024
// products a cycle a core against 128 for AVX-512 VNNI). At 32 tokens the
// VNNI tile spends most of its time on the products (a 70B layer: 44 ms,
// 0.43 of the VNNI peak, bench/results/2026-12-02-h200-batch.md), where the
// weights take 6 ms to read; the tile unit takes the products off the
// vector units, which keep only the lane form's float step.
//
// Same arithmetic, same bits. For each chunk and block j of the lane form
// (kernels/cpu/q8_lanes.h), one tile multiply of 16 weight rows (their block
// j: 32 bytes each, in natural order) by a group of 16 tokens (GemmQ8AmxX,
// kernels/cpu/gemm_q8.h) gives the exact int32 sums I_j of all 16 x 16
// pairs (u8 x s8; Q8_0's signed weights s8 x s8; Q6_K's two groups of 16 as
// two multiplies of 16 values); then the float step per pair, 16 tokens per
// vector, in the lane form's order. So the AMX path's outputs are bit for
// bit the other paths' (tests/unit/kernels/test_cpu_gemm_q8.cpp).
//
// The tile unit is driven through a small set of operations (configure,
// load, zero, multiply, store, release) that the kernel body
// (gemm_q8_amx_body.h) takes as a policy: the hardware's intrinsics
// (gemm_q8_amx.cpp) or a plain C++ emulation of their definition
// (gemm_q8_amx_emu.cpp), which lets the layouts, the order of the float
// step and the path through gemm_q8_parts be tested on any CPU; on a CPU
// with AMX the tests run both.
//
// Linux gives a process the tile registers only on request
// (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)); cpu_amx_usable asks
// once for the whole process.
// defines: cpu_amx_usable(), gemm_q8_amx_enabled(), gemm_q8_amx_form(), GemmQ8AmxTileFn,
//          gemm_q8_amx_tile_hw(),
//          gemm_q8_amx_tile_emu(), gemm_q8_amx_pack_x(),
//          gemm_q8_amx_min_tokens(), kGemmQ8AmxRows, kGemmQ8AmxToks
#pragma once

#include <cstdint>

#include "io/ggml_type.h"
#include "kernels/cpu/act_q8_cpu.h"
#include "kernels/cpu/gemm_q8.h"

namespace ls {

inline constexpr int kGemmQ8AmxRows = 16;  // weight rows a tile multiply covers
inline constexpr int kGemmQ8AmxToks = 32;  // tokens a kernel call covers (two groups)

// The CPU has AMX-TILE and AMX-INT8 and the kernel let this process use them.
bool cpu_amx_usable();
// cpu_amx_usable, unless LS_CPU_AMX=0 is in the environment (A/B timing of a
// whole run against the AVX-512 VNNI tile).
bool gemm_q8_amx_enabled();
// From how many tokens gemm_q8_parts takes the AMX path where it is enabled.
int64_t gemm_q8_amx_min_tokens();

// y[t * ldy + r] = row r · token t for r < n_rows (<= 16), t < n_tok (<= 16
// · n_groups, n_groups 1 or 2). w: 16 rows of nc natural-order chunks
// (gemm_q8_pack_w's natural order; rows past n_rows are read, so they must be there:
// zeros do), chunk-major: row r chunk c at w[c * 16 + r]; x: n_groups groups of nc
// chunks, group g chunk c at x[g * nc + c]. form: the order of the kernel's
// steps (GemmQ8AmxForm; the same bits in every form).
using GemmQ8AmxTileFn = void (*)(GgmlType t, const GemmQ8WChunk* w, int64_t nc, const GemmQ8AmxX* x,
                                 int n_groups, int n_rows, int n_tok, float* y, int64_t ldy,
                                 GemmQ8AmxForm form);
void gemm_q8_amx_tile_hw(GgmlType t, const GemmQ8WChunk* w, int64_t nc, const GemmQ8AmxX* x,
                         int n_groups, int n_rows, int n_tok, float* y, int64_t ldy,
                         GemmQ8AmxForm form);
void gemm_q8_amx_tile_emu(GgmlType t, const GemmQ8WChunk* w, int64_t nc, const GemmQ8AmxX* x,
                          int n_groups, int n_rows, int n_tok, float* y, int64_t ldy,
                          GemmQ8AmxForm form);
// The form a call takes where its tuning leaves it to the default:
// LS_AMX_AHEAD (1 or 2, else 1) and LS_AMX_LANES (0 or 1, else 0); A/B on
// the Xeon pending (session 43).
GemmQ8AmxForm gemm_q8_amx_form();

// Tokens [t0, t1) of x into the panel (t0 a multiple of 16; token t in group
// t / 16 at its place t % 16, group g chunk c at panel[g * nc + c]), chunks
// [c0, c1) of them (c1 < 0: to the last); a group's places from t1 on are
// zeroed.
void gemm_q8_amx_pack_x(const ActQ8View& x, int64_t t0, int64_t t1, GemmQ8AmxX* panel,
                        int64_t c0 = 0, int64_t c1 = -1);

}  // namespace ls
