// deepcanvas-cli transfer: a project that trains a new head on a frozen
// pretrained base.
#include "commands.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/format.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/project.h>
#include <deepcanvas/transfer.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "../preflight.h"

namespace dc::cli {

namespace {

using json = nlohmann::json;

int cmd_transfer(const Args& a) {
  const std::string out = a.get("output", "");
  if (out.empty()) throw Error("missing -o PROJECT.dcproj (where the project is written)");
  const PretrainedBase& base = pretrained_base(a.get("base", "efficientnet_lite0"));
  TransferOptions o;
  o.size = a.get_int("size", 0, 0, 1024);
  o.classes = a.get_int("classes", 10, 2, 1 << 20);
  o.dataset.path = a.get("data", "sample:fashion-mnist-subset");
  if (o.dataset.path != "fashion-mnist" && o.dataset.path.rfind("sample:", 0) != 0)
    o.dataset.path = std::filesystem::absolute(o.dataset.path).lexically_normal().string();
  check_writable("-o", out, false);
  Project p;
  if (a.has("from")) {
    const std::string from = a.get("from", "");
    const std::string weights =
        std::filesystem::path(from).replace_extension(".safetensors").string();
    if (!std::filesystem::exists(weights))
      throw IoError(weights +
                    ": the base's weights are missing (import writes them beside the "
                    "project: deepcanvas-cli import MODEL.onnx -o " +
                    from + ")");
    const Project b = load_project(from);
    p = transfer_project_from(b, weights, b.name, base, o);
  } else {
    p = transfer_project(base, o);
  }
  save_project(p, out);
  Plan plan(p.graph, 1);
  if (a.flag("json"))
    std::cout << json({{"project", out},
                       {"init_weights", p.training.init_weights},
                       {"layers", p.graph.nodes().size()},
                       {"trainable_parameters", plan.num_parameters()},
                       {"frozen_parameters", plan.num_frozen_parameters()},
                       {"input", plan.input_shape().dims()}})
                     .dump()
              << std::endl;
  else
    std::fprintf(stderr,
                 "%s: %zu layers, %s trainable and %s frozen parameters, input %s; weights from "
                 "%s\n",
                 out.c_str(), p.graph.nodes().size(), human_count(plan.num_parameters()).c_str(),
                 human_count(plan.num_frozen_parameters()).c_str(),
                 plan.input_shape().str().c_str(), p.training.init_weights.c_str());
  return 0;
}

}  // namespace

const Command& transfer_command() {
  static const Command cmd{
      .name = "transfer",
      .operands = "",
      .summary =
          "Write a project that trains a new head on a frozen pretrained base (transfer learning): "
          "the base's layers frozen and loaded from its weights, GlobalAvgPool2D and Dense added.",
      .options =
          {{"output", "PROJECT.dcproj", "where the project is written (also -o)"},
           {"base", "ID",
            "a fetched base (default efficientnet_lite0; fetch it with "
            "installer/fetch-pretrained.sh)"},
           {"from", "BASE.dcproj",
            "use an imported model (deepcanvas-cli import) as the base instead; its weights are "
            "BASE.safetensors beside it"},
           {"size", "N", "input size in pixels (default: the base's; a multiple of 32)"},
           {"data", "DIR",
            "the dataset folder, 'fashion-mnist' (Debian's full set) or 'sample:NAME' (default: "
            "the bundled Fashion-MNIST subset)"},
           {"classes", "N", "classes of the new head (default 10)"},
           {"json", "", "print one JSON object"}},
      .max_operands = 0,
      .run = cmd_transfer};
  return cmd;
}

}  // namespace dc::cli
