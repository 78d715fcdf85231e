// deepcanvas-cli import: an ONNX model turned into a project and its weights.
#include "commands.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/format.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/project.h>

#ifdef DC_HAVE_ONNX
#include <deepcanvas/onnx.h>
#endif

#include <cstdio>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "../preflight.h"

namespace dc::cli {

namespace {

using json = nlohmann::json;

int cmd_import(const Args& a) {
  const std::string out = a.get("output", "");
  if (out.empty()) throw Error("missing -o PROJECT.dcproj (where the project is written)");
#ifdef DC_HAVE_ONNX
  if (a.positional.empty()) throw Error("missing MODEL.onnx (the model to import)");
  const std::string model = a.positional[0];
  check_writable("-o", out, false);
  const std::string ck = import_onnx(model, out);
  const Project p = load_project(out);
  Plan plan(p.graph, 1);
  if (a.flag("json"))
    std::cout << json({{"project", out},
                       {"checkpoint", ck},
                       {"layers", p.graph.nodes().size()},
                       {"parameters", plan.num_parameters()}})
                     .dump()
              << std::endl;
  else if (!a.flag("quiet"))
    std::fprintf(stderr, "%zu layers, %s parameters: project written to %s, weights to %s\n",
                 p.graph.nodes().size(), human_count(plan.num_parameters()).c_str(), out.c_str(),
                 ck.c_str());
  return 0;
#else
  throw Error("this build of deepcanvas-cli has no ONNX support; install libonnx-dev and rebuild");
#endif
}

}  // namespace

const Command& import_command() {
  static const Command cmd{
      .name = "import",
      .operands = "MODEL.onnx",
      .summary = "Turn an ONNX model (e.g. from torch.onnx.export) into a project and its weights.",
      .options = {{"output", "PROJECT.dcproj",
                   "where the project is written (also -o); the weights go beside it as "
                   "PROJECT.safetensors"},
                  {"json", "", "print one JSON object"},
                  {"quiet", "", "no progress output"}},
      .run = cmd_import};
  return cmd;
}

}  // namespace dc::cli
