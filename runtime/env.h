// Whole-number settings from the environment (the A/B switches of the
// kernels and the pool): a malformed or too small value is said so on
// stderr and the default taken, never read as 0.
// defines: env_int()
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

}  // namespace ls
