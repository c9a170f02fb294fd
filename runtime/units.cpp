#include "runtime/units.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cmath>
#include <cstdlib>

namespace ls {

Expected<uint64_t> parse_bytes(const std::string& text) {
  const char* s = text.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s, &end);
  if (end == s || errno != 0 || !(v >= 0) || std::isinf(v))
    return make_error("'%s' is not a size (examples: 24GiB, 512MiB, 1.5GB, 0)", text.c_str());
  std::string suf(end);
  for (char& c : suf) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double mul = 1;
  if (suf.empty() || suf == "b") mul = 1;
  else if (suf == "k" || suf == "kib") mul = 1024.0;
  else if (suf == "kb") mul = 1e3;
  else if (suf == "m" || suf == "mib") mul = 1024.0 * 1024;
  else if (suf == "mb") mul = 1e6;
  else if (suf == "g" || suf == "gib") mul = 1024.0 * 1024 * 1024;
  else if (suf == "gb") mul = 1e9;
  else if (suf == "t" || suf == "tib") mul = 1024.0 * 1024 * 1024 * 1024;
  else if (suf == "tb") mul = 1e12;
  else
    return make_error("'%s': unknown size unit '%s' (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)",
                      text.c_str(), end);
  const double bytes = v * mul;
  if (bytes > 1.8e19) return make_error("'%s' is too large", text.c_str());
  return static_cast<uint64_t>(std::llround(bytes));
}

std::string human_bytes(uint64_t b) {
  char buf[64];
  const double d = static_cast<double>(b);
  if (b >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", d / (1ull << 30));
  else if (b >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", d / (1ull << 20));
  else if (b >= (1ull << 10)) std::snprintf(buf, sizeof buf, "%.1f KiB", d / (1ull << 10));
  else std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  return buf;
}

}  // namespace ls
