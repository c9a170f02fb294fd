#include "model/layer_map.h"

#include <algorithm>
#include <charconv>
#include <string_view>

namespace ls {
namespace {

// Layer number of a "blk.N.xxx" name, or -1.
int layer_of(std::string_view name) {
  if (!name.starts_with("blk.")) return -1;
  name.remove_prefix(4);
  int n = -1;
  auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), n);
  if (ec != std::errc() || p == name.data() + name.size() || *p != '.') return -1;
  return n;
}

void finish(LayerExtent& e, uint64_t alignment) {
  std::sort(e.tensors.begin(), e.tensors.end(),
            [](const GgufTensor* a, const GgufTensor* b) { return a->offset < b->offset; });
  for (const GgufTensor* t : e.tensors) {
    e.tensor_bytes += t->bytes;
    // Bridge a gap that is only alignment padding: one read is cheaper than two.
    if (!e.ranges.empty()) {
      ByteRange& last = e.ranges.back();
      const uint64_t end = last.offset + last.bytes;
      if (t->offset >= end && t->offset - end < alignment) {
        last.bytes = t->offset + t->bytes - last.offset;
        continue;
      }
    }
    e.ranges.push_back({t->offset, t->bytes});
  }
  for (const ByteRange& r : e.ranges) e.range_bytes += r.bytes;
}

}  // namespace

LayerMap build_layer_map(const GgufFile& f, uint32_t n_layer) {
  LayerMap m;
  m.layers.resize(n_layer);
  for (uint32_t l = 0; l < n_layer; ++l) m.layers[l].layer = static_cast<int>(l);
  for (const GgufTensor& t : f.tensors()) {
    const int l = layer_of(t.name);
    if (l >= 0 && static_cast<uint32_t>(l) < n_layer) m.layers[l].tensors.push_back(&t);
    else m.globals.tensors.push_back(&t);
    m.total_tensor_bytes += t.bytes;
  }
  for (LayerExtent& e : m.layers) finish(e, f.alignment());
  finish(m.globals, f.alignment());
  return m;
}

}  // namespace ls
