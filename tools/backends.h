// The backend factory the CLI hands the engine (EngineOptions::make_backend):
// "cpu", "cuda", or "auto" (CUDA when a device is present and the plan is
// all resident, else the CPU). The CUDA part is compiled only in CUDA builds.
// defines: make_tool_backend()
#pragma once

#include "runtime/engine.h"

namespace ls {

Expected<std::unique_ptr<Backend>> make_tool_backend(const Model& m, const EngineOptions& opt,
                                                     const TierPlan& plan);

}  // namespace ls
