// defines: parse_cgroup_path, parse_cpu_max, parse_cfs_quota, cgroup_cpu_limit
// (runtime/cpu_quota.h)
#include "runtime/cpu_quota.h"

#include <charconv>
#include <cstdint>
#include <fstream>
#include <sstream>

namespace ls {

namespace {

// A whole positive decimal at the start of s (after spaces), or -1.
int64_t leading_int(std::string_view s, std::string_view* rest = nullptr) {
  size_t i = s.find_first_not_of(" \t");
  if (i == std::string_view::npos) return -1;
  int64_t v = 0;
  const auto r = std::from_chars(s.data() + i, s.data() + s.size(), v);
  if (r.ec != std::errc() || v < 0) return -1;
  if (rest) *rest = s.substr(static_cast<size_t>(r.ptr - s.data()));
  return v;
}

int round_up(int64_t quota, int64_t period) {
  if (quota <= 0 || period <= 0) return 0;
  return static_cast<int>((quota + period - 1) / period);
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) return {};
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

std::string parse_cgroup_path(std::string_view text, bool* v1) {
  std::string v2_path;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    // "id:controllers:path"
    const size_t a = line.find(':');
    const size_t b = a == std::string_view::npos ? a : line.find(':', a + 1);
    if (b == std::string_view::npos) continue;
    const std::string_view controllers = line.substr(a + 1, b - a - 1);
    const std::string_view path = line.substr(b + 1);
    if (controllers.empty()) {
      if (line.substr(0, a) == "0") v2_path = std::string(path);
      continue;
    }
    std::string_view c = controllers;
    while (!c.empty()) {
      const size_t comma = c.find(',');
      if (c.substr(0, comma) == "cpu") {
        if (v1) *v1 = true;
        return std::string(path);
      }
      c = comma == std::string_view::npos ? std::string_view{} : c.substr(comma + 1);
    }
  }
  if (v1) *v1 = false;
  return v2_path;
}

int parse_cpu_max(std::string_view s) {
  std::string_view rest;
  const size_t i = s.find_first_not_of(" \t");
  if (i == std::string_view::npos || s.substr(i, 3) == "max") return 0;
  const int64_t quota = leading_int(s, &rest);
  const int64_t period = leading_int(rest);
  return round_up(quota, period);
}

int parse_cfs_quota(std::string_view quota_us, std::string_view period_us) {
  return round_up(leading_int(quota_us), leading_int(period_us));
}

int cgroup_cpu_limit() {
  static const int limit = [] {
#if defined(__linux__)
    bool v1 = false;
    const std::string path = parse_cgroup_path(read_file("/proc/self/cgroup"), &v1);
    if (path.empty()) return 0;
    // The group's directory under the hierarchy's mount, or the mount
    // itself: inside a container without its own cgroup namespace the path
    // names the host's view, and the mount is the container's group.
    const std::string dir = path == "/" ? std::string() : path;
    if (!v1) {
      for (const std::string& base : {"/sys/fs/cgroup" + dir, std::string("/sys/fs/cgroup")}) {
        const std::string max = read_file(base + "/cpu.max");
        if (!max.empty()) return parse_cpu_max(max);
      }
      return 0;
    }
    // v1: the cpu controller's hierarchy is mounted as cpu, or as cpu,cpuacct.
    for (const char* mount : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"})
      for (const std::string& base : {mount + dir, std::string(mount)}) {
        const std::string quota = read_file(base + "/cpu.cfs_quota_us");
        if (!quota.empty()) return parse_cfs_quota(quota, read_file(base + "/cpu.cfs_period_us"));
      }
#endif
    return 0;
  }();
  return limit;
}

}  // namespace ls
