// The planner: emits the endless cyclic sequence of layer jobs (step s,
// layers 0..L-1, step s+1, ...) and routes each by its tier: resident layers
// straight to compute, streamed ones (RAM and storage) to the reader, which
// reads the storage ones and passes all of them to the copier in order. It never runs more than
// `depth` jobs ahead of compute: each job holds a depth credit that compute returns when the
// job's layer (or run of resident layers, below) is done. Weights do not depend on the token,
// so the next step's first layers are read and copied while the current step finishes
// (prefetch across tokens).
// Of the layers on the CPU, a step computes there only as many as its width
// allows (StepWidths, HybridRoute::keep, model/width_routing.h); the others
// go the streamed way for that step, when the plan has device slots to take
// them: a CPU layer's cost grows with every token of the batch, a copy's
// does not (a prompt sends them all).
// A hybrid plan re-planned online (TierPlan::rebalance) routes each
// host-memory layer (the plan's CPU and RAM tiers) by HybridRoute::on_cpu
// as it is planned; a fixed plan's CPU layers are its CPU tier.
// With a group above 1 (Backend::layer_group: the CUDA backend runs a run of
// resident layers as one graph; the pipeline asks it only for plans without
// a CPU tier), each run of up to `group` consecutive resident layers is one
// job and one depth credit: the planner is then
// ahead by whole runs, so the next step's resident layers are in compute's
// mailbox before the step begins (a job a layer, taken in one go, waited on
// the planner's wake-ups: ~0.3 ms a step on the H200 machine's vCPUs).
// defines: Planner
#pragma once

#include "actors/messages.h"
#include "model/tier_plan.h"
#include "runtime/credit_pool.h"
#include "runtime/trace.h"

namespace ls {

class Planner {
 public:
  // widths and route: both null (the CPU computes its layers at every
  // width), or the steps' widths and the route (on_cpu read only when the
  // plan is re-planned online).
  Planner(const TierPlan& plan, CreditPool& depth, Mailbox<LayerJob>& to_reader,
          Mailbox<LayerJob>& to_compute, const StepWidths* widths, const HybridRoute* route,
          RunControl& rc, Tracer& tracer, uint32_t group = 1);
  void run();  // the actor's thread

 private:
  const TierPlan& plan_;
  CreditPool& depth_;
  Mailbox<LayerJob>& to_reader_;
  Mailbox<LayerJob>& to_compute_;
  const StepWidths* widths_;
  const HybridRoute* route_;
  RunControl& rc_;
  Tracer& tracer_;
  uint32_t group_;
};

}  // namespace ls
