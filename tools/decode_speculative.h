// decode's speculative decoding (--draft): the drafts of model/speculative.h
// plus a draft model, and the request that feeds the target verify steps
// through the pipeline (Pipeline::run_request with a FeedCallback).
// defines: SpecOptions, SpecReport, SpeculativeDecoder
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "actors/engine.h"
#include "model/sampler.h"
#include "model/speculative.h"

namespace ls {

struct SpecOptions {
  // "" (off), "lookup", "replay:FILE:ALPHA" (benchmarks: FILE holds the
  // target's greedy output ids, e.g. from decode --ids), or a GGUF draft model.
  std::string draft;
  int k_max = 16, k_min = 0;  // --draft-max, --draft-min: drafts a step
  float p_min = 0.8f;         // --draft-p-min: a draft model stops below this probability
};

// What a run's verify steps did.
struct SpecReport {
  size_t steps = 0, drafted = 0, accepted = 0, emitted = 0;
  double draft_s = 0, verify_s = 0;
  // The replay draft: the first output token (counted from the request's
  // start) where the target's output left the file's, or -1. Past there the
  // file no longer predicts the target, so the acceptance is not its ALPHA.
  int64_t replay_left_at = -1;
  // The replay draft: positions of its file, and those it proposes wrong
  // (0 and 0: not a replay).
  size_t replay_n = 0, replay_wrong = 0;
  std::string to_text(const std::string& draft) const;
};

class SpeculativeDecoder {
 public:
  // Opens a draft model (before the target: its device memory is then
  // taken out of what the target plans with), on the target's backend kind.
  static Expected<std::unique_ptr<SpeculativeDecoder>> make(const SpecOptions& o,
                                                            const EngineOptions& target);
  ~SpeculativeDecoder();
  // Checks against the target (vocabulary).
  Status attach(const Model& target);
  // One request: prompt fed at the target's n_past, then tokens generated
  // with verify steps, each handed to emit (false: stop after it) until n.
  Status run(Engine& target, Sampler& s, std::span<const int32_t> prompt, int n,
             const std::function<bool(int32_t)>& emit);
  const SpecReport& report() const { return report_; }
  const std::string& name() const { return name_; }
  // The draft model's CPU pool, for the target to share (their steps take
  // turns; EngineOptions::cpu_pool); null: no draft model, or none on the CPU.
  std::shared_ptr<ThreadPool> cpu_pool() const;

 private:
  SpeculativeDecoder() = default;
  SpecOptions opt_;
  std::unique_ptr<Engine> draft_engine_;
  std::unique_ptr<Draft> draft_;
  std::vector<int32_t> replay_;  // replay:FILE's ids (the draft is made per run)
  double replay_alpha_ = 0;
  std::vector<int32_t> ctx_;  // every token of the conversation so far
  SpecReport report_;
  // What chooses K (when --draft-min < --draft-max), set by make(): it
  // learns over the decoder's life, every turn of a chat, not one request,
  // since what it measures (the verify step's cost at each width, the
  // draft's cost and acceptance) belongs to the machine and the pair.
  SpecK chooser_{0, 16};
  std::string name_;
  static constexpr int kNoTrack = -2;
  int track_ = kNoTrack;  // the trace's "draft" track (written from the sampler's thread)
};

}  // namespace ls
