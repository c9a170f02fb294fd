// `decode --parallel N`: many prompts through one engine at once, each its
// own sequence (continuous batching, actors/sampler.h), each result printed
// whole and labelled when all are done, with the aggregate rate.
// defines: ParallelDecodeArgs, run_decode_parallel()
#pragma once

#include <string>
#include <vector>

#include "actors/engine.h"
#include "model/sampler.h"

namespace ls {

struct ParallelDecodeArgs {
  std::vector<std::string> prompts;  // one sequence each
  int n_predict = 64;
  bool add_bos = true, special = false, ids = false;
  SamplerParams sp;  // each sequence its own sampler; a given seed becomes seed + index
};

// Runs every prompt, prints the results in prompt order and the summary
// (stderr); returns the error of the first sequence that failed, if any.
Status run_decode_parallel(Engine& e, const ParallelDecodeArgs& a);

}  // namespace ls
