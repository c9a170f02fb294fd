// The streaming pipeline: the actor graph that runs a model whose layers
// live in three tiers. actors/pipeline.cpp declares every actor, every edge
// and every capacity in one place; read it first.
// defines: PipelineOptions, Pipeline
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "actors/layer_memory.h"
#include "actors/sampler.h"
#include "io/block_source.h"
#include "model/device_link.h"
#include "model/hybrid_balance.h"
#include "model/model.h"
#include "model/tier_plan.h"
#include "model/width_routing.h"
#include "runtime/run_control.h"
#include "runtime/trace.h"

namespace ls {

struct PipelineOptions {
  int32_t depth = 4;               // layers planned ahead of compute
  SourceOptions source;            // the reader's block source (kind, queue depth, chunk size)
  bool io_only = false;            // skip the kernels: measure the pipeline's own ceiling
  uint32_t n_ctx = 0;              // the backend's context (positions per sequence)
  uint32_t n_seq = 1;              // the backends' key/value slots: sequences at once
  // The paged key/value cache's pool (model/kv_blocks.h): 0 takes the
  // backend's (Backend::kv_pool_blocks), else n_ctx positions for every
  // slot; the backends' pools must have as many. kv_seed, not 0: the free
  // blocks in a shuffled order (tests).
  uint32_t kv_blocks = 0;
  uint64_t kv_seed = 0;
  int32_t chunk = 512;             // the most tokens a step holds (step_tokens_max)
  Backend* cpu_backend = nullptr;  // computes the CPU-tier layers (n_cpu > 0 or rebalance)
  // A step of more tokens than this (a prompt) sends every CPU-tier layer
  // through PCIe to the main backend (a CPU layer's time grows with the
  // batch, a streamed one's hardly does); needs device slots in the plan.
  // 0: never (the CPU tier computes every step).
  int32_t cpu_max_batch = 64;
  // Steps of 2..cpu_max_batch tokens keep only as many CPU-tier layers on
  // the CPU as their width pays for, from the times the steps measure
  // (model/width_routing.h); false: all of them (the rule before 2026-12-02).
  bool route_by_width = true;
  // Tests: steps of 2..cpu_max_batch tokens keep this many of the CPU
  // layers on the CPU whatever the measurements say (-1: off).
  int32_t width_cpu_layers = -1;
  // The online re-planner's settings (plans with TierPlan::rebalance).
  HybridBalancer::Options balance;
  // Tests: wrap the block source (fault injection), e.g. in a FaultySource.
  std::function<std::unique_ptr<BlockSource>(std::unique_ptr<BlockSource>)> wrap_source;
};

class Pipeline {
 public:
  // Allocates the tiers' memory per the plan, opens the block source (when
  // some layer is on storage) and starts the actors.
  static Expected<std::unique_ptr<Pipeline>> start(const Model& m, Backend& be,
                                                   const TierPlan& plan, const PipelineOptions& opt,
                                                   Tracer& tracer, RunControl& rc);
  ~Pipeline();  // stops the run and joins every actor

  // Start a sequence beside the running ones (continuous batching,
  // actors/sampler.h): `done` gets how it ended. Errors: an empty prompt, a
  // slot the pipeline lacks, a prompt past the context, a prompt more blocks
  // long than the key/value pool holds, a stopped run. A prompt that fits
  // the pool but not its free blocks waits.
  Expected<uint64_t> submit(SeqRequest r, std::promise<SeqEnd> done);
  // End a sequence at the next step (SeqEnd::cancelled); its slot is freed.
  void cancel(uint64_t id);
  // Wait for a sequence's end; an error if the run failed or was stopped.
  Expected<SeqEnd> wait(std::future<SeqEnd>& done);

  // One sequence in slot 0 at positions n_past.. (the cache kept from the
  // previous request: a chat), waited for: the prompt as one batch (when no
  // other sequence runs), then what the callback returns fed back until it
  // returns nullopt (or the context is full). An error if the run failed or
  // was stopped, or the sequence ended early (SeqEnd::error: the key/value
  // pool ran dry). Slot 0 keeps the request's cache for the next one. The
  // prompt's step has logits for its last row, and for every row from
  // `logits_from` on (perplexity scores a window's rows): its callback gets
  // them in prompt order, the last row last. on_argmax: a greedy request's
  // ArgmaxCallback (actors/sampler.h), or none.
  Status run_request(std::span<const int32_t> prompt, StepCallback cb,
                     size_t logits_from = SIZE_MAX, ArgmaxCallback on_argmax = {});
  // The same with a FeedCallback (speculative decoding: several tokens a
  // step, rewinds); the slot keeps the positions before the end's.
  Status run_request(std::span<const int32_t> prompt, FeedCallback feed);
  uint32_t n_past() const { return n_past_; }
  // From a sequence's callback: the next step's batch will be at most w
  // tokens (a FeedCallback that knows K + 1 before it drafts). The planner
  // routes that step's CPU-tier layers by it at once instead of waiting for
  // the batch, so the copy engine starts the step's copies while the draft
  // runs; the sampler keeps the step's batch to w (prompts joining wait).
  // For a run whose next batch is the caller's alone (run_request).
  void announce_width(int64_t w);
  // Steps the planner routed by an announced width (tests).
  int64_t routed_by_announce() const;
  // Keep only the first n positions of slot 0's cache for the next request
  // (n <= n_past(): a draft model gives up its rejected proposals).
  void truncate(uint32_t n) { n_past_ = std::min(n_past_, n); }
  // Start the next request at position 0 again (between requests): the cache
  // positions are overwritten before they are read.
  void rewind() { n_past_ = 0; }
  uint32_t n_ctx() const { return n_ctx_; }
  uint32_t n_seq() const { return n_seq_; }
  uint32_t kv_blocks() const { return kv_blocks_; }
  // The key/value pool's blocks in use now.
  KvUsage kv_usage() const;
  const char* source_name() const;
  // The online re-planner of a hybrid plan (TierPlan::rebalance), else null.
  // Read it once the run has stopped (its moves are the compute actor's).
  const HybridBalancer* balancer() const;
  // The CPU tier's share by width (hybrid plans with device slots), else
  // null. Read it once the run has stopped.
  const WidthRouting* routing() const;
  // The width routing's simulated step at this width as it will be routed
  // (seconds), kept current while the run goes; 0 where the plan is not
  // routed by width or nothing has been measured yet. Any thread.
  double predicted_step_s(int64_t width) const;
  // Stop the run (every actor exits within a poll interval) and join.
  void stop();

 private:
  struct Graph;
  Pipeline() = default;
  Status run_slot0(std::span<const int32_t> prompt, SeqRequest r);
  std::unique_ptr<HostLink> host_link_;  // when the backend brings no link of its own
  DeviceLink* link_ = nullptr;
  std::unique_ptr<Graph> g_;
  std::vector<std::thread> threads_;
  RunControl* rc_ = nullptr;
  uint32_t n_past_ = 0, n_ctx_ = 0, n_seq_ = 1, kv_blocks_ = 0;
};

}  // namespace ls
