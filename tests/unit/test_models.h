// Test fixtures: small synthetic models written once per test process.
// defines: tiny_model_path(), tiny_model(), argmax()
#pragma once

#include <doctest/doctest.h>

#include <filesystem>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "model/model.h"
#include "model/synth.h"

namespace ls::test {

// The tiny preset (4 layers, GQA, Llama 3.1 rope) in `quant`, written under
// the working directory (outside tmpfs where the build dir is, so that the
// reader takes its O_DIRECT path) in `dir`, once per process.
inline const std::string& tiny_model_path(const std::string& dir, const std::string& quant = "q8_0") {
  static std::map<std::string, std::string> written;
  const std::string key = dir + "/" + quant;
  auto it = written.find(key);
  if (it != written.end()) return it->second;
  const std::filesystem::path d = std::filesystem::current_path() / dir;
  std::filesystem::create_directories(d);
  const std::string p = (d / ("tiny-" + quant + ".gguf")).string();
  SynthOptions o;
  o.shape = *synth_preset("tiny");
  o.quant = *synth_quant_from_name(quant);
  o.threads = 2;
  o.quiet = true;
  REQUIRE(synth_write(o, p).ok());
  return written.emplace(key, p).first->second;
}

// The tiny model of tiny_model_path, opened once per process and kept.
inline const Model& tiny_model(const std::string& dir, const std::string& quant = "q8_0") {
  static std::map<std::string, std::unique_ptr<Model>> opened;
  std::unique_ptr<Model>& m = opened[dir + "/" + quant];
  if (!m) {
    auto r = open_model(tiny_model_path(dir, quant));
    REQUIRE(r.has_value());
    m = std::move(*r);
  }
  return *m;
}

// The first index of the largest of n logits (greedy sampling's choice).
inline int32_t argmax(const float* x, int n) {
  int32_t best = 0;
  for (int i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return best;
}

}  // namespace ls::test
