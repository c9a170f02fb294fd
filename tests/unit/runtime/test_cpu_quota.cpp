// runtime/cpu_quota and default_thread_count: a control group's CPU quota
// read from its files' text, and the default thread count following the
// process's affinity mask (run as the user runs it: taskset).
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/cpu_quota.h"
#include "runtime/thread_pool.h"
#include "tests/unit/ls_binary.h"

using namespace ls;

TEST_CASE("cpu_quota: the cpu controller's group from /proc/self/cgroup") {
  bool v1 = true;
  CHECK(parse_cgroup_path("0::/user.slice/session-2.scope\n", &v1) ==
        "/user.slice/session-2.scope");
  CHECK_FALSE(v1);
  const char* hybrid =
      "9:name=systemd:/\n4:memory:/job/7\n2:cpu,cpuacct:/docker/abc\n1:cpuset:/\n0::/\n";
  CHECK(parse_cgroup_path(hybrid, &v1) == "/docker/abc");
  CHECK(v1);
  // "cpuacct" or "cpuset" alone is not the cpu controller.
  CHECK(parse_cgroup_path("3:cpuset:/a\n2:cpuacct:/b\n0::/c\n", &v1) == "/c");
  CHECK_FALSE(v1);
  CHECK(parse_cgroup_path("", &v1).empty());
  CHECK(parse_cgroup_path("garbage without colons\n", &v1).empty());
}

TEST_CASE("cpu_quota: cgroup v2's cpu.max and v1's cfs quota, rounded up to whole CPUs") {
  CHECK(parse_cpu_max("max 100000\n") == 0);
  CHECK(parse_cpu_max("400000 100000\n") == 4);
  CHECK(parse_cpu_max("150000 100000") == 2);  // 1.5 CPUs: two threads, not one
  CHECK(parse_cpu_max("50000 100000") == 1);
  CHECK(parse_cpu_max("") == 0);
  CHECK(parse_cpu_max("abc def") == 0);
  CHECK(parse_cpu_max("100000") == 0);  // no period
  CHECK(parse_cfs_quota("-1\n", "100000\n") == 0);
  CHECK(parse_cfs_quota("200000\n", "100000\n") == 2);
  CHECK(parse_cfs_quota("250000", "100000") == 3);
  CHECK(parse_cfs_quota("200000", "") == 0);
}

TEST_CASE("default_thread_count: the CPUs of the affinity mask, capped by the quota") {
  int expect = static_cast<int>(process_cpus().size());
  if (cgroup_cpu_limit() > 0) expect = std::min(expect, cgroup_cpu_limit());
  if (process_cpus().empty()) {
    MESSAGE("no affinity mask here: default_thread_count() is hardware_concurrency");
  } else {
    CHECK(default_thread_count() == std::max(1, expect));
  }
  MESSAGE("CPUs " << process_cpus().size() << ", quota " << cgroup_cpu_limit() << ", threads "
                  << default_thread_count());
}

TEST_CASE("default_thread_count: `taskset -c 0 layerstream probe` reads the host with one thread") {
  if (std::system("taskset -c 0 true > /dev/null 2>&1") != 0) {
    MESSAGE("SKIPPED: no taskset here");
    return;
  }
  const std::string out = (std::filesystem::temp_directory_path() /
                           ("ls_test_cpu_quota_" + std::to_string(::getpid()) + ".txt"))
                              .string();
  const std::string cmd = std::string("taskset -c 0 ") + LS_BINARY +
                          " probe --host-bytes 16MiB --host-passes 1 > " + out + " 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream f(out);
  std::stringstream text;
  text << f.rdbuf();
  std::remove(out.c_str());
  // "memory read (0.02 GB)   <threads>   <GB/s> ...": one row, one thread.
  std::istringstream lines(text.str());
  std::string line;
  int rows = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("memory read", 0) != 0) continue;
    ++rows;
    std::istringstream fields(line.substr(line.find(')') + 1));
    int threads = 0;
    fields >> threads;
    CHECK_MESSAGE(threads == 1, line);
  }
  CHECK_MESSAGE(rows == 1, text.str());
}
