// defines: parse_skip_layers, skip_layers (model/layer_skip.h)
#include "model/layer_skip.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

namespace ls {
namespace {

Expected<uint32_t> layer_number(const std::string& s, uint32_t n_layer, const std::string& spec) {
  char* end = nullptr;
  const long v = s.empty() ? -1 : std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v < 0 || v >= static_cast<long>(n_layer))
    return make_error("--skip-layers %s: '%s' is not a layer of this model (0..%u)", spec.c_str(),
                      s.c_str(), n_layer - 1);
  return static_cast<uint32_t>(v);
}

Expected<std::vector<uint32_t>> from_calibration(const std::string& spec, uint32_t n_layer,
                                                 const std::string& model_path) {
  char* end = nullptr;
  const long n = std::strtol(spec.c_str() + 5, &end, 10);
  if (spec.size() == 5 || *end != '\0' || n < 1 || n >= static_cast<long>(n_layer))
    return make_error("--skip-layers %s: auto:N wants N from 1 to %u", spec.c_str(), n_layer - 1);
  const std::string path = model_path + ".layerskip.json";
  std::ifstream in(path);
  if (!in)
    return make_error(
        "--skip-layers %s: no calibration %s (make it with: layerstream calibrate "
        "-m %s -f TEXT)",
        spec.c_str(), path.c_str(), model_path.c_str());
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("order") || !j["order"].is_array() ||
      j["order"].size() != n_layer)
    return make_error("--skip-layers %s: %s is not a calibration of this model's %u layers",
                      spec.c_str(), path.c_str(), n_layer);
  std::vector<uint32_t> out;
  for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
    const auto& v = j["order"][i];
    if (!v.is_number_unsigned() || v.get<uint64_t>() >= n_layer)
      return make_error("--skip-layers %s: %s: a layer out of range in its order", spec.c_str(),
                        path.c_str());
    out.push_back(v.get<uint32_t>());
  }
  return out;
}

}  // namespace

Expected<std::vector<uint32_t>> parse_skip_layers(const std::string& spec, uint32_t n_layer,
                                                  const std::string& model_path) {
  std::vector<uint32_t> out;
  if (spec.rfind("auto:", 0) == 0) {
    auto a = from_calibration(spec, n_layer, model_path);
    if (!a) return a.error();
    out = std::move(*a);
  } else {
    size_t at = 0;
    while (at <= spec.size()) {
      size_t comma = spec.find(',', at);
      if (comma == std::string::npos) comma = spec.size();
      const std::string item = spec.substr(at, comma - at);
      const size_t dash = item.find('-');
      auto lo = layer_number(item.substr(0, dash), n_layer, spec);
      if (!lo) return lo.error();
      auto hi = dash == std::string::npos ? lo : layer_number(item.substr(dash + 1), n_layer, spec);
      if (!hi) return hi.error();
      if (*hi < *lo)
        return make_error("--skip-layers %s: the range '%s' runs backwards", spec.c_str(),
                          item.c_str());
      for (uint32_t l = *lo; l <= *hi; ++l) out.push_back(l);
      at = comma + 1;
    }
  }
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    return make_error("--skip-layers %s: a layer is named twice", spec.c_str());
  if (out.size() >= n_layer)
    return make_error("--skip-layers %s: that leaves none of the %u layers", spec.c_str(), n_layer);
  return out;
}

uint64_t skip_layers(Model& m, const std::vector<uint32_t>& layers) {
  uint64_t bytes = 0;
  for (size_t k = layers.size(); k-- > 0;) {
    const uint32_t l = layers[k];
    bytes += m.map.layers[l].range_bytes;
    m.map.total_tensor_bytes -= m.map.layers[l].tensor_bytes;
    m.map.layers.erase(m.map.layers.begin() + l);
    m.info.weights.layers.erase(m.info.weights.layers.begin() + l);
  }
  for (size_t l = 0; l < m.map.layers.size(); ++l) m.map.layers[l].layer = static_cast<int>(l);
  m.info.config.n_layer = static_cast<uint32_t>(m.map.layers.size());
  return bytes;
}

}  // namespace ls
