#include "tools/commands.h"
namespace ls {
Command add_synth(CLI::App& app) {
  auto* sub = app.add_subcommand("synth", "Write a Llama GGUF with random weights");
  (void)sub;
  return [] { return 0; };
}
}  // namespace ls
