#pragma once
// Minimal "--name value" / "--flag" parser with range-checked numbers, so a
// typo gives a message instead of std::stoi's exception text.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dc::cli {

struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;  // flags map to ""
  bool has(const std::string& k) const { return options.count(k) != 0; }
  bool flag(const std::string& k) const { return has(k); }
  std::string get(const std::string& k, const std::string& def) const;
  int64_t get_int(const std::string& k, int64_t def, int64_t lo, int64_t hi) const;
  double get_double(const std::string& k, double def, double lo, double hi) const;
};

// Options that take no value.
Args parse_args(int argc, char** argv);

}  // namespace dc::cli
