#include "args.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/format.h>
#include <deepcanvas/settings.h>

#include <algorithm>
#include <set>

namespace dc::cli {

namespace {

// Every option name the command knows, and which of them take no value.
struct Known {
  std::set<std::string> all, flags;
};

Known known_options(const Command& cmd) {
  Known k;
  // Every command takes these, so scripts can pass --quiet uniformly.
  for (const char* common : {"help", "quiet"}) {
    k.all.insert(common);
    k.flags.insert(common);
  }
  for (const auto& o : cmd.options) {
    k.all.insert(o.name);
    if (o.value.empty()) k.flags.insert(o.name);
  }
  if (cmd.training_settings)
    for (const auto& s : training_settings()) {
      if (s.flag.empty()) continue;
      k.all.insert(s.flag);
      if (s.attr.type == AttrType::Bool) {
        // --augment-flip turns it on, --no-augment-flip off; --augment-flip=false works too.
        k.flags.insert(s.flag);
        k.all.insert("no-" + s.flag);
        k.flags.insert("no-" + s.flag);
      }
    }
  return k;
}

}  // namespace

Args parse_args(const Command& cmd, int argc, char** argv) {
  const Known known = known_options(cmd);
  Args a;
  for (int i = 0; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "-o" && known.all.count("output")) s = "--output";  // as compilers spell it
    if (s.rfind("--", 0) == 0 && s.size() > 2) {
      std::string k = s.substr(2), v;
      const auto eq = k.find('=');
      const bool inline_value = eq != std::string::npos;
      if (inline_value) {
        v = k.substr(eq + 1);
        k = k.substr(0, eq);
      }
      if (!known.all.count(k)) {
        std::string best;
        size_t best_d = SIZE_MAX;
        for (const auto& o : known.all)
          if (size_t d = edit_distance(k, o); d < best_d) best_d = d, best = o;
        std::string hint =
            best_d <= std::max<size_t>(2, k.size() / 3) ? "; did you mean --" + best + "?" : "";
        throw Error("unknown option --" + k + " for '" + cmd.name + "'" + hint +
                    " ('deepcanvas-cli " + cmd.name + " --help' lists them)");
      }
      if (!inline_value && !known.flags.count(k)) {
        if (i + 1 >= argc) throw Error("option --" + k + " needs a value");
        v = argv[++i];
      }
      a.options[k] = v;
      a.repeated[k].push_back(v);
    } else {
      a.positional.push_back(s);
    }
  }
  if (cmd.max_operands >= 0 && int(a.positional.size()) > cmd.max_operands && !a.has("help")) {
    const std::string extra = a.positional[size_t(cmd.max_operands)];
    throw Error("unexpected argument '" + extra + "' for '" + cmd.name +
                "' (usage: deepcanvas-cli " + cmd.name +
                (cmd.operands.empty() ? "" : " " + cmd.operands) + " [options])");
  }
  return a;
}

void apply_setting_flags(const Args& a, TrainConfig& c) {
  for (const SettingSpec& s : training_settings()) {
    if (s.flag.empty()) continue;
    if (a.has(s.flag)) {
      const std::string v = a.get(s.flag, "");
      s.set(c, parse_setting_text(s, s.attr.type == AttrType::Bool && v.empty() ? "true" : v));
    }
    if (a.has("no-" + s.flag)) s.set(c, false);
  }
}

std::string command_help(const Command& cmd) {
  std::string out = "usage: deepcanvas-cli " + cmd.name +
                    (cmd.operands.empty() ? "" : " " + cmd.operands) + " [options]\n" +
                    cmd.summary + "\n";
  // Option in a 30-column margin, help wrapped at 100 columns.
  auto line = [&](const std::string& left, const std::string& help) {
    std::string l = "  " + left;
    l += l.size() < 30 ? std::string(30 - l.size(), ' ') : "\n" + std::string(30, ' ');
    size_t col = 30;
    for (size_t at = 0; at < help.size();) {
      size_t end = help.find(' ', at);
      if (end == std::string::npos) end = help.size();
      const std::string word = help.substr(at, end - at);
      if (col > 30 && col + 1 + word.size() > 100) {
        l += "\n" + std::string(30, ' ');
        col = 30;
      } else if (col > 30) {
        l += ' ';
        ++col;
      }
      l += word;
      col += word.size();
      at = end + 1;
    }
    out += l + "\n";
  };
  if (!cmd.options.empty()) {
    out += "\noptions:\n";
    for (const auto& o : cmd.options)
      line("--" + o.name + (o.value.empty() ? "" : " " + o.value), o.help);
  }
  if (cmd.training_settings) {
    out += "\ntraining settings (override the project's \"training\" values):\n";
    std::string group;
    for (const auto& s : training_settings()) {
      if (s.flag.empty()) continue;
      if (s.group != group) out += " " + (group = s.group) + ":\n";
      std::string value = s.attr.type == AttrType::Bool    ? ""
                          : s.attr.type == AttrType::Int   ? " N"
                          : s.attr.type == AttrType::Float ? " X"
                                                           : " WORD";
      std::string flag = "--" + s.flag + value;
      if (s.attr.type == AttrType::Bool) flag += ", --no-" + s.flag;
      line(flag, s.attr.help + " (" + setting_range_text(s) + ")");
    }
  }
  return out;
}

std::string usage_text(const std::vector<const Command*>& commands) {
  std::string u =
      "usage: deepcanvas-cli COMMAND [options]   (COMMAND --help: its options)\n\ncommands:\n";
  for (const Command* c : commands) {
    std::string left = "  " + c->name + (c->operands.empty() ? "" : " " + c->operands);
    left.resize(std::max<size_t>(left.size() + 2, 30), ' ');
    u += left + c->summary + "\n";
  }
  u += "  --version                   version, build options and whether a GPU is usable\n\n";
  return u + command_help(*commands.front());
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
