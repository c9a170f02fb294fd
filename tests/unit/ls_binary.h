// The layerstream binary that the CLI tests run: the one this build made
// (LS_BINARY_BUILT, from CMake), or LS_TEST_BINARY from the environment, for
// a build carried to another machine (the GPU machine runs the tests from
// wherever the archive was unpacked, where the build's path does not exist).
// defines: ls::test::binary_path(), LS_BINARY
#pragma once

#include <cstdlib>
#include <string>

namespace ls::test {

inline const char* binary_path() {
  static const std::string p = [] {
    const char* e = std::getenv("LS_TEST_BINARY");
    return std::string(e && *e ? e : LS_BINARY_BUILT);
  }();
  return p.c_str();
}

}  // namespace ls::test

#define LS_BINARY (::ls::test::binary_path())
