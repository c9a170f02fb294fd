// How many of the CPU tier's layers the CPU computes in a step of a given
// width (tokens in the batch); the rest of them go to the GPU over PCIe.
//
// Why per width: a streamed layer costs its copy whatever the width, while a
// CPU-tier layer's cost grows with it once the CPU's kernels stop being
// memory-bound (at batch 1 the CPU reads a layer at its memory rate; at 32
// tokens the int8 products dominate). So the best split moves towards PCIe
// as the width grows, and a fixed rule ("wide steps stream everything")
// either wastes the CPU at widths where it still pays or stalls the step
// where it no longer does.
//
// The model of a step with k of the n_set CPU-set layers on the CPU, from
// gpu(w) and cpu(w), the per-layer times at the width's bucket, and copy,
// the per-layer copy time, each a running average of what the steps
// measured (the compute actor feeds every step). With the step's layout
// (set_layout: each layer's kind, the device slots, the planner's depth) a
// step is simulated as the pipeline runs it: layers computed in order (the
// chain), each streamed one copied in order into a free device slot no
// earlier than the planner reaches it (at most depth layers ahead of
// compute, and past a step's first CPU-set layer only once the step before
// has ended: its width decides that layer's side) and computed once copied,
// its slot free again when computed; two steps back to back, the second's length
// the answer (the copier works ahead across steps). With few slots a long
// CPU layer holds up the copies behind it, which max(chain, copies) misses:
// on the 70b at 24 GiB (3 slots) that simple model predicted 350 ms for a
// width-32 step that took 540, the simulation 490. Without a layout:
//   chain(k) = (n_layer - k) * gpu(w) + k * cpu(w)
//   copy(k)  = (n_streamed + n_set - k) * copy,   the step max(chain, copy).
// k minimises the prediction (ties: fewer CPU layers). A bucket not
// measured yet takes the nearest narrower bucket's CPU time scaled by the
// width, or the prior at width 1 so scaled, and keeps at least one CPU
// layer until a step there has measured it. The scale is the load's
// measurement of a layer at 8 tokens against one (Options::cpu_ratio_8:
// linear between widths 1 and 8, and in the width past 8, where the
// kernels are compute-bound); without it, linear in the width from 1
// (pessimistic). Why the measurement: linear from 1 put a 70b layer at 8
// tokens at 8x its width-1 time where it took 1.6-2.2x (session 36, H100
// machine: 8.1 and 12.6 ms), so a speculative run's first verify steps,
// and a batch's, kept a few CPU layers and copied the rest. Once a bucket
// is measured, its own measurement rules (a bucket that
// keeps no CPU layer keeps its last measurement, until it is probed: after
// probe_every steps of that bucket with no CPU layer, one step keeps one
// layer on the CPU, and what it measures replaces the stale average). Widths
// over max_width (prompts) put no layer on the CPU.
//
// A bucket's second measurement replaces its first instead of blending
// with it, and until it comes the bucket keeps at least one layer on the
// CPU: the first is often a cold one (the first wide step allocates scratch
// and faults its pages in). Blended at the weight of 0.3, a first step at
// 2.5 times the warm cost kept the split off its best for ~10 steps; one
// that chose no CPU layer kept the width on PCIe until its probe, 32 steps
// on. A speculative run's verify steps are a few dozen steps of one width.
// Why the probe: a cold first measurement that sends every layer through
// PCIe leaves nothing on the CPU to measure, and before the probe such a
// bucket stayed so for the whole run: on the 70b at 24 GiB
// one run of four kept 0 CPU layers at width 8 (20.2 tok/s) where the
// others kept 13-15 (22.9-24.1; bench/results/2026-12-02-h200-gemm-pack.md).
//
// Pure logic, no threads: compute feeds it and publishes cpu_layers() per
// bucket (HybridRoute); the planner routes by it; tests drive it directly.
// defines: WidthSample, WidthRouting
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace ls {

// One step's measurements (seconds), for the routing of its width.
struct WidthSample {
  int64_t width = 1;     // tokens in the step's batch
  int32_t n_cpu = 0;     // layers the CPU computed
  int32_t n_gpu = 0;     // layers the GPU computed (resident and streamed)
  int32_t n_copied = 0;  // layers copied over PCIe
  double cpu_s = 0;      // the CPU tier's time for its layers, their hidden state's return included
  double gpu_s = 0;      // the GPU's compute time (0: not timed)
  double copy_s = 0;     // the copy engine's busy time
};

class WidthRouting {
 public:
  enum class Kind : uint8_t { Resident, Streamed, CpuSet };
  // Whether the i-th of n CPU-set layers (in layer order) stays on the CPU
  // when k of them do: every n/k-th, so those that go through PCIe are
  // spread between the ones that stay (the copy engine has work while the
  // CPU computes). The planner routes by it; the simulation assumes it.
  static bool keeps(int32_t i, int32_t n, int32_t k) {
    if (k >= n) return true;
    if (k <= 0) return false;
    return (int64_t{i} + 1) * k / n > int64_t{i} * k / n;
  }
  // Widths 1, 2, 3-4, 5-8, 9-16, 17-32, 33-64, 65-128, over 128.
  static constexpr int kBuckets = 9;
  static int bucket(int64_t width);
  static int64_t bucket_width(int b);  // the widest width of bucket b (its representative)

  struct Options {
    int64_t max_width = 64;    // wider steps put nothing on the CPU (prompts)
    double weight = 0.3;       // of a new measurement in the running averages
    int32_t probe_every = 32;  // steps of a bucket at 0 CPU layers before one keeps 1 (0: never)
    // A CPU layer's time at 8 tokens over its time at 1, measured at load
    // (HybridRates::cpu_ratio_8; 0: not measured): the shape of the CPU's
    // cost over the widths not stepped yet (see the top). Taken within 1-8.
    double cpu_ratio_8 = 0;
  };
  // n_layer: the model's layers; n_set: the CPU set (the layers in host
  // memory the CPU computes at width 1); n_streamed: the other streamed
  // layers. prior_*: per-layer seconds at width 1 measured at load (0:
  // unknown; then the first steps measure them).
  WidthRouting(int32_t n_layer, int32_t n_set, int32_t n_streamed, double prior_cpu_s,
               double prior_gpu_s, double prior_copy_s, Options opt);
  WidthRouting(int32_t n_layer, int32_t n_set, int32_t n_streamed, double prior_cpu_s,
               double prior_gpu_s, double prior_copy_s)
      : WidthRouting(n_layer, n_set, n_streamed, prior_cpu_s, prior_gpu_s, prior_copy_s,
                     Options{}) {}

  // The CPU set changed (the batch-1 balancer moved layers).
  void set_cpu_set(int32_t n_set, int32_t n_streamed);
  // The step's layout, for the simulation (and the CPU set's size from it).
  void set_layout(std::vector<Kind> kinds, int32_t slots, int32_t depth);
  void observe(const WidthSample& s);
  // Layers of the CPU set the CPU computes in a step of bucket b (0..n_set);
  // 1 where the choice is 0 and the bucket is due a probe (see the top).
  int32_t cpu_layers(int b) const;
  // Predicted seconds of a step of bucket b with k CPU layers (0: unknown).
  double predict_s(int b, int32_t k) const;

  // Which CPU-set layers a step of bucket b keeps on the CPU, by their
  // order in the set. The even spread (keeps) of cpu_layers(b) layers,
  // improved where a layout is set and the bucket measured: a local search
  // on the simulated step moves one kept layer at a time to a neighbour in
  // the set while the step gets shorter, at cpu_layers(b) and one layer
  // fewer and more (the count it ends with is keep's). Why: the spread
  // counts layers of the set, not the streamed ones between them, so with
  // few device slots some CPU layers have more streamed layers behind them
  // than slots, and the copy engine stops while the CPU computes (the 70b at
  // 24 GiB at width 32: every CPU layer after a run of four streamed ones
  // waited ~9 ms for a copy, 4 a step; session 33's trace). The search also
  // moves CPU work away from a step's end. On session 30's plan and times
  // the simulated step is 4-7 % shorter at widths 8-32 (tests).
  struct Placement {
    int32_t k = 0;              // layers kept (keep[i] set)
    std::vector<uint8_t> keep;  // n_set entries
    double predicted_s = 0;     // the simulated step (0: no layout or measurement)
  };
  // With the placement in use (now, for the same layout): a candidate is
  // judged by its simulated step grown by kPlaceGain if it differs from the
  // one in use, and by kMoveGain more for each layer it puts on the other
  // side; the one in use stays unless a candidate so judged is shorter than
  // it under the same measurements. The search starts from it too (brought
  // to each count by the best layers to add or drop) besides the even
  // spread. Why: measurements that drift by a little would otherwise move a
  // layer back and forth between steps (kPlaceGain), and a layer that
  // changes sides moves its key/value rows between the caches: at width 32
  // on the 70b, tens of MB a layer, 10-20 ms on the chain once, and its
  // first run on the CPU slower (kMoveGain: that cost spread over about 16
  // steps of ~300 ms). A count that moved by one re-spread the whole set
  // (session 45: 8-11 layers moved at once, 100-150 ms each time, four
  // times in 64 steps at width 32). Only where the count is the routing's
  // own (not set by the guards of cpu_layers).
  static constexpr double kPlaceGain = 0.01, kMoveGain = 0.003;
  Placement placement(int b, const Placement* now = nullptr) const;
  // Per-layer seconds in use for bucket b (estimated where not measured).
  double cpu_layer_s(int b) const;
  double gpu_layer_s(int b) const;
  double copy_layer_s() const { return copy_s_; }
  bool measured(int b) const { return cpu_[static_cast<size_t>(b)] > 0; }
  // "width <= 8: 16 of 25 CPU layers (cpu 11.4 ms, gpu 0.44 ms a layer; a step predicted
  // 228.0 ms); ...; copy 9.2 ms a layer"
  std::string summary() const;

 private:
  // A CPU layer's time at width w relative to width 1, for the buckets not
  // measured (see the top).
  double cpu_shape(int64_t w) const;
  double simulate(double cpu, double gpu, int32_t k) const;
  double simulate(double cpu, double gpu, const std::vector<uint8_t>& keep) const;
  bool probe_due(int b) const;  // a measured bucket, probe_every steps without a CPU layer

  int32_t n_layer_, n_set_, n_streamed_;
  std::vector<Kind> kinds_;  // empty: no layout, the max(chain, copy) model
  int32_t slots_ = 1, depth_ = 1;
  double prior_cpu_s_, prior_gpu_s_;
  Options opt_;
  std::array<double, kBuckets> cpu_{}, gpu_{};       // measured per-layer seconds (0: none)
  std::array<int32_t, kBuckets> since_cpu_{};        // steps of the bucket since a CPU measurement
  std::array<int32_t, kBuckets> cpu_n_{}, gpu_n_{};  // samples taken (counted up to 2)
  int32_t copy_n_ = 0;
  double copy_s_ = 0;
};

}  // namespace ls
