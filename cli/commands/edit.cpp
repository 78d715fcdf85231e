// deepcanvas-cli edit: set layer attributes of a project from the command
// line (the Input's shape for a folder of photos, a Dense's units), as the
// app's Properties panel does: each value is checked against the
// attribute's spec, the network must still build, and only then is the
// project saved (atomically), so a mistake leaves the file as it was.
#include "commands.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/graph.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/project.h>

#include <cstdio>
#include <string>
#include <vector>

#include "../common.h"

namespace dc::cli {

namespace {

int cmd_edit(const Args& a) {
  Project p = load_project_operand(a);
  std::vector<std::string> sets;
  if (auto it = a.repeated.find("set"); it != a.repeated.end()) sets = it->second;
  if (sets.empty())
    throw Error(
        "nothing to set: give --set LAYER.ATTRIBUTE=VALUE (e.g. --set input.shape=3x64x64)");
  std::vector<std::string> changes;
  for (const std::string& s : sets) {
    const size_t eq = s.find('='), dot = s.rfind('.', eq);
    if (eq == std::string::npos || dot == std::string::npos || dot == 0 || dot + 1 == eq)
      throw Error("--set " + s + ": expected LAYER.ATTRIBUTE=VALUE, e.g. input.shape=3x64x64");
    const std::string layer = s.substr(0, dot), attr = s.substr(dot + 1, eq - dot - 1),
                      text = s.substr(eq + 1), what = s.substr(0, eq);
    const Node* n = p.graph.find_by_name(layer);
    if (!n) {
      std::string names;
      for (const auto& [id, node] : p.graph.nodes())
        names += (names.empty() ? "" : ", ") + node.name;
      throw Error("--set " + s + ": the network has no layer named '" + layer +
                  "'; its layers are " + names);
    }
    const LayerDescriptor& d = LayerRegistry::instance().get(n->type);
    const AttrSpec* spec = d.find_attr(attr);
    if (!spec) {
      std::string names;
      for (const AttrSpec& as : d.attrs) names += (names.empty() ? "" : ", ") + as.name;
      throw Error("--set " + s + ": '" + layer + "' (" + n->type + ") has no attribute '" + attr +
                  "'" + (names.empty() ? std::string(" (it has none)") : "; it has " + names));
    }
    const std::string before =
        n->attrs.has(attr) ? attr_to_string(n->attrs.get(attr)) : attr_to_string(spec->def);
    AttrValue v;
    try {
      v = parse_attr_text(*spec, text);
    } catch (const Error& e) {
      throw Error("--set " + what + ": " + e.what());
    }
    p.graph.set_attr(n->id, attr, v);  // checks the value against its spec
    changes.push_back(what + ": " + before + " -> " + attr_to_string(v));
  }
  // The network must still build (shapes that fit) before anything is saved.
  check_network_builds(p);
  const std::string out = a.get("output", p.file);
  save_project(p, out);
  for (const std::string& c : changes) std::printf("%s\n", c.c_str());
  std::printf("saved %s\n", out.c_str());
  return 0;
}

}  // namespace

const Command& edit_command() {
  static const Command cmd{
      .name = "edit",
      .operands = "PROJECT",
      .summary =
          "Set layer attributes (--set input.shape=3x64x64): checked, the network must "
          "still build, then the project is saved.",
      .options = {{"set", "LAYER.ATTR=VALUE",
                   "an attribute to set, repeatable: input.shape=3x64x64, fc.units=20, "
                   "drop.rate=0.3 (lists as 3x64x64 or 3,64,64)"},
                  {"output", "FILE", "save there instead of over PROJECT"}},
      .run = cmd_edit};
  return cmd;
}

}  // namespace dc::cli
