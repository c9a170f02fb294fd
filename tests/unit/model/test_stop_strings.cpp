// Stop strings over streamed text: the text before the first stop string is
// released, nothing of a stop string ever is, and text that might start one
// is held only until the next piece decides.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "model/stop_strings.h"

using namespace ls;

namespace {

// Feeds pieces; returns what was released and whether a stop came.
std::string run(StopScanner& s, const std::vector<std::string>& pieces, bool* stopped) {
  std::string out;
  *stopped = false;
  for (const std::string& p : pieces) {
    out += s.push(p, stopped);
    if (*stopped) return out;
  }
  return out + s.flush();
}

}  // namespace

TEST_CASE("stop strings: text passes through untouched without stop strings") {
  StopScanner s({});
  bool stopped = false;
  CHECK(run(s, {"In the", " beginning", " God"}, &stopped) == "In the beginning God");
  CHECK_FALSE(stopped);
}

TEST_CASE("stop strings: a stop string split across pieces ends the text before it") {
  StopScanner s({"\n\n", "Amen"});
  bool stopped = false;
  CHECK(run(s, {"and the earth", " was void. Am", "en. And"}, &stopped) ==
        "and the earth was void. ");
  CHECK(stopped);
}

TEST_CASE("stop strings: a held prefix that does not complete is released with the next piece") {
  StopScanner s({"Amen"});
  bool stopped = false;
  CHECK(s.push("So A", &stopped) == "So ");  // "A" might start "Amen"
  CHECK(s.held() == 1);
  CHECK(s.push("braham", &stopped) == "Abraham");
  CHECK_FALSE(stopped);
  CHECK(s.held() == 0);
}

TEST_CASE("stop strings: the earliest of several stop strings wins, and the rest is dropped") {
  StopScanner s({"light", "God"});
  bool stopped = false;
  CHECK(s.push("And God said, Let there be light", &stopped) == "And ");
  CHECK(stopped);
}

TEST_CASE("stop strings: the end of the text releases a prefix that never completed") {
  StopScanner s({"Amen"});
  bool stopped = false;
  CHECK(s.push("world without end. Ame", &stopped) == "world without end. ");
  CHECK(s.flush() == "Ame");
}

TEST_CASE("stop strings: empty stop strings are ignored") {
  StopScanner s({"", ""});
  bool stopped = false;
  CHECK(s.push("abc", &stopped) == "abc");
  CHECK_FALSE(stopped);
}
