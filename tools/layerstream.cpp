// layerstream: the command-line tool. One subcommand per file (tools/cmd_*.cpp);
// this file is only the table of them.
#include <cstdio>
#include <vector>

#include "tools/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"layerstream: run Llama-family GGUF models larger than the GPU"};
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, ls::Command>> cmds;
  auto add = [&](ls::Command (*f)(CLI::App&)) {
    const size_t before = app.get_subcommands({}).size();
    ls::Command c = f(app);
    cmds.emplace_back(app.get_subcommands({})[before], std::move(c));
  };
  add(ls::add_decode);
  add(ls::add_bench);
  add(ls::add_synth);
  add(ls::add_inspect);
  add(ls::add_tokenize);
  add(ls::add_trace);
  add(ls::add_probe);
  add(ls::add_export);
  add(ls::add_convert);
  add(ls::add_perplexity);
  add(ls::add_logits);
  add(ls::add_nvme);
  add(ls::add_serve);
  add(ls::add_calibrate);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);  // prints the error (or help) and gives CLI11's exit code (non-zero on errors)
  }
  for (auto& [sub, run] : cmds)
    if (sub->parsed()) return run();
  return 2;
}
