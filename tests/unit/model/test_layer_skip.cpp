// model/layer_skip.h: the specs, their errors, and a model with layers left
// out computing exactly what the full model computes when those layers are
// not run (the same arithmetic: identical bits).
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "actors/engine.h"
#include "model/layer_skip.h"
#include "model/synth.h"

using namespace ls;

namespace {
namespace fs = std::filesystem;

// The model file, removed when the process ends (it was left in /tmp by
// every run before).
struct TinyFile {
  std::string path;
  TinyFile() {
    SynthOptions opt;
    opt.shape = *synth_preset("tiny");  // 4 layers
    opt.quant = *synth_quant_from_name("q8_0");
    opt.seed = 5;
    opt.threads = 2;
    opt.quiet = true;
    path = (fs::temp_directory_path() / ("ls_layer_skip_" + std::to_string(::getpid()) + ".gguf"))
               .string();
    REQUIRE(synth_write(opt, path).ok());
  }
  ~TinyFile() {
    std::error_code ec;
    fs::remove(path, ec);
  }
};

const std::string& tiny() {
  static const TinyFile f;
  return f.path;
}

std::string message(const Expected<std::vector<uint32_t>>& e) {
  return e ? std::string() : e.error().message;
}
}  // namespace

TEST_CASE("layer skip: lists, ranges and auto:N; bad specs named") {
  CHECK(*parse_skip_layers("2", 8, "m") == std::vector<uint32_t>{2});
  CHECK(*parse_skip_layers("5,1,3-4", 8, "m") == std::vector<uint32_t>{1, 3, 4, 5});
  CHECK(message(parse_skip_layers("8", 8, "m")).find("(0..7)") != std::string::npos);
  CHECK(message(parse_skip_layers("x", 8, "m")).find("'x'") != std::string::npos);
  CHECK(message(parse_skip_layers("3,3", 8, "m")).find("twice") != std::string::npos);
  CHECK(message(parse_skip_layers("4-2", 8, "m")).find("backwards") != std::string::npos);
  CHECK(message(parse_skip_layers("0-7", 8, "m")).find("leaves none") != std::string::npos);
  CHECK(message(parse_skip_layers("", 8, "m")).find("not a layer") != std::string::npos);
  const std::string m =
      (fs::temp_directory_path() / ("ls_skip_cal_" + std::to_string(::getpid()))).string();
  CHECK(message(parse_skip_layers("auto:2", 8, m)).find("layerstream calibrate") !=
        std::string::npos);
  std::ofstream(m + ".layerskip.json") << R"({"order": [6, 2, 7, 1, 0, 3, 4, 5]})";
  CHECK(*parse_skip_layers("auto:2", 8, m) == std::vector<uint32_t>{2, 6});
  CHECK(message(parse_skip_layers("auto:8", 8, m)).find("auto:N") != std::string::npos);
  CHECK(message(parse_skip_layers("auto:2", 9, m)).find("not a calibration") != std::string::npos);
  fs::remove(m + ".layerskip.json");
}

TEST_CASE("layer skip: the shorter model computes the full one with those layers not run") {
  auto full = open_model(tiny());
  auto part = open_model(tiny());
  REQUIRE(full);
  REQUIRE(part);
  const std::vector<uint32_t> skip = {1, 2};
  const uint64_t saved = skip_layers(**part, skip);
  CHECK(saved == (*full)->map.layers[1].range_bytes + (*full)->map.layers[2].range_bytes);
  CHECK((*part)->config().n_layer == 2);
  EngineOptions eo;
  eo.n_ctx = 64;
  eo.threads = 2;
  auto be_full = make_cpu_backend(**full, eo);
  auto be_part = make_cpu_backend(**part, eo);
  Batch b;
  const std::vector<int32_t> toks = {1, 17, 99, 4, 250, 31};
  for (size_t i = 0; i < toks.size(); ++i) b.add(toks[i], static_cast<int32_t>(i), 0, true);
  const size_t V = (*full)->config().n_vocab;
  std::vector<float> want(toks.size() * V), got(toks.size() * V);
  REQUIRE(be_full->begin(b).ok());
  for (uint32_t l = 0; l < (*full)->config().n_layer; ++l)
    if (l != 1 && l != 2) REQUIRE(be_full->layer(l, (*full)->layer(l)).ok());
  REQUIRE(be_full->finish(want.data()).ok());
  REQUIRE(forward_resident(**part, *be_part, b, got.data()).ok());
  CHECK(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0);
}
