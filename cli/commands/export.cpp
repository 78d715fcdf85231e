// deepcanvas-cli export: the network as an ONNX model, or the whole project
// as a PyTorch project.
#include "commands.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/format.h>
#include <deepcanvas/project.h>
#include <deepcanvas/pytorch_export.h>

#ifdef DC_HAVE_ONNX
#include <deepcanvas/onnx.h>
#endif

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "../common.h"
#include "../preflight.h"

#ifndef DC_VERSION
#define DC_VERSION "0.0.0"
#endif

namespace dc::cli {

namespace {

using json = nlohmann::json;

// What an export writes: the project's network (refused with the reason
// when it cannot be built) with --checkpoint's weights or the seed's.
std::unique_ptr<Plan> export_plan(const Args& a, const Project& p) {
  check_network_builds(p);
  auto plan = std::make_unique<Plan>(p.graph, 1);
  const std::string ck = a.get("checkpoint", "");
  if (!ck.empty()) {
    plan->load_state(read_checkpoint(ck).model, ck);
  } else {
    plan->init_params(p.training.seed);
  }
  return plan;
}

// The PyTorch project: model.py, train.py and what runs them anywhere.
int export_pytorch_project(const Args& a, const std::string& out) {
  Project p = load_project_operand(a);
  const std::unique_ptr<Plan> owned = export_plan(a, p);
  const Plan& plan = *owned;
  const std::string ck = a.get("checkpoint", "");
  PyTorchExportOptions o;
  o.force = a.flag("force");
  o.version = DC_VERSION;
  o.data_path = a.get("data", "");
  o.weights_source = ck;
  try {
    export_pytorch(out, p, plan, o);
  } catch (const IoError& e) {
    // The engine refuses before it writes anything and names no flag: the
    // folder as it still is says which of ours is the remedy.
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path target = fs::path(out).lexically_normal();
    if (!target.has_filename() && target.has_parent_path()) target = target.parent_path();
    if (fs::exists(target, ec) && !fs::is_directory(target, ec))
      throw IoError(out + " exists and is not a folder; choose another -o");
    if (!o.force && fs::is_directory(target, ec) && !fs::is_empty(target, ec))
      throw IoError(out +
                    " exists and is not empty; choose another -o or pass --force to "
                    "replace it");
    throw;
  }
  if (a.flag("json"))
    std::cout << json({{"path", out}, {"format", "pytorch"}, {"parameters", plan.num_parameters()}})
                     .dump()
              << std::endl;
  else if (!a.flag("quiet"))
    std::fprintf(stderr, "PyTorch project (%s parameters, %s weights) written to %s; see %s\n",
                 human_count(plan.num_parameters()).c_str(),
                 ck.empty() ? "freshly initialised" : "trained", out.c_str(),
                 (std::filesystem::path(out) / "README.md").lexically_normal().c_str());
  return 0;
}

int cmd_export(const Args& a) {
  const std::string out = a.get("output", "");
  if (out.empty())
    throw Error(
        "missing -o MODEL.onnx (an ONNX model) or -o DIR (a PyTorch project written to DIR)");
  const bool onnx_name = out.size() > 5 && out.compare(out.size() - 5, 5, ".onnx") == 0;
  const std::string format = a.get("format", onnx_name ? "onnx" : "pytorch");
  if (format != "onnx" && format != "pytorch")
    throw Error("--format " + format + " is not supported; use --format onnx or --format pytorch");
  if (format == "pytorch") return export_pytorch_project(a, out);
#ifdef DC_HAVE_ONNX
  const int opset = int(a.get_int("opset", 17, kOnnxMinOpset, kOnnxMaxOpset));
  check_writable("-o", out, false);
  Project p = load_project_operand(a);
  const std::unique_ptr<Plan> owned = export_plan(a, p);
  const Plan& plan = *owned;
  if (a.get("checkpoint", "").empty() && !a.flag("quiet"))
    std::fprintf(stderr, "note: no --checkpoint: the model holds freshly initialised weights\n");
  OnnxExportOptions o;
  o.opset = opset;
  o.model_name = p.name;
  o.batch = a.get_int("batch", 0, 0, 1 << 20);
  export_onnx(out, p.graph, plan, o);
  if (a.flag("json"))
    std::cout << json({{"path", out},
                       {"opset", opset},
                       {"parameters", plan.num_parameters() + plan.num_frozen_parameters()}})
                     .dump()
              << std::endl;
  else if (!a.flag("quiet"))
    std::fprintf(stderr, "ONNX model (opset %d, %s parameters) written to %s\n", opset,
                 human_count(plan.num_parameters() + plan.num_frozen_parameters()).c_str(),
                 out.c_str());
  return 0;
#else
  throw Error("this build of deepcanvas-cli has no ONNX support; install libonnx-dev and rebuild");
#endif
}

}  // namespace

const Command& export_command() {
  static const Command cmd{
      .name = "export",
      .operands = "PROJECT",
      .summary =
          "Write the network as an ONNX model (onnxruntime, OpenCV DNN, TensorRT, Netron), or the "
          "whole project as a PyTorch project that trains with torchrun/DDP, Docker or Kubernetes.",
      .options =
          {{"checkpoint", "FILE", "the trained model (default: freshly initialised weights)"},
           {"format", "FORMAT",
            "onnx or pytorch (default: onnx when -o ends in .onnx, else pytorch)"},
           {"output", "MODEL.onnx|DIR",
            "where the model or the PyTorch project is written (also -o)"},
           {"force", "", "pytorch: replace DIR even when it is not empty"},
           {"data", "PATH", "pytorch: train.py's default --data (default: the project's dataset)"},
           {"opset", "N",
            "ONNX opset, 10 to 18 (default 17; 12 or lower for OpenCV 4.6's recurrent layers)"},
           {"batch", "N",
            "fix the batch dimension to N (default: any batch; OpenCV 4.6 needs a fixed one for "
            "recurrent layers)"},
           {"json", "", "print one JSON object"}},
      .run = cmd_export};
  return cmd;
}

}  // namespace dc::cli
