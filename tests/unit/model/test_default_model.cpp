// The default model (model/default_model.h): where it is looked for (beside
// the binary, then ../share/layerstream), the error when it is nowhere, and
// the build's copy of the shipped target beside LS_BINARY.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "model/default_model.h"   // defines: default_model_candidates(), default_model_path()
#include "tests/unit/ls_binary.h"  // defines: LS_BINARY

using namespace ls;

namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void touch(const fs::path& p) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << "x";
}

}  // namespace

TEST_CASE("default model: looked for beside the binary, then in ../share/layerstream") {
  const auto c = default_model_candidates("/opt/ls/bin/layerstream");
  REQUIRE(c.size() == 2);
  CHECK(c[0] == "/opt/ls/bin/layerstream-default.gguf");
  CHECK(c[1] == "/opt/ls/share/layerstream/layerstream-default.gguf");
}

TEST_CASE("default model: beside the binary first, then the install's share, else an error") {
  const fs::path prefix =
      fs::temp_directory_path() / ("ls_default_model_" + std::to_string(::getpid()));
  fs::remove_all(prefix);
  const std::string exe = (prefix / "bin" / "layerstream").string();
  const fs::path beside = prefix / "bin" / kDefaultModelFile;
  const fs::path shared = prefix / "share" / "layerstream" / kDefaultModelFile;

  auto none = default_model_path(exe);
  REQUIRE_FALSE(none.has_value());
  const std::string msg = none.error().message;
  INFO(msg);
  CHECK(msg.find(beside.string()) != std::string::npos);
  CHECK(msg.find(shared.string()) != std::string::npos);
  CHECK(msg.find("-m") != std::string::npos);

  touch(shared);
  auto s = default_model_path(exe);
  REQUIRE(s.has_value());
  CHECK(*s == shared.string());
  touch(beside);
  auto b = default_model_path(exe);
  REQUIRE(b.has_value());
  CHECK(*b == beside.string());
  fs::remove_all(prefix);
}

TEST_CASE("default model: the build puts the shipped trained target beside the binary") {
  const fs::path shipped = fs::path(LS_SOURCE_DIR) / "model/weights/kjv-target-q8_0.gguf";
  auto p = default_model_path(LS_BINARY);
  REQUIRE(p.has_value());
  CHECK(*p == (fs::path(LS_BINARY).parent_path() / kDefaultModelFile).lexically_normal().string());
  REQUIRE(fs::file_size(shipped) > 1'000'000);
  CHECK(slurp(*p) == slurp(shipped));  // the same bytes: configure_file copies it again on change
}
