// The backend factory the CLI hands the engine (EngineOptions::make_backend)
// and the device-memory probe the planner sizes budgets from
// (EngineOptions::device_memory): "cpu", "cuda", or "auto" (CUDA when a
// device is present and the KV cache is f16, else the CPU). The CUDA part is
// compiled only in CUDA builds.
// defines: make_tool_backend(), tool_device_memory(), tool_calibrate_hybrid()
#pragma once

#include "actors/engine.h"

namespace ls {

Expected<std::unique_ptr<Backend>> make_tool_backend(const Model& m, const EngineOptions& opt,
                                                     const TierPlan& plan);
Expected<std::optional<DeviceMemory>> tool_device_memory(const Model& m, const EngineOptions& opt);
// --cpu-layers auto: times the CPU backend on the draft plan's largest RAM
// layer (batch 1, median of 3 after a warm-up) while pinned H2D copies run,
// and returns both rates. An error without CUDA.
Expected<HybridRates> tool_calibrate_hybrid(const Model& m, const EngineOptions& opt,
                                            const TierPlan& draft);

}  // namespace ls
