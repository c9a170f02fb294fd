// Warp-level tensor-core helpers (sm_80+; movmatrix sm_75+) for the f16
// attention kernels: ldmatrix (8x8 f16 matrices from shared memory, plain or
// transposed), mma.sync m16n8k16 with f32 accumulators, movmatrix (an 8x8
// f16 matrix transposed in registers), and f32 pairs packed as f16x2.
// Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k16"), with
// g = lane / 4 and c = lane % 4:
//   A (16x16, row): a0a1 (row g, cols 2c, 2c+1), a2a3 (row g+8, same cols),
//                   a4a5 (row g, cols 2c+8, 2c+9), a6a7 (row g+8, cols 2c+8..)
//   B (16x8, col):  b0b1 (rows 2c, 2c+1, col g), b2b3 (rows 2c+8, 2c+9, col g)
//   C (16x8, f32):  c0c1 (row g, cols 2c, 2c+1), c2c3 (row g+8, same cols)
// An ldmatrix x4 loads the A fragment when lane l gives the address of row
// l % 8 of matrix l / 8, the matrices in the order of a0..a7 above.
// defines: smem_u32(), ldmatrix_x4(), ldmatrix_x4_trans(), mma_f16_f32(), movmatrix_trans(),
//          pack_half2()
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace ls {

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// c += a · b, f16 inputs, f32 accumulators.
__device__ __forceinline__ void mma_f16_f32(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                            uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The 8x8 f16 matrix whose row l / 4, columns 2 (l % 4) and + 1 lane l holds
// in x, transposed: lane l gets row l / 4, columns 2 (l % 4), + 1 of the
// transpose.
__device__ __forceinline__ uint32_t movmatrix_trans(uint32_t x) {
  uint32_t y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);  // lo in the low 16 bits = lower column
  return *reinterpret_cast<const uint32_t*>(&h);
}

}  // namespace ls
