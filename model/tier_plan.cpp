#include "model/tier_plan.h"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "runtime/units.h"

namespace ls {

const char* tier_name(Tier t) {
  switch (t) {
    case Tier::Resident:
      return "resident";
    case Tier::Ram:
      return "ram";
    case Tier::Storage:
      return "storage";
    case Tier::Cpu:
      return "cpu";
  }
  return "?";
}

uint64_t staged_bytes(const LayerExtent& e, uint32_t a) {
  uint64_t total = 0;
  for (const ByteRange& r : e.ranges) {
    const uint64_t start = r.offset / a * a;
    const uint64_t end = (r.offset + r.bytes + a - 1) / a * a;
    total += end - start;
  }
  return total;
}

Expected<TierPlan> plan_tiers(const LayerMap& map, const PlanInputs& in) {
  TierPlan p;
  const size_t n = map.layers.size();
  p.layer_tier.assign(n, Tier::Storage);
  p.vram_budget = in.vram_budget;
  p.ram_budget = in.ram_budget;
  uint64_t max_layer = 0, max_staged = 0;
  for (const LayerExtent& e : map.layers) {
    max_layer = std::max(max_layer, e.range_bytes);
    max_staged = std::max(max_staged, staged_bytes(e, in.read_alignment));
  }
  if (in.device_slots < 1 || in.staging_buffers < 1)
    return make_error("the plan needs at least one device slot and one staging buffer");

  auto fits = [](uint64_t used, uint64_t add, uint64_t budget) {
    return budget == UINT64_MAX || (used <= budget && add <= budget - used);
  };
  // Device memory: fixed reserves first.
  for (const auto& l : in.device_reserves) {
    if (!fits(p.vram_used, l.bytes, in.vram_budget))
      return make_error(
          "the device budget %s cannot hold the %s (%s; %s already reserved): %s short",
          human_bytes(in.vram_budget).c_str(), l.what.c_str(), human_bytes(l.bytes).c_str(),
          human_bytes(p.vram_used).c_str(),
          human_bytes(p.vram_used + l.bytes - in.vram_budget).c_str());
    p.vram.push_back(l);
    p.vram_used += l.bytes;
  }
  // Does everything fit without slots?
  uint64_t all_layers = 0;
  for (const LayerExtent& e : map.layers) all_layers += e.range_bytes;
  if (fits(p.vram_used, all_layers, in.vram_budget) &&
      fits(p.vram_used + all_layers, in.token_embd_bytes, in.vram_budget)) {
    if (in.token_embd_bytes) {
      p.vram.push_back({"token_embd", in.token_embd_bytes});
      p.vram_used += in.token_embd_bytes;
    }
    for (size_t l = 0; l < n; ++l) p.layer_tier[l] = Tier::Resident;
    p.n_resident = static_cast<int32_t>(n);
    p.vram.push_back({std::to_string(n) + " resident layers", all_layers});
    p.vram_used += all_layers;
    return p;
  }
  // Streaming: device slots for the streamed layers; token_embd stays in
  // host memory (the mapped file), which leaves its bytes to layers.
  p.token_embd_on_device = in.token_embd_bytes == 0;
  if (in.token_embd_bytes)
    p.ram.push_back(
        {"token_embd: in the mapped file, not in the budget (the batch's rows are gathered per "
         "step)",
         in.token_embd_bytes});
  p.device_slots = in.device_slots;
  p.slot_bytes = max_layer;
  const uint64_t slots = p.slot_bytes * static_cast<uint64_t>(in.device_slots);
  if (!fits(p.vram_used, slots, in.vram_budget))
    return make_error(
        "the device budget %s cannot hold %d device slots of %s each (the largest "
        "layer) after %s of reserves: %s short; raise --vram-budget or lower "
        "--device-slots (at least 1)",
        human_bytes(in.vram_budget).c_str(), in.device_slots, human_bytes(p.slot_bytes).c_str(),
        human_bytes(p.vram_used).c_str(),
        human_bytes(p.vram_used + slots - in.vram_budget).c_str());
  p.vram.push_back({std::to_string(in.device_slots) + " device slots", slots});
  p.vram_used += slots;
  uint64_t resident = 0;
  for (size_t l = 0; l < n; ++l) {
    const uint64_t b = map.layers[l].range_bytes;
    if (!fits(p.vram_used, b, in.vram_budget)) break;
    p.layer_tier[l] = Tier::Resident;
    p.vram_used += b;
    resident += b;
    ++p.n_resident;
  }
  if (p.n_resident) p.vram.push_back({std::to_string(p.n_resident) + " resident layers", resident});

  // Host memory: the RAM-tier layers take the budget; staging buffers (when
  // anything is left for storage) come on top of it, printed, so that
  // --ram-budget 0 means "every streamed layer from storage".
  uint64_t rest = 0;
  for (size_t l = p.n_resident; l < n; ++l) rest += map.layers[l].range_bytes;
  if (!fits(0, rest, in.ram_budget)) {
    p.staging_buffers = in.staging_buffers;
    p.staging_bytes = max_staged;
    const uint64_t staging = p.staging_bytes * static_cast<uint64_t>(in.staging_buffers);
    p.ram.push_back({std::to_string(in.staging_buffers) +
                         " staging buffers (pinned, for storage reads; not in the budget)",
                     staging});
  }
  // CPU-tier layers first (they must live in host memory), spread evenly
  // over the non-resident ones.
  const int32_t n_rest = static_cast<int32_t>(n) - p.n_resident;
  if (in.cpu_layers < 0 || in.cpu_layers > n_rest)
    return make_error("--cpu-layers %d: %d layers are not resident, so 0..%d", in.cpu_layers,
                      n_rest, n_rest);
  uint64_t cpu_bytes = 0;
  for (int32_t i = 0; i < in.cpu_layers; ++i) {
    const size_t l =
        static_cast<size_t>(p.n_resident) +
        static_cast<size_t>((2 * i + 1) * static_cast<int64_t>(n_rest) / (2 * in.cpu_layers));
    const uint64_t b = map.layers[l].range_bytes;
    if (!fits(p.ram_used, b, in.ram_budget))
      return make_error("the host budget %s cannot hold %d CPU-tier layers: %s short",
                        human_bytes(in.ram_budget).c_str(), in.cpu_layers,
                        human_bytes(p.ram_used + b - in.ram_budget).c_str());
    p.layer_tier[l] = Tier::Cpu;
    p.ram_used += b;
    cpu_bytes += b;
    ++p.n_cpu;
  }
  if (p.n_cpu)
    p.ram.push_back({std::to_string(p.n_cpu) + " CPU-tier layers (computed in place)", cpu_bytes});
  uint64_t ram_layers = 0;
  for (size_t l = p.n_resident; l < n; ++l) {
    if (p.layer_tier[l] != Tier::Storage) continue;
    const uint64_t b = map.layers[l].range_bytes;
    if (!fits(p.ram_used, b, in.ram_budget)) break;
    p.layer_tier[l] = Tier::Ram;
    p.ram_used += b;
    ram_layers += b;
    ++p.n_ram;
  }
  if (p.n_ram) p.ram.push_back({std::to_string(p.n_ram) + " RAM layers", ram_layers});
  for (size_t l = 0; l < n; ++l) {
    if (p.layer_tier[l] == Tier::Storage) {
      ++p.n_storage;
      p.storage_bytes_per_step += map.layers[l].range_bytes;
    }
    if (p.layer_tier[l] == Tier::Cpu) p.cpu_bytes_per_step += map.layers[l].range_bytes;
    if (p.layer_tier[l] == Tier::Ram || p.layer_tier[l] == Tier::Storage)
      p.streamed_bytes_per_step += map.layers[l].range_bytes;
  }
  return p;
}

HybridStep predict_hybrid_step(const LayerMap& map, const TierPlan& plan, const HybridRates& r) {
  HybridStep h;
  for (size_t l = 0; l < plan.layer_tier.size(); ++l) {
    const double b = static_cast<double>(map.layers[l].range_bytes);
    switch (plan.layer_tier[l]) {
      case Tier::Cpu:
        if (r.cpu_bytes_per_s > 0) h.cpu_s += b / r.cpu_bytes_per_s;
        break;
      case Tier::Ram:
      case Tier::Storage:
        if (r.copy_bytes_per_s > 0) h.copy_s += b / r.copy_bytes_per_s;
        [[fallthrough]];
      case Tier::Resident:
        if (r.gpu_bytes_per_s > 0) h.gpu_s += b / r.gpu_bytes_per_s;
        break;
    }
  }
  h.gpu_s += r.gpu_step_s;
  return h;
}

int32_t balance_cpu_layers(const LayerMap& map, const TierPlan& draft, const HybridRates& r) {
  if (r.cpu_bytes_per_s <= 0 || r.copy_bytes_per_s <= 0 || draft.n_storage > 0) return 0;
  uint64_t streamed = 0, resident = 0;
  int32_t n_rest = 0;
  for (size_t l = 0; l < draft.layer_tier.size(); ++l) {
    if (draft.layer_tier[l] != Tier::Resident) {
      streamed += map.layers[l].range_bytes;
      ++n_rest;
    } else {
      resident += map.layers[l].range_bytes;
    }
  }
  if (n_rest == 0) return 0;
  const double per_layer = static_cast<double>(streamed) / n_rest;
  const double gpu = r.gpu_bytes_per_s > 0 ? 1.0 / r.gpu_bytes_per_s : 0.0;
  auto step = [&](int32_t n) {
    HybridStep h;
    h.copy_s = (n_rest - n) * per_layer / r.copy_bytes_per_s;
    h.cpu_s = n * per_layer / r.cpu_bytes_per_s;
    h.gpu_s = (resident + (n_rest - n) * per_layer) * gpu + r.gpu_step_s;
    return h.step_s();
  };
  int32_t best = 0;
  double best_s = step(0);
  for (int32_t n = 1; n <= n_rest; ++n) {
    const double s = step(n);
    if (s < best_s) {
      best_s = s;
      best = n;
    }
  }
  return best;
}

TierPlan plan_forced(const LayerMap& map, const std::vector<Tier>& tiers, int32_t device_slots,
                     int32_t staging_buffers, uint32_t read_alignment) {
  TierPlan p;
  p.layer_tier = tiers;
  p.vram_budget = p.ram_budget = UINT64_MAX;
  for (size_t l = 0; l < tiers.size(); ++l) {
    const LayerExtent& e = map.layers[l];
    switch (tiers[l]) {
      case Tier::Resident:
        ++p.n_resident;
        p.vram_used += e.range_bytes;
        break;
      case Tier::Ram:
        ++p.n_ram;
        p.ram_used += e.range_bytes;
        break;
      case Tier::Storage:
        ++p.n_storage;
        p.storage_bytes_per_step += e.range_bytes;
        break;
      case Tier::Cpu:
        ++p.n_cpu;
        p.ram_used += e.range_bytes;
        p.cpu_bytes_per_step += e.range_bytes;
        break;
    }
    if (tiers[l] == Tier::Ram || tiers[l] == Tier::Storage) {
      p.streamed_bytes_per_step += e.range_bytes;
      p.slot_bytes = std::max(p.slot_bytes, e.range_bytes);
    }
    if (tiers[l] == Tier::Storage)
      p.staging_bytes = std::max(p.staging_bytes, staged_bytes(e, read_alignment));
  }
  // Slots also take the CPU-tier layers of a wide step (actors/planner.h).
  if (p.slot_bytes)
    for (size_t l = 0; l < tiers.size(); ++l)
      if (tiers[l] == Tier::Cpu) p.slot_bytes = std::max(p.slot_bytes, map.layers[l].range_bytes);
  p.device_slots = p.slot_bytes ? device_slots : 0;
  p.staging_buffers = p.staging_bytes ? staging_buffers : 0;
  p.vram.push_back({"forced tiers (--tiers)", p.vram_used});
  return p;
}

uint32_t widen_step_tokens(TierPlan& plan, uint32_t tokens, uint32_t most,
                           const ActivationsLine& act_line) {
  constexpr uint32_t kUnit = 64;
  if (plan.n_ram + plan.n_storage + plan.n_cpu == 0 || plan.vram_used >= plan.vram_budget ||
      most < tokens + kUnit)
    return tokens;
  auto now = act_line(tokens);
  if (!now) return tokens;
  size_t at = plan.vram.size();
  for (size_t i = 0; i < plan.vram.size(); ++i)
    if (plan.vram[i].what == now->what && plan.vram[i].bytes == now->bytes) at = i;
  if (at == plan.vram.size()) return tokens;  // the plan's line is not this one
  const uint64_t left = plan.vram_budget - plan.vram_used;
  auto fits = [&](uint32_t n) -> std::optional<PlanLine> {
    auto l = act_line(n);
    if (!l || l->bytes < now->bytes || l->bytes - now->bytes > left) return std::nullopt;
    return *l;
  };
  // Bytes grow with the tokens (nearly linearly: logits rows are capped), so
  // a bisection over whole units finds the widest that fits.
  uint32_t lo = 0, hi = (most - tokens) / kUnit;
  std::optional<PlanLine> best;
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo + 1) / 2;
    if (auto l = fits(tokens + mid * kUnit)) {
      lo = mid;
      best = l;
    } else {
      hi = mid - 1;
    }
  }
  if (lo == 0 || !best) return tokens;
  plan.vram_used += best->bytes - now->bytes;
  plan.vram[at] = *best;
  return tokens + lo * kUnit;
}

std::string TierPlan::to_text() const {
  std::string s;
  auto budget = [](uint64_t b) {
    return b == UINT64_MAX ? std::string("unlimited") : human_bytes(b);
  };
  s += "tier plan: " + std::to_string(n_resident) + " resident, " + std::to_string(n_cpu) +
       " CPU, " + std::to_string(n_ram) + " RAM, " + std::to_string(n_storage) +
       " storage layers\n";
  s += "  device memory (budget " + budget(vram_budget) + ", used " + human_bytes(vram_used) +
       "):\n";
  for (const Line& l : vram) s += "    " + human_bytes(l.bytes) + "\t" + l.what + "\n";
  s += "  host memory (budget " + budget(ram_budget) + ", used " + human_bytes(ram_used) + "):\n";
  for (const Line& l : ram) s += "    " + human_bytes(l.bytes) + "\t" + l.what + "\n";
  s += "  per step: " + human_bytes(streamed_bytes_per_step) + " copied, " +
       human_bytes(storage_bytes_per_step) + " read from storage, " +
       human_bytes(cpu_bytes_per_step) + " read by the CPU\n";
  if (predicted_copy_s > 0 || predicted_cpu_s > 0) {
    char b[240];
    const double chain = predicted_cpu_s + predicted_gpu_s;
    const double step = std::max(predicted_copy_s, chain);
    std::snprintf(b, sizeof b,
                  "  predicted per decode step: copy %.3f s; compute chain %.3f s (CPU %.3f s, "
                  "GPU %.3f s): bound %.2f tok/s\n",
                  predicted_copy_s, chain, predicted_cpu_s, predicted_gpu_s,
                  step > 0 ? 1.0 / step : 0.0);
    s += b;
  }
  if (!hybrid_reason.empty()) s += "  CPU tier: " + hybrid_reason + "\n";
  s += "  layers: ";
  for (size_t l = 0; l < layer_tier.size(); ++l)
    s += layer_tier[l] == Tier::Resident ? 'A'
         : layer_tier[l] == Tier::Ram    ? 'B'
         : layer_tier[l] == Tier::Cpu    ? 'H'
                                         : 'C';
  s += "  (A resident, H computed on the host CPU, B RAM, C storage)\n";
  return s;
}

}  // namespace ls
