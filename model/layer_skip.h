// Layer skip (--skip-layers): a model with some of its layers left out, as
// if it had been trained without them. The layers are removed from the
// model itself (its weight table, its layer map and its layer count), so
// everything after (the tier plan, the pipeline, the backends, the cache) sees
// a shorter model: a skipped layer is never read, copied or computed, and
// every planner and counter is right without knowing about skipping. A
// Llama layer depends on nothing but its weights and its own cache, so the
// rest compute what they would have with the skipped layers as identities
// on the residual stream.
//
// Which layers: a list ("8", "5,8", "4-6,9"), or "auto:N", the N layers
// whose output is most like their input over a calibration text, from the
// MODEL.layerskip.json that `layerstream calibrate` writes beside the model.
// defines: parse_skip_layers(), skip_layers()
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model.h"

namespace ls {

// The layers a spec names, sorted; errors name what is wrong. model_path
// locates the calibration for auto:N.
Expected<std::vector<uint32_t>> parse_skip_layers(const std::string& spec, uint32_t n_layer,
                                                  const std::string& model_path);
// Remove the layers (sorted, distinct, in range, not all); returns the bytes
// of them a step no longer reads.
uint64_t skip_layers(Model& m, const std::vector<uint32_t>& layers);

}  // namespace ls
