#pragma once
// A command of deepcanvas-cli: its name, operands, one-line summary and
// options (parse_args() refuses the rest, command_help() prints them) beside
// the function that runs it. Each command defines its own in
// cli/commands/NAME.cpp; main.cpp lists them (cli/commands/commands.h).
#include <string>
#include <vector>

namespace dc::cli {

struct Args;

struct OptionSpec {
  std::string name;   // without "--"
  std::string value;  // "FILE", "N", ...; empty for a flag that takes no value
  std::string help;
};

struct Command {
  std::string name, operands, summary;  // "train", "PROJECT", "train the project's network"
  std::vector<OptionSpec> options;
  bool training_settings = false;  // also takes every training setting's flag
  int max_operands = 1;            // -1: any number (predict's images)
  int (*run)(const Args&) = nullptr;
};

}  // namespace dc::cli
