// Whole-number settings from the environment (the A/B switches of the
// kernels and the pool): a malformed or too small value is said so on
// stderr and the default taken, never read as 0.
// defines: env_int(), env_mib()
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace ls {

// NAME's value if it is a whole number >= min; unset or empty: fallback.
inline int64_t env_int(const char* name, int64_t fallback, int64_t min) {
  const char* e = std::getenv(name);
  if (!e || !*e) return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(e, &end, 10);
  if (*end != '\0' || n < min) {
    std::fprintf(stderr, "%s=%s: want a whole number >= %lld; using %lld\n", name, e,
                 static_cast<long long>(min), static_cast<long long>(fallback));
    return fallback;
  }
  return static_cast<int64_t>(n);
}

// NAME's value in MiB (0 .. max_mib, a whole number), as bytes; unset or
// empty: fallback MiB. Out of range is said so and the fallback taken.
inline int64_t env_mib(const char* name, int64_t fallback, int64_t max_mib) {
  int64_t v = env_int(name, fallback, 0);
  if (v > max_mib) {
    std::fprintf(stderr, "%s=%lld: want at most %lld (MiB); using %lld\n", name,
                 static_cast<long long>(v), static_cast<long long>(max_mib),
                 static_cast<long long>(fallback));
    v = fallback;
  }
  return v << 20;
}

}  // namespace ls
