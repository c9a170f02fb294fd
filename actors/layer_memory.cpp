#include "actors/layer_memory.h"

#include <atomic>
#include <cstdlib>
#include <thread>
#include <cstring>

#include "runtime/thread_pool.h"
#include "runtime/units.h"

namespace ls {

LayerLayout layer_layout(const LayerExtent& e, uint32_t a) {
  LayerLayout l;
  for (const ByteRange& r : e.ranges) {
    l.packed.push_back(l.packed_bytes);
    l.packed_bytes += r.bytes;
    const uint64_t start = r.offset / a * a;
    const uint64_t end = (r.offset + r.bytes + a - 1) / a * a;
    l.staged.push_back(l.staged_bytes);
    l.lead.push_back(r.offset - start);
    l.staged_bytes += end - start;
  }
  return l;
}

LayerView packed_layer_view(const LayerWeights& w, const LayerExtent& e, const LayerLayout& l,
                            const uint8_t* base) {
  // A tensor lies in exactly one range: its bytes sit at the range's packed
  // offset plus its distance from the range's start.
  auto at = [&](const GgufTensor* t) -> const uint8_t* {
    for (size_t k = 0; k < e.ranges.size(); ++k) {
      const ByteRange& r = e.ranges[k];
      if (t->offset >= r.offset && t->offset + t->bytes <= r.offset + r.bytes)
        return base + l.packed[k] + (t->offset - r.offset);
    }
    return nullptr;  // not in this layer: a programmer error caught by the view check below
  };
  auto weight = [&](const GgufTensor* t) {
    WeightView v;
    v.type = t->type;
    v.data = at(t);
    v.n_in = static_cast<int64_t>(t->shape[0]);
    v.n_out = static_cast<int64_t>(t->rows());
    return v;
  };
  LayerView v;
  v.attn_norm = reinterpret_cast<const float*>(at(w.attn_norm));
  v.wq = weight(w.wq);
  v.wk = weight(w.wk);
  v.wv = weight(w.wv);
  v.wo = weight(w.wo);
  v.ffn_norm = reinterpret_cast<const float*>(at(w.ffn_norm));
  v.w_gate = weight(w.w_gate);
  v.w_up = weight(w.w_up);
  v.w_down = weight(w.w_down);
  return v;
}

Expected<std::unique_ptr<LayerMemory>> LayerMemory::create(const LayerMap& map,
                                                           const TierPlan& plan,
                                                           const uint8_t* file_base,
                                                           uint32_t alignment, MemoryOps ops) {
  std::unique_ptr<LayerMemory> m(new LayerMemory());
  m->ops_ = std::move(ops);
  for (const LayerExtent& e : map.layers) m->layouts_.push_back(layer_layout(e, alignment));
  m->ram_.assign(map.layers.size(), nullptr);
  uint64_t staged = 0, packed = 0;
  for (size_t l = 0; l < map.layers.size(); ++l) {
    if (plan.layer_tier[l] == Tier::Storage) staged = std::max(staged, m->layouts_[l].staged_bytes);
    if (plan.layer_tier[l] == Tier::Ram || plan.layer_tier[l] == Tier::Storage)
      packed = std::max(packed, m->layouts_[l].packed_bytes);
  }
  // A wide step streams the CPU-tier layers too (actors/planner.h): when
  // there are slots, they must hold those layers (sizes differ between
  // layers: Q4_K_M gives some of them Q6_K tensors).
  if (packed > 0)
    for (size_t l = 0; l < map.layers.size(); ++l)
      if (plan.layer_tier[l] == Tier::Cpu) packed = std::max(packed, m->layouts_[l].packed_bytes);
  m->staging_bytes_ = staged;
  m->slot_bytes_ = packed;
  if (staged > 0) {
    for (int32_t i = 0; i < plan.staging_buffers; ++i) {
      uint8_t* p = m->ops_.alloc_host(staged);
      if (!p)
        return make_error("cannot allocate staging buffer %d (%s)", i, human_bytes(staged).c_str());
      m->staging_.push_back(p);
    }
  }
  if (packed > 0) {
    for (int32_t i = 0; i < plan.device_slots; ++i) {
      uint8_t* p = m->ops_.alloc_device(packed);
      if (!p)
        return make_error("cannot allocate device slot %d (%s)", i, human_bytes(packed).c_str());
      m->slots_.push_back(p);
    }
  }
  std::vector<size_t> ram_layers;
  for (size_t l = 0; l < map.layers.size(); ++l) {
    // RAM-tier layers (copied to the GPU) and CPU-tier ones (computed in place).
    if (plan.layer_tier[l] != Tier::Ram && plan.layer_tier[l] != Tier::Cpu) continue;
    const LayerLayout& lay = m->layouts_[l];
    uint8_t* p = m->ops_.alloc_host(lay.packed_bytes);
    if (!p)
      return make_error("cannot allocate the RAM tier buffer of layer %zu (%s)", l,
                        human_bytes(lay.packed_bytes).c_str());
    m->ram_[l] = p;
    ram_layers.push_back(l);
  }
  // Fill the RAM tier from the mapped file on several threads: one thread
  // copying from the page cache runs at a few GB/s, and a 70B model's RAM
  // tier is tens of GB.
  const size_t n_threads = std::min<size_t>(
      ram_layers.size(), static_cast<size_t>(std::min(8, default_thread_count())));
  std::atomic<size_t> next{0};
  auto fill = [&] {
    for (size_t i; (i = next.fetch_add(1)) < ram_layers.size();) {
      const size_t l = ram_layers[i];
      const LayerExtent& e = map.layers[l];
      const LayerLayout& lay = m->layouts_[l];
      for (size_t k = 0; k < e.ranges.size(); ++k)
        std::memcpy(m->ram_[l] + lay.packed[k], file_base + e.ranges[k].offset, e.ranges[k].bytes);
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < n_threads; ++t) pool.emplace_back(fill);
  fill();
  for (std::thread& t : pool) t.join();
  return m;
}

LayerMemory::~LayerMemory() {
  for (uint8_t* p : staging_) ops_.free_host(p);
  for (uint8_t* p : ram_)
    if (p) ops_.free_host(p);
  for (uint8_t* p : slots_) ops_.free_device(p);
}

}  // namespace ls
