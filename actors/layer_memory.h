// The memory the tiers live in, and the layout of a layer in it.
//   packed layout: a layer's byte ranges back to back (range k at packed[k]);
//     RAM-tier buffers and device slots hold layers this way.
//   staged layout: each range as an aligned over-read (range k at staged[k],
//     its wanted bytes `lead` further on); staging buffers hold layers this way.
// On the CPU backend, "device" slots are host buffers, so the graph and its
// credits are the same as on the GPU; the CUDA backend supplies an allocator
// that returns pinned host memory and device memory instead.
// defines: LayerLayout, layer_layout(), packed_layer_view(), LayerMemory
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "model/backend.h"
#include "model/layer_map.h"
#include "model/tier_plan.h"
#include "runtime/memory_ops.h"
#include "runtime/status.h"

namespace ls {

struct LayerLayout {
  std::vector<uint64_t> packed;  // offset of range k in a packed buffer
  std::vector<uint64_t> staged;  // offset of range k's aligned over-read in a staging buffer
  std::vector<uint64_t> lead;    // where range k's wanted bytes start within its over-read
  uint64_t packed_bytes = 0;
  uint64_t staged_bytes = 0;
};
LayerLayout layer_layout(const LayerExtent& e, uint32_t alignment);

// The view of a layer held in packed layout at `base`.
LayerView packed_layer_view(const LayerWeights& w, const LayerExtent& e, const LayerLayout& l,
                            const uint8_t* base);

class LayerMemory {
 public:
  // Allocates staging buffers, device slots and RAM-tier buffers per the plan,
  // and fills the RAM-tier buffers from the file. An error names what could
  // not be allocated or read.
  static Expected<std::unique_ptr<LayerMemory>> create(const LayerMap& map, const TierPlan& plan,
                                                       const uint8_t* file_base, uint32_t alignment,
                                                       MemoryOps ops);
  ~LayerMemory();
  LayerMemory(const LayerMemory&) = delete;
  LayerMemory& operator=(const LayerMemory&) = delete;

  const LayerLayout& layout(int32_t layer) const { return layouts_[layer]; }
  uint8_t* staging(int32_t id) const { return staging_[id]; }
  uint8_t* slot(int32_t id) const { return slots_[id]; }
  uint64_t slot_bytes() const { return slot_bytes_; }
  // nullptr unless the RAM or CPU tier.
  const uint8_t* ram_layer(int32_t layer) const { return ram_[layer]; }
  int32_t n_staging() const { return static_cast<int32_t>(staging_.size()); }
  int32_t n_slots() const { return static_cast<int32_t>(slots_.size()); }
  uint64_t staging_bytes() const { return staging_bytes_; }

 private:
  LayerMemory() = default;
  MemoryOps ops_;
  std::vector<LayerLayout> layouts_;
  std::vector<uint8_t*> staging_, slots_, ram_;
  uint64_t staging_bytes_ = 0, slot_bytes_ = 0;
};

}  // namespace ls
