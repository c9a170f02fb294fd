// The layer map: for each transformer layer, its tensors and their byte
// extents in the file, coalesced into as few contiguous ranges as possible.
// This is what the streaming reader reads per layer, and what the tier plan
// sizes. Tensors outside any layer (embeddings, head, norms) form `globals`.
// defines: ByteRange, LayerExtent, LayerMap, build_layer_map()
#pragma once

#include <cstdint>
#include <vector>

#include "io/gguf.h"

namespace ls {

struct ByteRange {
  uint64_t offset = 0;  // absolute, in the file
  uint64_t bytes = 0;
};

struct LayerExtent {
  int layer = -1;                          // -1 for the globals
  std::vector<const GgufTensor*> tensors;  // by offset
  std::vector<ByteRange> ranges;           // coalesced; gaps of alignment padding are bridged
  uint64_t tensor_bytes = 0;               // sum of the tensors' sizes
  uint64_t range_bytes = 0;                // sum of the ranges' sizes (>= tensor_bytes)
};

struct LayerMap {
  std::vector<LayerExtent> layers;  // index = layer number
  LayerExtent globals;
  uint64_t total_tensor_bytes = 0;
};

// Group the tensors of f by layer ("blk.N." prefix, N < n_layer).
LayerMap build_layer_map(const GgufFile& f, uint32_t n_layer);

}  // namespace ls
