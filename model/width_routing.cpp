// The CPU tier's share by width: see width_routing.h.
#include "model/width_routing.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <utility>

namespace ls {

int WidthRouting::bucket(int64_t width) {
  int b = 0;
  while (b + 1 < kBuckets && width > bucket_width(b)) ++b;
  return b;
}

int64_t WidthRouting::bucket_width(int b) {
  return b + 1 >= kBuckets ? INT64_MAX : int64_t{1} << b;
}

WidthRouting::WidthRouting(int32_t n_layer, int32_t n_set, int32_t n_streamed, double prior_cpu_s,
                           double prior_gpu_s, double prior_copy_s, Options opt)
    : n_layer_(n_layer),
      n_set_(n_set),
      n_streamed_(n_streamed),
      prior_cpu_s_(prior_cpu_s),
      prior_gpu_s_(prior_gpu_s),
      opt_(opt),
      copy_s_(prior_copy_s) {}

void WidthRouting::set_cpu_set(int32_t n_set, int32_t n_streamed) {
  n_set_ = n_set;
  n_streamed_ = n_streamed;
}

void WidthRouting::set_layout(std::vector<Kind> kinds, int32_t slots, int32_t depth) {
  kinds_ = std::move(kinds);
  slots_ = std::max(1, slots);
  depth_ = std::max(1, depth);
  n_layer_ = static_cast<int32_t>(kinds_.size());
  n_set_ = static_cast<int32_t>(std::count(kinds_.begin(), kinds_.end(), Kind::CpuSet));
  n_streamed_ = static_cast<int32_t>(std::count(kinds_.begin(), kinds_.end(), Kind::Streamed));
}

// Two steps of the pipeline as the planner, copier and compute run them
// (see the header); returns the second step's length.
double WidthRouting::simulate(double cpu, double gpu, int32_t k) const {
  std::vector<uint8_t> keep(static_cast<size_t>(std::max(0, n_set_)));
  for (int32_t i = 0; i < n_set_; ++i) keep[static_cast<size_t>(i)] = keeps(i, n_set_, k) ? 1 : 0;
  return simulate(cpu, gpu, keep);
}

double WidthRouting::simulate(double cpu, double gpu, const std::vector<uint8_t>& keep) const {
  const size_t n = kinds_.size();
  std::vector<double> slot_free(static_cast<size_t>(slots_), 0.0);  // when each slot is free
  std::vector<double> finish(2 * n, 0.0);  // when compute finished each layer of the two steps
  double copier = 0, t = 0, end0 = 0;
  for (size_t s = 0; s < 2; ++s) {
    int32_t i_set = 0;
    double gate = 0;  // the planner routes no layer before this
    for (size_t l = 0; l < n; ++l) {
      const size_t at = s * n + l;
      // The planner is at most depth_ layers ahead of compute, and routes a
      // step's first CPU-set layer (and so every layer after it) only once
      // the step's width is known: when the step before it has ended.
      if (s == 1 && i_set == 0 && kinds_[l] == Kind::CpuSet) gate = end0;
      const double planned =
          std::max(gate, at >= static_cast<size_t>(depth_) ? finish[at - depth_] : 0.0);
      Kind kind = kinds_[l];
      if (kind == Kind::CpuSet)
        kind = keep[static_cast<size_t>(i_set++)] ? Kind::CpuSet : Kind::Streamed;
      if (kind == Kind::Streamed) {
        auto slot = std::min_element(slot_free.begin(), slot_free.end());
        copier = std::max({copier, *slot, planned}) + copy_s_;
        t = std::max(t, copier) + gpu;
        *slot = t;
      } else {
        t = std::max(t, planned) + (kind == Kind::CpuSet ? cpu : gpu);
      }
      finish[at] = t;
    }
    if (s == 0) end0 = t;
  }
  return t - end0;
}

void WidthRouting::observe(const WidthSample& s) {
  const size_t b = static_cast<size_t>(bucket(s.width));
  // A bucket's first sample stands alone until the second, which replaces
  // it (see the header: the first step at a width is often a cold one);
  // from the third on, a running average.
  auto blend = [&](double& avg, int32_t& n, double x) {
    avg = avg > 0 && n >= 2 ? avg + opt_.weight * (x - avg) : x;
    n = std::min(n + 1, 2);
  };
  if (s.n_cpu > 0 && s.cpu_s > 0) {
    // A probe's measurement replaces the stale average it was made to check.
    if (probe_due(static_cast<int>(b))) cpu_[b] = 0;
    blend(cpu_[b], cpu_n_[b], s.cpu_s / s.n_cpu);
    since_cpu_[b] = 0;
  } else if (s.n_cpu == 0 && since_cpu_[b] < INT32_MAX) {
    ++since_cpu_[b];
  }
  if (s.n_gpu > 0 && s.gpu_s > 0) blend(gpu_[b], gpu_n_[b], s.gpu_s / s.n_gpu);
  if (s.n_copied > 0 && s.copy_s > 0) blend(copy_s_, copy_n_, s.copy_s / s.n_copied);
}

double WidthRouting::cpu_shape(int64_t w) const {
  w = std::clamp<int64_t>(w, 1, 1 << 20);
  if (!(opt_.cpu_ratio_8 > 0)) return static_cast<double>(w);
  const double r8 = std::clamp(opt_.cpu_ratio_8, 1.0, 8.0);
  if (w <= 8) return 1.0 + (r8 - 1.0) * static_cast<double>(w - 1) / 7.0;
  return r8 * static_cast<double>(w) / 8.0;
}

double WidthRouting::cpu_layer_s(int b) const {
  if (cpu_[static_cast<size_t>(b)] > 0) return cpu_[static_cast<size_t>(b)];
  const double shape = cpu_shape(bucket_width(b));
  for (int n = b - 1; n >= 0; --n)  // the nearest narrower bucket measured, scaled
    if (cpu_[static_cast<size_t>(n)] > 0)
      return cpu_[static_cast<size_t>(n)] * shape / cpu_shape(bucket_width(n));
  return prior_cpu_s_ * shape;
}

double WidthRouting::gpu_layer_s(int b) const {
  if (gpu_[static_cast<size_t>(b)] > 0) return gpu_[static_cast<size_t>(b)];
  for (int n = b - 1; n >= 0; --n)  // the GPU's layer hardly grows with the width: as measured
    if (gpu_[static_cast<size_t>(n)] > 0) return gpu_[static_cast<size_t>(n)];
  return prior_gpu_s_;
}

double WidthRouting::predict_s(int b, int32_t k) const {
  const double cpu = cpu_layer_s(b), gpu = gpu_layer_s(b);
  if (cpu <= 0 && copy_s_ <= 0) return 0;
  if (!kinds_.empty()) return simulate(cpu, gpu, k);
  const double chain = (n_layer_ - k) * gpu + k * cpu;
  const double copy = (n_streamed_ + n_set_ - k) * copy_s_;
  return std::max(chain, copy);
}

int32_t WidthRouting::cpu_layers(int b) const {
  if (n_set_ <= 0) return 0;
  if (b > bucket(opt_.max_width)) return 0;
  if (b == 0) return n_set_;  // width 1: the balancer's plan (model/hybrid_balance.h)
  if (cpu_layer_s(b) <= 0 || copy_s_ <= 0) return n_set_;  // nothing to weigh yet
  int32_t best = 0;
  double best_s = predict_s(b, 0);
  for (int32_t k = 1; k <= n_set_; ++k) {
    const double t = predict_s(b, k);
    if (t < best_s) best = k, best_s = t;  // ties: fewer CPU layers (the cheaper guess)
  }
  // A width not measured yet keeps one layer on the CPU until a step there
  // has measured it: a guess of none would never be corrected (on the 70b,
  // width 8 guessed from width 1 sent everything through PCIe at 20 tok/s,
  // where keeping 15 measured gives 24). Measured once, it keeps one until
  // the second measurement, which replaces the first (often a cold one):
  // otherwise a cold first step sent a width to PCIe until its probe, 32
  // steps on, the whole of a short speculative run.
  if (!measured(b) || cpu_n_[static_cast<size_t>(b)] < 2 || probe_due(b)) return std::max(best, 1);
  return best;
}

WidthRouting::Placement WidthRouting::placement(int b, const Placement* now) const {
  Placement p;
  p.k = cpu_layers(b);
  const int32_t n = std::max(0, n_set_);
  auto spread = [&](int32_t k) {
    std::vector<uint8_t> keep(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) keep[static_cast<size_t>(i)] = keeps(i, n, k) ? 1 : 0;
    return keep;
  };
  p.keep = spread(p.k);
  const double cpu = cpu_layer_s(b), gpu = gpu_layer_s(b);
  if (kinds_.empty() || !measured(b) || cpu <= 0 || copy_s_ <= 0 || n == 0) return p;
  p.predicted_s = simulate(cpu, gpu, p.keep);
  // A count the guards of cpu_layers set (a bucket not yet measured twice,
  // or due a probe) stands; otherwise one fewer and one more are searched too.
  const bool settled = cpu_n_[static_cast<size_t>(b)] >= 2 && !probe_due(b);
  // The placement in use weighs in (see the header) where the count is the
  // routing's own: a candidate that differs from it pays kPlaceGain of its
  // step and kMoveGain more for each layer it moves to the other side, and
  // the search also starts from the one in use.
  const bool weigh =
      settled && now && now->predicted_s > 0 && now->keep.size() == static_cast<size_t>(n);
  auto moved = [&](const std::vector<uint8_t>& keep) {
    int32_t m = 0;
    for (int32_t i = 0; i < n; ++i)
      m += keep[static_cast<size_t>(i)] != now->keep[static_cast<size_t>(i)];
    return m;
  };
  // What a candidate is judged by: its simulated step, with its moves.
  auto cost = [&](const std::vector<uint8_t>& keep, double t) {
    if (!weigh) return t;
    const int32_t m = moved(keep);
    return t * (1 + (m > 0 ? kPlaceGain : 0) + kMoveGain * m);
  };
  // Moves of one kept layer to a free neighbour in the set, first
  // improvement taken, in passes over the set until one improves nothing
  // (bounded: a few passes settle it).
  auto search = [&](std::vector<uint8_t>& keep) {
    double best = simulate(cpu, gpu, keep), best_c = cost(keep, best);
    for (int pass = 0; pass < 8; ++pass) {
      bool better = false;
      for (int32_t i = 0; i < n; ++i) {
        if (!keep[static_cast<size_t>(i)]) continue;
        for (int32_t j : {i - 1, i + 1}) {
          if (j < 0 || j >= n || keep[static_cast<size_t>(j)]) continue;
          keep[static_cast<size_t>(i)] = 0;
          keep[static_cast<size_t>(j)] = 1;
          const double t = simulate(cpu, gpu, keep), c = cost(keep, t);
          if (c < best_c * (1 - 1e-9)) {
            best = t;
            best_c = c;
            better = true;
            break;
          }
          keep[static_cast<size_t>(j)] = 0;
          keep[static_cast<size_t>(i)] = 1;
        }
      }
      if (!better) break;
    }
    return best;
  };
  // The one in use brought to k layers: the layer whose addition (or
  // removal) simulates shortest, one at a time.
  auto from_now = [&](int32_t k) {
    std::vector<uint8_t> keep = now->keep;
    int32_t have = 0;
    for (uint8_t f : keep) have += f;
    while (have != k) {
      const uint8_t want = have < k ? 0 : 1;  // the entries that may flip
      int32_t pick = -1;
      double pick_t = 0;
      for (int32_t i = 0; i < n; ++i) {
        if (keep[static_cast<size_t>(i)] != want) continue;
        keep[static_cast<size_t>(i)] ^= 1;
        const double t = simulate(cpu, gpu, keep);
        keep[static_cast<size_t>(i)] ^= 1;
        if (pick < 0 || t < pick_t) pick = i, pick_t = t;
      }
      if (pick < 0) break;
      keep[static_cast<size_t>(pick)] ^= 1;
      have += have < k ? 1 : -1;
    }
    return keep;
  };
  double best_c = cost(p.keep, p.predicted_s);
  auto consider = [&](int32_t k, std::vector<uint8_t> keep, double t) {
    const double c = cost(keep, t);
    if (c < best_c * (1 - 1e-9)) {
      p = {k, std::move(keep), t};
      best_c = c;
    }
  };
  if (weigh) {  // the one in use, timed as things are now: what a change must beat
    const double t = simulate(cpu, gpu, now->keep);
    p = {now->k, now->keep, t};
    best_c = t;
  }
  const int32_t k_mid = cpu_layers(b);
  const int32_t k0 = settled ? std::max(0, k_mid - 1) : k_mid;
  const int32_t k1 = settled ? std::min(n, k_mid + 1) : k_mid;
  for (int32_t k = k0; k <= k1; ++k) {
    if (k == 0 || k == n) {  // nothing to place
      const std::vector<uint8_t> keep = spread(k);
      consider(k, keep, simulate(cpu, gpu, keep));
      continue;
    }
    std::vector<uint8_t> keep = spread(k);
    const double t = search(keep);
    consider(k, std::move(keep), t);
    if (weigh) {
      std::vector<uint8_t> near = from_now(k);
      const double tn = search(near);
      consider(k, std::move(near), tn);
    }
  }
  return p;
}

bool WidthRouting::probe_due(int b) const {
  return opt_.probe_every > 0 && measured(b) &&
         since_cpu_[static_cast<size_t>(b)] >= opt_.probe_every;
}

std::string WidthRouting::summary() const {
  std::string out;
  char buf[200];
  for (int b = 0; b < kBuckets; ++b) {
    if (!measured(b)) continue;
    // The step the model predicts for that split: beside the measured step
    // time (width / tok/s) it says how far the model is from the run.
    const Placement p = placement(b);
    const double at = p.predicted_s > 0 ? p.predicted_s : predict_s(b, p.k);
    std::snprintf(buf, sizeof buf,
                  "%swidth <= %lld: %d of %d CPU layers (cpu %.1f ms, gpu %.2f ms a layer; a step "
                  "predicted %.1f ms)",
                  out.empty() ? "" : "; ", static_cast<long long>(bucket_width(b)), p.k, n_set_,
                  cpu_layer_s(b) * 1e3, gpu_layer_s(b) * 1e3, at * 1e3);
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "%scopy %.1f ms a layer", out.empty() ? "" : "; ", copy_s_ * 1e3);
  return out + buf;
}

}  // namespace ls
