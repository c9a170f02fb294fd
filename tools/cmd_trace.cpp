// layerstream trace summarize FILE: the stall table of a trace written by --trace
// (per actor: busy / starved / blocked %, bytes, GB/s, and the stage that bounds
// the pipeline), the same table that --stats prints at the end of a run.
#include <cstdio>
#include <memory>
#include <string>

#include "runtime/trace_summary.h"
#include "tools/commands.h"

namespace ls {

Command add_trace(CLI::App& app) {
  auto* sub = app.add_subcommand("trace", "Read traces written by --trace");
  sub->require_subcommand(1);
  auto* summarize =
      sub->add_subcommand("summarize", "Print the stall table of a Chrome trace JSON file");
  auto path = std::make_shared<std::string>();
  auto from_step = std::make_shared<int64_t>(0);
  summarize->add_option("FILE", *path, "Trace written by --trace FILE")->required();
  summarize
      ->add_option("--from-step", *from_step,
                   "Only the warm run: from the step compute began N to the last step's end (0: all of it)")
      ->capture_default_str();
  return [path, from_step] {
    if (*from_step < 0) {
      std::fprintf(stderr, "error: --from-step must be 0 or more\n");
      return 1;
    }
    auto table = summarize_chrome_trace(*path, *from_step);
    if (!table) {
      std::fprintf(stderr, "error: %s\n", table.error().message.c_str());
      return 1;
    }
    std::fputs(table->to_text().c_str(), stdout);
    return 0;
  };
}

}  // namespace ls
