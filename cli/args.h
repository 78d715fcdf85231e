#pragma once
// Command-line options: each command lists the options it takes, the
// training settings add theirs from the settings table, and anything else
// is an error with the nearest known option, so a typo such as
// --checkpiont never trains and then throws the model away.
#include <deepcanvas/train_config.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "command.h"

namespace dc::cli {

struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;  // flags map to ""; the last of repeated ones
  // Every value of an option that may repeat (sweep's --param), in order.
  std::map<std::string, std::vector<std::string>> repeated;
  bool has(const std::string& k) const { return options.count(k) != 0; }
  bool flag(const std::string& k) const { return has(k); }
  std::string get(const std::string& k, const std::string& def) const;
  int64_t get_int(const std::string& k, int64_t def, int64_t lo, int64_t hi) const;
  double get_double(const std::string& k, double def, double lo, double hi) const;
};

// Throws Error for an unknown option (naming the nearest known one), a
// missing value or too many operands. "--help" is returned as an option.
Args parse_args(const Command& cmd, int argc, char** argv);

// The training settings given as flags (--lr 0.01, --no-normalize), over c.
void apply_setting_flags(const Args& a, TrainConfig& c);

// "usage: deepcanvas-cli train PROJECT [options]" and every option with its
// help; training settings with their range and default.
std::string command_help(const Command& cmd);

// deepcanvas-cli's own usage: every command with its operands and summary,
// --version, then the first command's help.
std::string usage_text(const std::vector<const Command*>& commands);

}  // namespace dc::cli
