// Online re-planning of a hybrid plan: which of the layers that live in host
// memory the CPU computes in place and which go to the GPU over PCIe, chosen
// again between decode steps from what the last steps measured.
//
// Why online: the balance moves while a run goes on. Attention's cost grows
// with the context on both sides, the CPU's clock and its neighbours change
// the CPU tier's rate, and the calibration at load (two layers, 13 reps each,
// a fraction of a second) is a starting point, not a measurement to trust
// for the whole run.
//
// The model, at batch 1: a token goes through the layers in order, so the
// GPU's layers and the CPU's run one after the other (the chain), while the
// copy engine brings the streamed layers in parallel. A step takes about
// max(copy, chain). From one step the pipeline measures
//   T      its wall time,
//   cpu    the CPU tier's own time for its layers,
//   gpu    the GPU's compute time (gpu-compute, from CUDA events),
//   copy   the copy engine's busy time (gpu-copy, from CUDA events).
// When the copy engine is the busier (copy > cpu + gpu) the step is
// copy-bound, else chain-bound; its slack, T - max(copy, cpu + gpu), stays
// whichever side bounds it. Moving d layers from PCIe to the CPU changes
//   copy'  = copy  - d * copy_per_layer
//   chain' = chain + d * (cpu_per_layer - gpu_per_layer)
// and the balancer picks the d that minimises max(copy', chain') + slack, taking
// three quarters of the way at a time (a noisy estimate must not swing the plan;
// the first move, which corrects the calibration at load, all the way) and
// only when the predicted gain passes a threshold: 3 %, or twice the
// standard error of the steps' mean time, whichever is more (the error from
// the window's four steps, or from the spread of all the steps seen at the
// count, up to 8, if that is larger); a move of one layer must also be
// proposed twice in a row; a move back the other way soon after a move needs
// twice the gain (hysteresis: no oscillation).
//
// What a plan measured is remembered: the mean step time of each CPU layer
// count tried in the last `memory` steps. The linear model is optimistic
// where the two paths share the host's DRAM (at a 4096-token context on the
// H200 machine it predicted 9 % from moving 2-3 layers either way, and the
// plan swung between 23 and 26 CPU layers every few steps, each no faster
// than the other): a move to a count already measured no faster than the
// current one, beyond the noise of the two means, is not made.
//
// Moving costs: a layer that changes sides takes its cached key/value rows
// along (read from one cache, written to the other) in the next step, which
// grows with the context. The step that moved rows tells what that took
// beyond the new plan's predicted step time, per layer and cached position;
// a later move must pay that back within `payback_steps` steps of its
// predicted gain (at a long context, a move for a gain of a few per cent
// can cost more than it saves in a whole reply).
//
// Which layers move: the CPU layers stay spread between the streamed ones
// (so the copier has a slot to fill while the CPU computes): a layer goes to
// the CPU where it makes the shortest run of CPU layers, farthest from the
// CPU layers already there and then from the runs already made, and one
// comes back from the longest run, where they are closest together. Once
// they alternate with the streamed ones, every further layer makes a run of
// three: before session 20 the ties went to the lowest layer, and the 70b at
// 24 GiB went from 23 to 29 CPU layers as one run of 13 (layers 35-47), ~80
// ms of CPU in which the copier, with 3 device slots, waited 51 ms
// (bench/results/2026-12-03-h200-s20.md).
//
// Pure logic, no threads: the compute actor feeds it one sample per step and
// applies the moves it returns (actors/compute.cpp); tests drive it directly.
// defines: BalanceSample, BalanceMove, HybridBalancer
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/layer_map.h"
#include "model/tier_plan.h"

namespace ls {

// What one decode step measured (seconds).
struct BalanceSample {
  int64_t step = -1;
  double wall_s = 0;     // T
  double cpu_s = 0;      // the CPU tier's time for its layers, their hidden state's return included
  double gpu_s = 0;      // the GPU's compute time (0: not timed, e.g. a host link)
  double copy_s = 0;     // the copy engine's busy time
  int32_t n_cpu = 0;     // layers that ran on the CPU in this step
  int32_t n_copied = 0;  // layers that were copied in this step
  int64_t n_pos = 0;     // positions cached before the step (the context)
};

// One decision: these layers change sides.
struct BalanceMove {
  int64_t step = -1;  // the step whose measurements led to it
  std::vector<int32_t> to_cpu, to_pcie;
  int32_t n_cpu_after = 0;  // CPU layers once applied
  double predicted_before_s = 0, predicted_after_s = 0;
  std::string reason;  // one line: which side bounds the step, and the figures
};

class HybridBalancer {
 public:
  struct Options {
    double min_gain = 0.03;       // a move must promise this much less time per step
    // Clean steps averaged before a move of several layers. Two moved a
    // plan the calibration had right (26 CPU layers at a 4096-token
    // context) to 23 on two slow steps, 10 % slower to the end of the run
    // (bench/results/raw-2026-12-04-s27/call6).
    int32_t samples = 4;
    int32_t samples_one = 4;      // ... and before a move of one layer (a smaller gain)
    int32_t reverse_window = 32;  // steps after a move in which reversing needs 2x the gain
    // Tests: every Nth clean step moves one layer across, alternating
    // directions, whatever the measurements say (the pipeline's tests check
    // that outputs stay bit-identical while layers change sides); 0: never.
    int32_t explore_every = 0;
    int64_t memory = 256;  // steps a count's measured step time is trusted for
    // A move must gain back what moving rows is measured to cost within this
    // many steps (0: moving is free).
    int32_t payback_steps = 32;
  };
  // movable: the layers in host memory (the plan's CPU and RAM tiers), in
  // layer order; on_cpu: which of them start on the CPU (the plan's CPU tier).
  // prior: the rates measured at load (0 where unknown), used for a side
  // that has no layer yet to measure.
  HybridBalancer(const LayerMap& map, const TierPlan& plan, const HybridRates& prior, Options opt);
  HybridBalancer(const LayerMap& map, const TierPlan& plan, const HybridRates& prior)
      : HybridBalancer(map, plan, prior, Options{}) {}

  // Layers in host memory, and whether each is on the CPU now (by layer index).
  const std::vector<int32_t>& movable() const { return movable_; }
  bool on_cpu(int32_t layer) const { return on_cpu_[static_cast<size_t>(layer)] != 0; }
  int32_t n_cpu() const { return n_cpu_; }

  // A clean decode step's measurements (no key/value rows moved, batch 1).
  // Returns a move when one is due; it is applied already (on_cpu() says
  // the new sides), the caller routes the next jobs accordingly.
  std::optional<BalanceMove> observe(const BalanceSample& s);
  // A step that is not a clean decode step: the samples so far are stale,
  // and so is what was seen of the count as it stands.
  void skip() {
    window_.clear();
    seen_[static_cast<size_t>(n_cpu_)] = Seen{};
  }
  // A decode step that also moved the rows of `layers` layers between the
  // caches (the step after a move): what moving costs. Stale samples too.
  void moved_rows(const BalanceSample& s, int32_t layers);
  // Seconds moving one layer's rows costs per cached position (0: not measured).
  double move_cost_per_position_s() const { return move_cost_s_; }

  const std::vector<BalanceMove>& moves() const { return moves_; }
  // Why the last decision made no move: balanced, or what held a better
  // count back ("" after a move, or before any decision).
  const std::string& held() const { return held_; }
  // "re-planned: 28 CPU layers at load, 26 now, 3 moves", one line per move,
  // and why the last decision made none.
  std::string summary() const;

 private:
  std::nullopt_t hold(int64_t step, const std::string& why);  // held_ = why; nullopt
  int32_t pick_to_cpu() const;
  int32_t pick_to_pcie() const;
  std::pair<int32_t, int32_t> gaps(int32_t layer) const;  // to the CPU layers, nearest first
  // The run of consecutive CPU layers (in host-memory order, circular) that
  // holds `layer` counted as on the CPU; and the distance from `layer` to the
  // nearest CPU layer in a run of two or more (n_layer when there is none).
  int32_t run_through(int32_t layer) const;
  int32_t cluster_distance(int32_t layer) const;

  const LayerMap& map_;
  HybridRates prior_;
  Options opt_;
  std::vector<int32_t> movable_;
  std::vector<uint8_t> on_cpu_;  // by layer
  std::vector<int32_t> index_;   // by layer: its place among the movable layers (-1: none)
  int32_t n_cpu_ = 0, n_cpu_start_ = 0;
  int32_t n_layer_ = 0;
  std::vector<BalanceSample> window_;
  int64_t last_move_step_ = -1;
  int64_t clean_steps_ = 0;
  int32_t pending_ = 0;  // a one-layer move proposed once, waiting for a second proposal
  int last_dir_ = 0;
  double cpu_per_layer_s_ = 0, copy_per_layer_s_ = 0;  // last measured (0: none yet)
  double predicted_s_ = 0;                             // the step time the last move predicted
  double move_cost_s_ = 0;  // per layer and cached position (0: not measured)
  std::vector<BalanceMove> moves_;
  std::string held_;
  struct Seen {  // clean steps measured at one CPU layer count
    double mean_s = 0;
    double var_s2 = 0;  // the spread of its steps' times (seconds squared)
    int32_t n = 0;
    int64_t last_step = -1;
  };
  std::vector<Seen> seen_;  // by CPU layer count
};

}  // namespace ls
