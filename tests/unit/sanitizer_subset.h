// Sweeps under the sanitizers. The Sanitize and Tsan builds (CI runs the unit
// tests under ASan + UBSan in one process) run 5-20 times slower than
// Release, so a test that sweeps a grid of settings runs a fixed part of it
// there, chosen and documented at the grid, and checks how many runs it made;
// the Release run (ctest) keeps the whole grid. CMakeLists.txt defines
// LS_TEST_SANITIZER_SUBSET for those two build types;
// LS_TEST_FULL_SWEEPS=1 in the environment runs the whole grid there too.
// defines: kSanitizerBuild, sanitizer_subset()
#pragma once

#include <cstdlib>
#include <cstring>

namespace ls::test {

// Whether this is one of those builds, whatever the compiler (clang 14, the
// ASan build's, defines none of GCC's __SANITIZE_ADDRESS__ and the like): for
// the tests' time bounds.
#ifdef LS_TEST_SANITIZER_SUBSET
inline constexpr bool kSanitizerBuild = true;
#else
inline constexpr bool kSanitizerBuild = false;
#endif

inline bool sanitizer_subset() {
#ifdef LS_TEST_SANITIZER_SUBSET
  const char* full = std::getenv("LS_TEST_FULL_SWEEPS");
  return !(full && std::strcmp(full, "1") == 0);
#else
  return false;
#endif
}

}  // namespace ls::test
