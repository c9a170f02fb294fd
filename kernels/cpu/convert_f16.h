// Runs of f16 <-> f32, vectorised: the same bits as fp16_to_fp32 and
// fp32_to_fp16 of kernels/half.h (round to nearest even), element by
// element, for every finite value and infinity (a NaN stays a NaN). F16C
// (8 values an instruction) where the CPU has it (CpuIsa::Avx2 and up),
// the scalar functions otherwise.
//
// Why: key/value rows move between the GPU's cache and the CPU's when a
// hybrid plan moves a layer (model/kv_cache.h, Backend::read_kv/write_kv);
// at a 4096-token context a 70B layer's rows are 8.4 M values each way,
// which the scalar conversions took tens of milliseconds over.
// defines: fp16_to_fp32_n(), fp32_to_fp16_n()
#pragma once

#include <cstdint>

namespace ls {

void fp16_to_fp32_n(const uint16_t* in, float* out, int64_t n);
void fp32_to_fp16_n(const float* in, uint16_t* out, int64_t n);

}  // namespace ls
