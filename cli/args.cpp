#include "args.h"

#include <deepcanvas/errors.h>

#include <set>

namespace dc::cli {

static const std::set<std::string> kFlags = {"json", "quiet", "augment-flip", "overwrite"};

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 0; i < argc; ++i) {
    std::string s = argv[i];
    if (s.rfind("--", 0) == 0 && s.size() > 2) {
      std::string k = s.substr(2), v;
      auto eq = k.find('=');
      if (eq != std::string::npos) {
        v = k.substr(eq + 1);
        k = k.substr(0, eq);
      } else if (!kFlags.count(k)) {
        if (i + 1 >= argc) throw Error("option --" + k + " needs a value");
        v = argv[++i];
      }
      a.options[k] = v;
    } else {
      a.positional.push_back(s);
    }
  }
  return a;
}

std::string Args::get(const std::string& k, const std::string& def) const {
  auto it = options.find(k);
  return it == options.end() ? def : it->second;
}

int64_t Args::get_int(const std::string& k, int64_t def, int64_t lo, int64_t hi) const {
  auto it = options.find(k);
  if (it == options.end()) return def;
  try {
    size_t used = 0;
    long long v = std::stoll(it->second, &used);
    if (used == it->second.size() && v >= lo && v <= hi) return v;
  } catch (const std::exception&) {
  }
  throw Error("--" + k + " must be an integer in [" + std::to_string(lo) + ", " +
              std::to_string(hi) + "], got '" + it->second + "'");
}

double Args::get_double(const std::string& k, double def, double lo, double hi) const {
  auto it = options.find(k);
  if (it == options.end()) return def;
  try {
    size_t used = 0;
    double v = std::stod(it->second, &used);
    if (used == it->second.size() && v >= lo && v <= hi) return v;
  } catch (const std::exception&) {
  }
  throw Error("--" + k + " must be a number in [" + std::to_string(lo) + ", " + std::to_string(hi) +
              "], got '" + it->second + "'");
}

}  // namespace dc::cli
