// The planner: emits the endless cyclic sequence of layer jobs (step s,
// layers 0..L-1, step s+1, ...) and routes each by its tier: resident layers
// straight to compute, streamed ones (RAM and storage) to the reader, which
// reads the storage ones and passes all of them to the copier in order. It never runs more than
// `depth` layers ahead of compute: each job holds a depth credit that compute returns when the
// layer is done. Weights do not depend on the token, so the next step's first layers are read and
// copied while the current step finishes (prefetch across tokens).
// CPU-tier layers of a wide step (a prompt, StepWidths) go the streamed way
// instead, when the plan has device slots to take them: prefill is one
// batch per layer, which the GPU serves at the cost of a copy while the
// CPU's cost grows with every token.
// A hybrid plan re-planned online (HybridRoute) routes each host-memory
// layer (the plan's CPU and RAM tiers) by the route as it is planned.
// defines: Planner
#pragma once

#include "actors/messages.h"
#include "model/tier_plan.h"
#include "runtime/credit_pool.h"
#include "runtime/trace.h"

namespace ls {

class Planner {
 public:
  // widths: null, or the steps' widths (then CPU-tier layers of a wide step are streamed).
  // route: null, or which host-memory layers the CPU computes now.
  Planner(const TierPlan& plan, CreditPool& depth, Mailbox<LayerJob>& to_reader,
          Mailbox<LayerJob>& to_compute, const StepWidths* widths, const HybridRoute* route,
          RunControl& rc, Tracer& tracer);
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
};

}  // namespace ls
