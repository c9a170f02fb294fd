// How the CPU tier's quantized matmuls take their activations: f32 (every
// product w·x exactly the reference's: the oracle) or 8-bit (int8 dot
// products, kernels/act_q8.h: the fast path, within a stated bound). A small
// header of its own so that option structs can name it without the kernels.
// defines: CpuAct, cpu_act_name(), cpu_act_from_name()
#pragma once

#include <optional>
#include <string_view>

namespace ls {

enum class CpuAct { F32, Q8 };

inline const char* cpu_act_name(CpuAct a) {
  return a == CpuAct::Q8 ? "q8" : "f32";
}

inline std::optional<CpuAct> cpu_act_from_name(std::string_view name) {
  if (name == "q8") return CpuAct::Q8;
  if (name == "f32") return CpuAct::F32;
  return std::nullopt;
}

}  // namespace ls
