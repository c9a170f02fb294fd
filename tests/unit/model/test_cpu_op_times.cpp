// The CPU backend's op meter (model/cpu_op_times.h): off unless
// LS_CPU_OP_TIMES=1, and then a line per width with each operation's time
// a layer and their sum.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "model/cpu_op_times.h"

using namespace ls;

namespace {
std::string printed(const CpuOpTimes& m) {
  std::FILE* f = std::tmpfile();
  REQUIRE(f);
  m.print(f);
  std::rewind(f);
  std::string s;
  char buf[512];
  while (std::fgets(buf, sizeof buf, f)) s += buf;
  std::fclose(f);
  return s;
}
}  // namespace

TEST_CASE("cpu op times: off by default, per width and operation when on") {
  ::unsetenv("LS_CPU_OP_TIMES");
  {
    CpuOpTimes off;
    CHECK_FALSE(off.on());
    off.start(8);
    off.lap(CpuOp::Norm);
    CHECK(printed(off).empty());
  }
  ::setenv("LS_CPU_OP_TIMES", "1", 1);
  CpuOpTimes m;
  ::unsetenv("LS_CPU_OP_TIMES");  // read at construction; the destructor prints to stderr
  REQUIRE(m.on());
  for (int layer = 0; layer < 2; ++layer) {
    m.start(8);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    m.lap(CpuOp::GateUp);
    m.lap(CpuOp::Down);
  }
  m.start(100);  // past the table's widest: counted at 64
  m.lap(CpuOp::Norm);
  const std::string s = printed(m);
  INFO(s);
  CHECK(s.find("width 8, 2 layers") != std::string::npos);
  CHECK(s.find("width 64, 1 layers") != std::string::npos);
  CHECK(s.find("width 1,") == std::string::npos);  // no layer of width 1
  // The 2 ms slept a layer are gate/up's, not down's.
  const size_t g = s.find("gate/up ");
  REQUIRE(g != std::string::npos);
  CHECK(std::atof(s.c_str() + g + 8) >= 1.9);
  const size_t d = s.find("down ");
  REQUIRE(d != std::string::npos);
  CHECK(std::atof(s.c_str() + d + 5) < 1.0);
  m.clear();
  CHECK(printed(m).empty());
}
