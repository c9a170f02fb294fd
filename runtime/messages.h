// The messages of the actor graph (runtime/pipeline.cpp draws the graph).
// Buffers move, never copy: a message carries buffer ids from fixed pools.
// defines: LayerJob, StepInput, StepOutput, CpuWork
#pragma once

#include <cstdint>

#include "model/backend.h"
#include "model/tier_plan.h"

namespace ls {

// One layer of one step on its way to compute: planner -> (reader ->)
// (copier ->) compute. Holds a depth credit from the planner until compute is
// done with it.
struct LayerJob {
  int64_t step = -1;
  int32_t layer = -1;
  Tier tier = Tier::Resident;
  int32_t staging = -1;  // staging buffer holding the layer (storage tier, reader -> copier)
  int32_t slot = -1;     // device slot holding the layer (RAM and storage tiers, copier -> compute)
};

// The batch of one step: the prompt, or the token the sampler chose
// (sampler -> compute). stop ends the compute actor.
struct StepInput {
  int64_t step = -1;
  Batch batch;
  bool stop = false;
};

// A CPU-tier layer (compute <-> cpu-compute): the hidden state of `batch`
// in `hidden` (size() x n_embd floats, owned by compute, which waits for the
// reply before it touches either again). The reply is the same message with
// the state after the layer, or an error.
struct CpuWork {
  int64_t step = -1;
  int32_t layer = -1;
  const Batch* batch = nullptr;
  float* hidden = nullptr;
  bool failed = false;
};

// The logits of a step's entries that asked for them (compute -> sampler).
// They stay valid until compute starts the next step, which it does only
// after the sampler's next StepInput.
struct StepOutput {
  int64_t step = -1;
  const float* logits = nullptr;  // n_rows x n_vocab
  int32_t n_rows = 0;
};

}  // namespace ls
