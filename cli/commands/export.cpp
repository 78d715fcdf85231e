// deepcanvas-cli export: the network as an ONNX model, or the whole project
// as a PyTorch project.
#include "commands.h"

#include <deepcanvas/device.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/format.h>
#include <deepcanvas/project.h>
#include <deepcanvas/pytorch_export.h>
#include <deepcanvas/qat.h>

#include <deepcanvas/int8_inference.h>
#include <deepcanvas/io.h>
#include <deepcanvas/quantize.h>

#ifdef DC_HAVE_ONNX
#include <deepcanvas/onnx.h>
#include <deepcanvas/onnx_quantize.h>
#endif

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
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
// when it cannot be built) with --checkpoint's weights or the seed's. A
// checkpoint of another network is refused naming its first tensor that
// does not fit; its metadata (the input normalisation) goes to `metadata`.
std::unique_ptr<Plan> export_plan(const Args& a, const Project& p,
                                  std::map<std::string, std::string>* metadata = nullptr) {
  check_network_builds(p);
  auto plan = std::make_unique<Plan>(p.graph, 1);
  const std::string ck = a.get("checkpoint", "");
  if (!ck.empty()) {
    CheckpointInfo info = read_checkpoint(ck);
    plan->load_state(info.model, ck);
    if (metadata) *metadata = info.metadata;
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

#ifdef DC_HAVE_ONNX
float metadata_float(const std::map<std::string, std::string>& m, const char* key,
                     const std::string& ck) {
  try {
    return std::stof(m.at(key));
  } catch (const std::exception&) {
    throw IoError(ck + ": checkpoint metadata lacks the input normalisation (mean/stddev)");
  }
}

// fp16 and int8 models, and any precision with the preprocessing inside.
// int8 is measured before anything is written: the engine simulates the
// QDQ arithmetic on the test set and refuses above --max-drop.
int export_deployment(const Args& a, const std::string& out, const std::string& precision,
                      int opset) {
  const bool json_out = a.flag("json"), quiet = a.flag("quiet") || json_out;
  const std::string ck = a.get("checkpoint", "");
  if (precision == "int8" && ck.empty())
    throw Error(
        "--precision int8 needs --checkpoint FILE: it is calibrated and measured on "
        "trained weights");
  if (precision == "int8" && opset < kOnnxQdqMinOpset)
    throw Error("--precision int8 needs --opset " + std::to_string(kOnnxQdqMinOpset) +
                " or later (per-channel DequantizeLinear)");
  const std::string method_name = a.get("calibration", "percentile");
  const auto method = parse_calibration(method_name);
  if (!method)
    throw Error("--calibration " + method_name +
                " is not known; use minmax, percentile or entropy");
  const int64_t calibrate_n = a.get_int("calibrate", 256, 1, 1 << 20);
  const double max_drop = a.get_double("max-drop", 1.0, 0.0, 100.0);
  const std::string layout = a.get("input-layout", "nchw");
  if (layout != "nchw" && layout != "nhwc")
    throw Error("--input-layout " + layout + " is not known; use nchw or nhwc");
  check_writable("-o", out, false);
  Project p = load_project_operand(a);
  std::map<std::string, std::string> meta;
  const std::unique_ptr<Plan> plan = export_plan(a, p, &meta);
  if (ck.empty() && !quiet)
    std::fprintf(stderr, "note: no --checkpoint: the model holds freshly initialised weights\n");
  OnnxExportOptions o;
  o.opset = opset;
  o.model_name = p.name;
  o.batch = a.get_int("batch", 0, 0, 1 << 20);
  std::map<std::string, Tensor> weights;
  for (auto& [name, t] : plan->state()) weights.emplace(name, t);
  const int64_t fp32_bytes = int64_t(onnx_model_bytes(p.graph, *plan, o).size());

  OnnxPreprocessing pre;
  pre.enabled = a.flag("include-preprocessing");
  pre.nhwc = layout == "nhwc";
  // The datasets: calibration and the gate (int8), and the per-channel
  // normalisation a pretrained base's project names.
  std::unique_ptr<PreparedRun> prepared;
  if (precision == "int8" || pre.enabled) {
    if (pre.enabled && ck.empty())
      throw Error(
          "--include-preprocessing needs --checkpoint FILE (it holds the input "
          "normalisation)");
    CliPrepare cp;
    cp.purpose = RunPurpose::Evaluate;
    cp.config = p.training;
    cp.config.device = parse_device("cpu");
    cp.config.precision = Precision::Fp32;
    cp.config.augment = {};
    cp.device_requested = 1;
    cp.quiet = quiet;
    prepared = std::make_unique<PreparedRun>(prepare(p, a, cp));
    for (Dataset* d : {&prepared->data.data.train, &prepared->data.data.test}) {
      d->mean = metadata_float(meta, "mean", ck);
      d->stddev = metadata_float(meta, "stddev", ck);
    }
    const Dataset& test = prepared->data.data.test;
    const PlanStep& input = plan->steps().front();
    if (pre.enabled && input.out_shape.rank() != 3)
      throw Error("--include-preprocessing needs an image input (channels×height×width); " +
                  input.name + " is " + input.out_shape.str(true));
    if (pre.enabled && test.pixels.empty() && !test.images)
      throw Error("--include-preprocessing is for image datasets (bytes in); " + test.source +
                  " holds float values");
    pre.mean = test.mean;
    pre.stddev = test.stddev;
    pre.channel_mean = test.channel_mean;
    pre.channel_std = test.channel_std;
  }

  json j = {{"path", out}, {"precision", precision}, {"opset", opset}, {"fp32_bytes", fp32_bytes}};
  std::string bytes, int8_text;
  const std::string int8_file = int8_model_path_for(out);
  if (precision == "int8") check_writable("-o", int8_file, false);
  if (precision == "int8") {
    Dataset& train = prepared->data.data.train;
    const Dataset& test = prepared->data.data.test;
    QuantizeOptions qo;
    qo.method = *method;
    qo.calibrate = calibrate_n;
    qo.percentile = a.get_double("percentile", 99.99, 50.0, 100.0);
    qo.seed = p.training.seed;
    QuantNetwork net = fold_batch_norms(plan->steps(), plan->state());
    // A QAT checkpoint brings the ranges it learned: calibrating again
    // would throw them away, so the flags that ask for it are refused.
    const bool qat = is_qat_checkpoint(meta);
    if (qat && (a.has("calibration") || a.has("calibrate") || a.has("percentile")))
      throw Error(ck +
                  " is a quantization-aware (QAT) checkpoint: its int8 ranges are learned and "
                  "kept, so --calibration/--calibrate/--percentile do not apply; drop them (or "
                  "export the fp32 checkpoint to calibrate); nothing written");
    std::vector<int64_t> idx;
    QuantizedNetwork q;
    if (qat) {
      q = load_qat_scales(meta, net, ck);
      if (!quiet)
        std::fprintf(stderr,
                     "using the %zu int8 input ranges learned by quantization-aware fine-tuning "
                     "in %s (no calibration)\n",
                     q.ops.size(), ck.c_str());
    } else {
      idx = calibration_indices(train, calibrate_n, qo.seed);
      if (!quiet)
        std::fprintf(stderr, "calibrating on %zu training samples (%s)...\n", idx.size(),
                     calibration_name(*method));
      q = calibrate(net, train, idx, qo);
    }
    if (!quiet)
      std::fprintf(stderr, "measuring fp32 and simulated int8 on %lld test samples...\n",
                   (long long)test.size());
    const QuantAccuracy acc = evaluate_quantized(q, test, {}, 64);
    j["calibration"] = qat ? "qat" : calibration_name(*method);
    j["calibration_samples"] = idx.size();
    j["fp32_accuracy"] = acc.fp32;
    j["int8_accuracy"] = acc.int8;
    j["test_samples"] = acc.samples;
    j["left_in_float"] = q.left_in_float;
    j["folded"] = q.net.folded;
    if (acc.drop_points() > max_drop) {
      char m[256];
      std::snprintf(m, sizeof m,
                    "the int8 model's test accuracy is %.2f%% against %.2f%% in fp32, %.2f "
                    "points lower (more than --max-drop %.2f); nothing written. ",
                    100 * acc.int8, 100 * acc.fp32, acc.drop_points(), max_drop);
      if (qat)
        throw Error(m + std::string("fine-tune longer (train --qat --init-weights ") + ck +
                    " --epochs N), or use --precision fp16");
      const GateAdvice g = quantization_gate_advice(*method, calibrate_n);
      std::string others;
      for (const std::string& o : g.other_methods) others += (others.empty() ? "" : " or ") + o;
      throw Error(m + std::string("try another calibration (--calibration ") + others +
                  "), more calibration samples (--calibrate " + std::to_string(g.more_samples) +
                  "), quantization-aware fine-tuning (train --qat --init-weights " + ck +
                  " --checkpoint QAT_FILE, then export QAT_FILE), or --precision fp16");
    }
    bytes = onnx_qdq_model_bytes(q, o, pre);
    // The engine's own int8 model (run/predict --int8): the same scales,
    // the weights quantized again from the checkpoint when it is loaded.
    Int8ModelInfo info;
    info.calibration_samples = int64_t(idx.size());
    info.percentile = qo.percentile;
    info.checkpoint = ck;
    int8_text = int8_model_json(q, info);
    j["int8_file"] = int8_file;
    if (!quiet) {
      std::fprintf(stderr, "test accuracy: fp32 %.2f%%, int8 (simulated) %.2f%% on %lld samples\n",
                   100 * acc.fp32, 100 * acc.int8, (long long)acc.samples);
      for (const auto& f : q.net.folded) std::fprintf(stderr, "folded: %s\n", f.c_str());
      std::string quantized, left;
      for (const QuantOp& op : q.ops)
        quantized += (quantized.empty() ? "" : ", ") + q.net.steps[size_t(op.step)].name;
      for (const auto& s : q.left_in_float) left += (left.empty() ? "" : ", ") + s;
      std::fprintf(stderr, "int8 (%s): %s; left in float: %s\n",
                   qat ? "ranges learned by QAT"
                       : (calibration_name(*method) + std::string(" calibration")).c_str(),
                   quantized.empty() ? "nothing" : quantized.c_str(),
                   left.empty() ? "no layer with weights" : left.c_str());
    }
  } else {
    bytes = onnx_float_model_bytes(plan->steps(), weights, o, precision == "fp16", pre);
  }
  write_file_atomic(out, bytes);
  if (!int8_text.empty()) write_file_atomic(int8_file, int8_text);
  j["bytes"] = bytes.size();
  j["include_preprocessing"] = pre.enabled;
  if (json_out) {
    std::cout << j.dump() << std::endl;
  } else if (!a.flag("quiet")) {
    std::fprintf(stderr, "%s ONNX model (opset %d%s) written to %s: %s (fp32: %s, %.0f%%)\n",
                 precision.c_str(), opset,
                 pre.enabled ? (pre.nhwc ? ", uint8 NHWC input" : ", uint8 NCHW input") : "",
                 out.c_str(), human_bytes(double(bytes.size())).c_str(),
                 human_bytes(double(fp32_bytes)).c_str(),
                 100.0 * double(bytes.size()) / double(std::max<int64_t>(fp32_bytes, 1)));
    if (!int8_text.empty())
      std::fprintf(stderr,
                   "int8 scales for the engine written to %s (deepcanvas-cli run/predict --int8 "
                   "%s --checkpoint %s)\n",
                   int8_file.c_str(), int8_file.c_str(), ck.c_str());
  }
  return 0;
}
#endif

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
  const std::string precision = a.get("precision", "fp32");
  if (precision != "fp32" && precision != "fp16" && precision != "int8")
    throw Error("--precision " + precision + " is not supported; use fp32, fp16 or int8");
  if (precision != "fp32" || a.flag("include-preprocessing"))
    return export_deployment(a, out, precision, opset);
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
           {"data", "PATH",
            "pytorch: train.py's default --data; int8: the dataset that calibrates (its training "
            "part) and measures (its test part) (default: the project's dataset)"},
           {"opset", "N",
            "ONNX opset, 10 to 18 (default 17; 12 or lower for OpenCV 4.6's recurrent layers)"},
           {"batch", "N",
            "fix the batch dimension to N (default: any batch; OpenCV 4.6 needs a fixed one for "
            "recurrent layers)"},
           {"precision", "P",
            "onnx: fp32 (default), fp16 (float16 weights and compute, float32 in and out) or "
            "int8 (QDQ: int8 weights per channel, calibrated int8 activations; measured on the "
            "test set first; also writes MODEL.int8.json for run/predict --int8)"},
           {"calibrate", "N",
            "int8: training samples that calibrate the activations (default 256)"},
           {"calibration", "METHOD",
            "int8: minmax, percentile (99.99 % of |x|, default) or entropy (TensorRT's KL "
            "divergence)"},
           {"percentile", "P",
            "int8 with --calibration percentile: the share of |x| kept, 50 to 100 (default "
            "99.99)"},
           {"max-drop", "POINTS",
            "int8: refuse (and write nothing) when the test accuracy drops by more (default 1.0)"},
           {"include-preprocessing", "",
            "onnx: the model takes the picture's uint8 bytes at the Input's size and normalises "
            "them itself"},
           {"input-layout", "L", "with --include-preprocessing: nchw (default) or nhwc"},
           {"json", "", "print one JSON object"}},
      .run = cmd_export};
  return cmd;
}

}  // namespace dc::cli
