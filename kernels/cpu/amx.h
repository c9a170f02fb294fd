// Whether this process may use Intel AMX (Advanced Matrix Extensions: eight
// 1 KiB tile registers and a tile multiply unit), per data type. Linux gives
// a process the tile registers only on request (arch_prctl(ARCH_REQ_XCOMP_PERM,
// XFEATURE_XTILEDATA)); the first call asks once for the whole process.
// Users: the int8 GEMM (kernels/cpu/gemm_q8_amx.h) and the bf16 attention
// scores (kernels/cpu/attention_cpu_amx.h). Both keep their vector work on
// AVX-512 (every CPU with AMX has it; checked anyway).
// defines: cpu_amx_usable(), cpu_amx_bf16_usable()
#pragma once

namespace ls {

// AMX-TILE and AMX-INT8 (TDPBUSD, TDPBSSD), AVX-512 F/BW/VL, and the permission.
bool cpu_amx_usable();
// AMX-TILE and AMX-BF16 (TDPBF16PS), AVX-512 F/BW/VL and AVX512_BF16
// (VCVTNE2PS2BF16), and the permission.
bool cpu_amx_bf16_usable();

}  // namespace ls
