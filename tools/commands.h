// The `layerstream` subcommands. Each file tools/cmd_<name>.cpp adds one
// subcommand to the CLI11 app and returns the function that runs it once the
// command line is parsed; main() in tools/layerstream.cpp is only the table.
// defines: Command, add_* for each subcommand
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace ls {

// Runs a parsed subcommand; returns the process exit code.
using Command = std::function<int()>;

Command add_inspect(CLI::App& app);
Command add_synth(CLI::App& app);
Command add_tokenize(CLI::App& app);
Command add_trace(CLI::App& app);
Command add_decode(CLI::App& app);
Command add_bench(CLI::App& app);
Command add_probe(CLI::App& app);
Command add_export(CLI::App& app);
Command add_logits(CLI::App& app);
Command add_nvme(CLI::App& app);
Command add_convert(CLI::App& app);
Command add_perplexity(CLI::App& app);
Command add_serve(CLI::App& app);
Command add_calibrate(CLI::App& app);

}  // namespace ls
