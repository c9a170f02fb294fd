// The engine flags' parsing where a value alone does not say enough: whether
// --ubatch-size was given (a streamed plan widens only a cap not given).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tools/engine_flags.h"

using namespace ls;

namespace {
EngineOptions parse(std::vector<const char*> args) {
  CLI::App app("test");
  EngineOptions o;
  EngineFlagText text;
  add_engine_flags(&app, o, text);
  args.insert(args.begin(), "layerstream");
  app.parse(static_cast<int>(args.size()), args.data());
  return o;
}
}  // namespace

TEST_CASE("engine flags: --ubatch-size given is kept apart from its default") {
  const EngineOptions def = parse({});
  CHECK(def.ubatch == 512);
  CHECK_FALSE(def.ubatch_set);
  const EngineOptions given = parse({"--ubatch-size", "1024"});
  CHECK(given.ubatch == 1024);
  CHECK(given.ubatch_set);
  const EngineOptions same = parse({"--ubatch-size", "512"});  // the default, but chosen
  CHECK(same.ubatch == 512);
  CHECK(same.ubatch_set);
  // 0 is refused by the parser, naming the range.
  try {
    parse({"--ubatch-size", "0"});
    FAIL("--ubatch-size 0 was taken");
  } catch (const CLI::ValidationError& e) {
    CHECK(std::string(e.what()).find("not in range 1 to") != std::string::npos);
  }
}
