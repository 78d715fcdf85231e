// deepcanvas-cli: train, evaluate and inspect DeepCanvas projects without the
// desktop app. Every failure prints one message (naming the file, node or
// field) and exits non-zero; nothing is written unless it succeeds.
#include <deepcanvas/advisor/advise.h>
#include <deepcanvas/advisor/device_bench.h>
#include <deepcanvas/advisor/layer_profile.h>
#include <deepcanvas/advisor/memory_model.h>
#include <deepcanvas/advisor/step_time.h>
#include <deepcanvas/device.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/format.h>
#include <deepcanvas/io.h>
#include <deepcanvas/lr_find.h>
#include <deepcanvas/npy.h>
#ifdef DC_HAVE_ONNX
#include <deepcanvas/onnx.h>
#endif
#include <deepcanvas/parallel.h>
#include <deepcanvas/preflight.h>
#include <deepcanvas/project.h>
#include <deepcanvas/pytorch_export.h>
#include <deepcanvas/sequence_data.h>
#include <deepcanvas/settings.h>
#include <deepcanvas/sysinfo.h>
#include <deepcanvas/trainer.h>
#include <deepcanvas/transfer.h>

#include <unistd.h>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "args.h"
#include "diagnosis.h"
#include "generate.h"
#include "interrupt.h"
#include "outcome.h"
#include "predict.h"
#include "preflight.h"
#include "tune.h"

#ifndef DC_VERSION
#define DC_VERSION "0.0.0"
#endif

namespace dc::cli {
namespace {

// Set during static initialisation, before main: the process's start as
// the end-to-end time to accuracy counts it (train --test-every).
const std::chrono::steady_clock::time_point process_start = std::chrono::steady_clock::now();

using json = nlohmann::json;

// Every command with the options it takes; parse_args() refuses the rest
// and command_help() prints them.
const std::vector<Command>& commands() {
  static const std::vector<Command> cmds = {
      {"train",
       "PROJECT",
       "Train the project's network on its dataset; flags override the project's settings.",
       {{"data", "DIR",
         "dataset folder ('fashion-mnist': Debian's full set) instead of the project's"},
        {"checkpoint", "FILE", "save the trained model (safetensors) there"},
        {"overwrite", "", "replace --checkpoint even with a worse or diverged model"},
        {"checkpoint-dir", "DIR", "write last.safetensors and best.safetensors there every epoch"},
        {"resume", "FILE", "continue from a checkpoint (weights, optimizer state, epoch)"},
        {"steps-per-epoch", "N", "stop each epoch after N steps (quick looks)"},
        {"freeze-until", "LAYER", "freeze LAYER and everything before it (transfer learning)"},
        {"test-every", "N",
         "also measure the test set every N steps (--json: test_curve, with training seconds)"},
        {"json", "", "print one JSON object with the results"},
        {"quiet", "", "no progress output"}},
       true},
      {"eval",
       "PROJECT",
       "Evaluate a checkpoint on the project's test set.",
       {{"checkpoint", "FILE", "the trained model"},
        {"data", "DIR", "dataset folder instead of the project's"},
        {"batch", "N", "evaluation batch (default 256)"},
        {"threads", "N", "CPU threads (0: every core)"},
        {"device", "DEV", "cpu, cuda or cuda:N"},
        {"json", "", "print one JSON object"}}},
      {"predict",
       "PROJECT [IMAGE...]",
       "Classify image files, or a test sample with --index.",
       {{"checkpoint", "FILE", "the trained model"},
        {"index", "N", "predict test sample N instead of image files"},
        {"data", "DIR", "dataset folder for --index"},
        {"top", "K", "classes to show (default 5)"}},
       false,
       -1},
      {"run",
       "PROJECT",
       "Run the network on a NumPy array (inference) and write its output as .npy.",
       {{"checkpoint", "FILE", "the trained model"},
        {"input", "X.npy",
         "the network's input, batch first: float32 as the Input takes it (already "
         "normalised), or int64 token ids for an Embedding input"},
        {"output", "Y.npy", "where the float32 output [N, ...] is written"},
        {"batch", "N", "samples per forward pass (default 64)"},
        {"threads", "N", "CPU threads (0: every core)"},
        {"repeat", "N",
         "run the whole array N times (benchmarking: --json lists each pass's seconds; the "
         "output is the last pass's)"},
        {"json", "", "print one JSON object (with the forward passes' seconds and samples/s)"}}},
      {"export",
       "PROJECT",
       "Write the network as an ONNX model (onnxruntime, OpenCV DNN, TensorRT, Netron), or the "
       "whole project as a PyTorch project that trains with torchrun/DDP, Docker or Kubernetes.",
       {{"checkpoint", "FILE", "the trained model (default: freshly initialised weights)"},
        {"format", "FORMAT", "onnx or pytorch (default: onnx when -o ends in .onnx, else pytorch)"},
        {"output", "MODEL.onnx|DIR", "where the model or the PyTorch project is written (also -o)"},
        {"force", "", "pytorch: replace DIR even when it is not empty"},
        {"data", "PATH", "pytorch: train.py's default --data (default: the project's dataset)"},
        {"opset", "N",
         "ONNX opset, 10 to 18 (default 17; 12 or lower for OpenCV 4.6's recurrent layers)"},
        {"batch", "N",
         "fix the batch dimension to N (default: any batch; OpenCV 4.6 needs a fixed one for "
         "recurrent layers)"},
        {"json", "", "print one JSON object"}}},
      {"import",
       "MODEL.onnx",
       "Turn an ONNX model (e.g. from torch.onnx.export) into a project and its weights.",
       {{"output", "PROJECT.dcproj",
         "where the project is written (also -o); the weights go beside it as "
         "PROJECT.safetensors"},
        {"json", "", "print one JSON object"},
        {"quiet", "", "no progress output"}},
       false,
       1},
      {"transfer",
       "",
       "Write a project that trains a new head on a frozen pretrained base (transfer learning): "
       "the base's layers frozen and loaded from its weights, GlobalAvgPool2D and Dense added.",
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
       false,
       0},
      {"summary",
       "PROJECT",
       "Shapes, parameters, MACs and memory of every layer.",
       {{"batch", "N", "batch for the training-memory estimate (default: the project's)"},
        {"freeze-until", "LAYER", "as train's: count LAYER and everything before it as frozen"},
        {"json", "", "print JSON"}}},
      {"generate",
       "PROJECT",
       "Sample text from a character model.",
       {{"checkpoint", "FILE", "the trained model"},
        {"prompt", "TEXT", "text to start from"},
        {"length", "N", "characters to generate (default 200)"},
        {"temperature", "T", "sampling temperature (default 0.8)"},
        {"top-k", "K", "sample among the K likeliest (0: all)"},
        {"seed", "N", "random seed (default 1)"}}},
      {"lr-find",
       "PROJECT",
       "Learning-rate range test (Smith): a short run with the learning rate rising "
       "exponentially; suggests a learning rate. The project's weights are not touched.",
       {{"data", "DIR", "dataset folder instead of the project's"},
        {"start", "X", "first learning rate (default 1e-7)"},
        {"end", "Y", "last learning rate (default 10)"},
        {"steps", "N", "steps of the test (default 100)"},
        {"json", "", "print one JSON object (suggested_lr, the curve)"}},
       true},
      {"batch-fit",
       "PROJECT",
       "The largest batch whose training fits the device's memory (estimate), and the "
       "learning rate for a new batch (linear and square-root rules, warm-up).",
       {{"data", "DIR", "dataset folder instead of the project's"},
        {"to", "N", "the new batch (default: the largest power of two that fits)"},
        {"json", "", "print one JSON object"}},
       true},
      {"sweep",
       "PROJECT",
       "Hyperparameter sweep: TPE or random search over training settings and layer "
       "attributes, ASHA pruning at its rungs (from a fraction of the first epoch); resumable "
       "(state in PROJECT.sweep.json).",
       {{"param", "NAME=KIND:ARGS",
         "a searched parameter, repeatable: lr=log:1e-4:1e-2, batch=choice:32,64,128, "
         "conv1.filters=int:16:64, dropout.rate=float:0:0.5"},
        {"trials", "N", "trials to run (default 16)"},
        {"epochs", "E", "epochs per trial (default 3)"},
        {"pruner", "asha|none", "stop poor trials early (default asha)"},
        {"eta", "N", "ASHA's reduction factor (default 3)"},
        {"min-epochs", "R",
         "ASHA's first rung in epochs, a fraction allowed (1/3, 0.25); rungs at R*eta^k "
         "(default E/eta^2: with 3 epochs and eta 3, at 1/3 epoch, 1 and 3)"},
        {"sampler", "tpe|random", "how points are chosen (default tpe)"},
        {"seed", "S", "seed of the sampler (default 0); trials train with the project's seed"},
        {"parallel", "K", "trials at once, each single-threaded (at most the cores)"},
        {"no-baseline", "",
         "do not start with the project's own values of the parameters as trial 0"},
        {"state", "FILE", "state file (default PROJECT.sweep.json beside the project)"},
        {"fresh", "", "discard an existing state file instead of continuing it"},
        {"steps-per-epoch", "N", "stop each epoch after N steps (quick looks)"},
        {"data", "DIR", "dataset folder instead of the project's"},
        {"json", "", "print one JSON object (trials, best)"}},
       true},
      {"devices", "", "List the CPU and each NVIDIA GPU.", {{"json", "", "print JSON"}}, false, 0},
      {"advise",
       "PROJECT",
       "Predict training memory, speed, the largest batch and energy here and on each catalog "
       "GPU.",
       {{"batch", "N", "batch size (default: the project's)"},
        {"precision", "P", "fp32, bf16 or fp16 for the GPU rows (default: the project's)"},
        {"samples", "N", "training samples per epoch (default: the project's dataset's)"},
        {"data", "DIR", "dataset folder instead of the project's (its size and what a GPU keeps)"},
        {"profile", "",
         "also train a few steps here on synthetic data and show each layer's measured time "
         "beside its prediction"},
        {"steps", "N", "--profile: steps measured (default 20, after 3 warm-up steps)"},
        {"json", "", "print JSON"}}},
      {"bench-device",
       "",
       "Measure GEMM, convolution and memory speed and the per-step overhead (cached per "
       "machine).",
       {{"device", "DEV", "cpu (default) or cuda:N"},
        {"refresh", "", "measure again even when a cached result exists"},
        {"json", "", "print JSON"}},
       false,
       0},
  };
  return cmds;
}

std::string usage() {
  std::string u =
      "usage: deepcanvas-cli COMMAND [options]   (COMMAND --help: its options)\n\ncommands:\n";
  for (const Command& c : commands()) {
    std::string left = "  " + c.name + (c.operands.empty() ? "" : " " + c.operands);
    left.resize(std::max<size_t>(left.size() + 2, 30), ' ');
    u += left + c.summary + "\n";
  }
  u += "  --version                   version, build options and whether a GPU is usable\n\n";
  return u + command_help(commands().front());
}

double peak_rss_mb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

std::string clock_text(double s) {
  if (!std::isfinite(s) || s < 0) return "--:--";
  // Estimates come from measured and catalog figures; a wild one (a GPU row
  // of 0.001 TFLOP/s) must not overflow the int below.
  if (s >= 100 * 3600) return ">99:59:59";
  int t = int(s + 0.5);
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%02d:%02d", t / 60, t % 60);
  return buf;
}

Project load(const Args& a) {
  if (a.positional.empty()) throw Error("missing PROJECT (a .dcproj file)");
  return load_project(a.positional[0]);
}

// Saves the model of a run stopped by a signal where --resume can pick it up:
// the epochs it completed and the optimizer's step count, so resuming
// repeats only the interrupted epoch.
int save_interrupted(Trainer& t, const InterruptGuard& stop, const TrainConfig& c,
                     const std::string& out_ckpt, int epochs_done, int64_t steps_done) {
  if (steps_done < 0) {
    std::fprintf(stderr, "deepcanvas-cli: %s before the first step; nothing to save\n",
                 stop.signal_name().c_str());
    return kInterruptedExit;
  }
  std::string path = interrupted_checkpoint_path(c.checkpoint_dir, out_ckpt);
  t.save_checkpoint(path, epochs_done, steps_done);
  std::fprintf(stderr,
               "deepcanvas-cli: %s: training stopped after %lld steps (%d complete epochs); "
               "model saved to %s (continue with --resume %s)\n",
               stop.signal_name().c_str(), (long long)steps_done, epochs_done, path.c_str(),
               path.c_str());
  return kInterruptedExit;
}

int cmd_train(const Args& a) {
  Project p = load(a);
  if (a.has("freeze-until")) freeze_until(p.graph, a.get("freeze-until", ""));
  TrainConfig c = p.training;
  apply_setting_flags(a, c);
  c.steps_per_epoch_limit = a.get_int("steps-per-epoch", 0, 0, INT64_MAX);
  c.test_every_steps = a.get_int("test-every", 0, 0, INT64_MAX);
  c.checkpoint_dir = a.get("checkpoint-dir", "");
  c.resume = a.get("resume", "");
  // The project names its base relative to itself; a flag is relative to
  // where the command runs, as every other path on the command line.
  if (!a.has("init-weights")) c.init_weights = resolve_project_file(p, c.init_weights);
  std::string out_ckpt = a.get("checkpoint", "");
  bool as_json = a.flag("json"), quiet = a.flag("quiet");
  if (a.has("device")) {
    require_device(c.device);  // asked for on the command line: unavailable is an error
  } else if (c.device.cuda) {
    // The project was saved on a GPU machine; on this one the CPU still trains
    // it (the same numbers up to rounding), so say why and carry on.
    try {
      require_device(c.device);
    } catch (const Error& e) {
      std::fprintf(stderr, "note: the project asks for %s, but %s; training on the CPU\n",
                   c.device.str().c_str(), e.what());
      c.device = DeviceSpec{};
      if (c.precision != Precision::Fp32) {
        std::fprintf(stderr, "note: %s precision needs a GPU; the CPU computes in fp32\n",
                     enum_name(c.precision));
        c.precision = Precision::Fp32;
      }
    }
  }
  // What would fail late fails first: bad settings, a network that cannot
  // be built or does not fit, an unwritable output, too little memory.
  const std::vector<RunProblem> problems = network_problems(p.graph, c);
  if (const RunProblem* problem = first_blocking(problems)) throw_problem(*problem);
  check_writable("--checkpoint", out_ckpt, false);
  check_writable("--checkpoint-dir", c.checkpoint_dir, true);
  // The advisor's memory model (calibrated against the allocators' peak),
  // the same prediction as batch-fit, advise and the Model Summary.
  check_cpu_memory(p.graph, c, "training");
  ProjectData data = load_project_dataset(p, a.get("data", ""));
  if (!data.note.empty()) std::fprintf(stderr, "note: %s\n", data.note.c_str());
  auto train = std::make_shared<Dataset>(std::move(data.data.train));
  auto test = std::make_shared<Dataset>(std::move(data.data.test));
  for (const RunProblem& problem : run_problems(p.graph, c, train.get(), test.get()))
    if (problem.warning) std::fprintf(stderr, "note: %s\n", problem.message.c_str());

  // For a text model, what ignoring context would reach: the loss to beat.
  const double unigram = train->tokens ? label_entropy(*train) : NAN;
  Trainer t(p.graph, c, train, test);
  const advisor::RunPrediction predicted = advisor::predict_run_here(
      p.graph, c, advisor::cuda_resident_bytes(*train) + advisor::cuda_resident_bytes(*test));
  advisor::Timeline timeline(predicted.diagnosis_input());
  if (!quiet && !c.init_weights.empty())
    std::fprintf(stderr, "weights from %s: %s\n", c.init_weights.c_str(),
                 t.init_report().summary().c_str());
  bool tty = isatty(STDERR_FILENO) && !quiet;
  if (!quiet)
    std::fprintf(stderr, "Training '%s' on %s (%lld train / %lld test samples, %d threads)\n",
                 p.name.c_str(), data.dir.c_str(), (long long)train->size(),
                 (long long)test->size(), resolved_threads(c.threads));
  if (!quiet && std::isfinite(unigram))
    std::fprintf(stderr, "unigram entropy of the training text: %.4f nats per character\n",
                 unigram);
  InterruptGuard stop;
  // Process start to the run's start (dataset, plan, device upload): with
  // the run's own seconds at a test point, the end-to-end time to accuracy.
  const double setup_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - process_start).count();
  t.start();
  auto last_print = std::chrono::steady_clock::now() - std::chrono::seconds(10);
  int last_pct = -1;
  bool done = false;
  json history = json::array();     // per epoch, for benchmarks (--json)
  json test_curve = json::array();  // every --test-every steps
  double first_loss = NAN;          // the untrained model's, to tell divergence
  int epochs_done = 0;              // complete epochs at the last step seen
  int64_t steps_done = -1;
  double final_accuracy = NAN;
  while (!done) {
    if (stop.requested()) t.cancel();
    auto ev = t.events().pop(std::chrono::milliseconds(200));
    if (!ev) continue;
    const TrainEvent& e = *ev;
    timeline.add(e);
    switch (e.kind) {
      case TrainEvent::Kind::Step: {
        if (std::isnan(first_loss)) first_loss = e.batch_loss;
        epochs_done = e.step_in_epoch == e.steps_per_epoch ? e.epoch : e.epoch - 1;
        steps_done = e.step;
        if (quiet) break;
        auto now = std::chrono::steady_clock::now();
        int pct =
            int(100.0 * double(e.step_in_epoch) / double(std::max<int64_t>(1, e.steps_per_epoch)));
        bool due =
            tty ? now - last_print > std::chrono::milliseconds(100) : pct / 25 != last_pct / 25;
        if (!due && e.step_in_epoch != e.steps_per_epoch) break;
        last_print = now;
        last_pct = pct;
        int width = 24, fill = pct * width / 100;
        std::string bar(fill, '#');
        bar += std::string(width - fill, '.');
        std::fprintf(stderr,
                     "%sepoch %d/%d [%s] %3d%%  loss %.4f  acc %.2f%%  %.0f samples/s  ETA %s%s",
                     tty ? "\r" : "", e.epoch, e.epochs, bar.c_str(), pct, e.loss, 100 * e.accuracy,
                     e.samples_per_s, clock_text(e.eta_s).c_str(), tty ? "\033[K" : "\n");
        break;
      }
      case TrainEvent::Kind::Epoch:
        final_accuracy = e.train_accuracy;
        history.push_back(
            {{"epoch", e.epoch},
             {"train_samples_per_s", e.samples_per_s},
             {"train_loss", e.train_loss},
             {"test_accuracy", std::isfinite(e.test_accuracy) ? e.test_accuracy : -1.0}});
        if (!quiet) {
          std::fprintf(stderr, "%sepoch %d/%d: train loss %.4f acc %.2f%%", tty ? "\r\033[K" : "",
                       e.epoch, e.epochs, e.train_loss, 100 * e.train_accuracy);
          if (std::isfinite(e.val_accuracy))
            std::fprintf(stderr, " | val loss %.4f acc %.2f%%", e.val_loss, 100 * e.val_accuracy);
          if (std::isfinite(e.test_accuracy))
            std::fprintf(stderr, " | test loss %.4f acc %.2f%%", e.test_loss,
                         100 * e.test_accuracy);
          std::fprintf(stderr, " | %.0f samples/s%s\n", e.samples_per_s, e.best ? " *" : "");
          if (!e.message.empty()) std::fprintf(stderr, "%s\n", e.message.c_str());
        }
        break;
      case TrainEvent::Kind::Validation:
        if (std::isfinite(e.train_seconds))
          test_curve.push_back({{"step", e.step},
                                {"epoch", e.epoch},
                                {"train_seconds", e.train_seconds},
                                {"run_seconds", e.elapsed_s},
                                {"test_accuracy", e.test_accuracy}});
        break;
      case TrainEvent::Kind::Checkpoint:
        if (!quiet) std::fprintf(stderr, "checkpoint written: %s\n", e.message.c_str());
        break;
      case TrainEvent::Kind::Finished:
      case TrainEvent::Kind::Failed:
      case TrainEvent::Kind::Cancelled:
        done = true;
        break;
      default:
        break;
    }
  }
  t.wait();
  const TrainResult& r = t.result();
  if (r.cancelled && stop.requested())
    return save_interrupted(t, stop, c, out_ckpt, epochs_done, steps_done);
  if (!r.ok) throw Error("training failed: " + r.error);
  const bool diverged = run_diverged(first_loss, r.final_train_loss);
  SaveDecision save = decide_save(out_ckpt, a.flag("overwrite"), diverged, r.test_accuracy);
  if (!save.path.empty()) {
    t.save_checkpoint(save.path, r.epochs_run, 0, r.test_accuracy);
    if (!quiet) std::fprintf(stderr, "model saved to %s\n", save.path.c_str());
  }
  if (!save.note.empty()) std::fprintf(stderr, "note: %s\n", save.note.c_str());
  if (diverged) {
    char what[256];
    std::snprintf(what, sizeof what,
                  "training diverged: the training loss rose from %.4g at the first step to %.4g "
                  "(train accuracy %.2f%%); lower the learning rate (--lr, now %g) or normalise "
                  "the inputs",
                  first_loss, r.final_train_loss, 100 * final_accuracy, c.optimizer.lr);
    throw Error(what);
  }
  if (as_json) {
    json j = {{"test_accuracy", r.test_accuracy},
              {"test_top5", r.test_top5},
              {"test_loss", r.test_loss},
              {"train_samples_per_s", r.train_samples_per_s},
              {"epochs", r.epochs_run},
              {"best_epoch", r.best_epoch},
              {"train_seconds", r.train_seconds},
              {"final_train_loss", r.final_train_loss},
              {"batch", c.batch},
              {"threads", num_threads()},
              {"peak_rss_mb", peak_rss_mb()},
              {"peak_tensor_bytes", r.peak_tensor_bytes},
              {"device", c.device.str()},
              {"history", history}};
    if (std::isfinite(r.val_accuracy)) j["val_accuracy"] = r.val_accuracy;
    if (!c.init_weights.empty())
      j["init_weights"] = {{"file", c.init_weights},
                           {"loaded_layers", t.init_report().loaded_layers.size()},
                           {"loaded_tensors", t.init_report().loaded_tensors},
                           {"fresh_layers", t.init_report().fresh_layers},
                           {"unused_tensors", t.init_report().unused.size()}};
    if (c.device.cuda) j["peak_device_bytes"] = r.peak_device_bytes;
    if (c.test_every_steps > 0) {
      j["test_curve"] = test_curve;
      j["setup_seconds"] = setup_seconds;
    }
    if (std::isfinite(unigram)) j["unigram_entropy"] = unigram;
    j["diagnosis"] = diagnosis_json(predicted, timeline.diagnose(), r, c.device.cuda);
    std::cout << j.dump() << std::endl;
  } else {
    std::printf("test accuracy %.2f%% (top-5 %.2f%%), %d epochs, %.1f s training, %.0f samples/s\n",
                100 * r.test_accuracy, 100 * r.test_top5, r.epochs_run, r.train_seconds,
                r.train_samples_per_s);
    print_diagnosis(predicted, timeline.diagnose(), r, c.device.cuda);
  }
  return 0;
}

// Loads the project, a checkpoint into a plan, and returns both.
struct Loaded {
  Project project;
  std::unique_ptr<Plan> plan;
  CheckpointInfo ck;
  float mean = 0, stddev = 1;
  std::vector<std::string> class_names;
};

Loaded load_trained(const Args& a, int64_t batch) {
  Loaded l;
  l.project = load(a);
  std::string ck = a.get("checkpoint", "");
  if (ck.empty()) throw Error("missing --checkpoint FILE (written by 'train --checkpoint')");
  // eval, run and predict only run forward: layers share output buffers.
  l.plan = std::make_unique<Plan>(l.project.graph, batch, Plan::Use::Inference);
  l.ck = read_checkpoint(ck);
  l.plan->load_state(l.ck.model, ck);
  try {
    l.mean = std::stof(l.ck.metadata.at("mean"));
    l.stddev = std::stof(l.ck.metadata.at("stddev"));
    auto names = json::parse(l.ck.metadata.at("class_names"), nullptr, false);
    if (names.is_array())
      for (auto& n : names)
        if (n.is_string()) l.class_names.push_back(n);
  } catch (const std::exception&) {
    throw IoError(ck + ": checkpoint metadata lacks the input normalisation (mean/stddev)");
  }
  return l;
}

int cmd_eval(const Args& a) {
  int64_t batch = a.get_int("batch", 256, 1, 1 << 20);
  set_num_threads(int(a.get_int("threads", 0, 0, 1024)));
  Loaded l = load_trained(a, batch);
  ProjectData d = load_project_dataset(l.project, a.get("data", ""));
  if (!d.note.empty()) std::fprintf(stderr, "note: %s\n", d.note.c_str());
  Dataset& test = d.data.test;
  test.mean = l.mean;
  test.stddev = l.stddev;
  auto loss = make_loss(l.project.training.loss, float(l.project.training.label_smoothing));
  TrainConfig run = l.project.training;  // evaluated in fp32, without augmentation
  run.device = parse_device(a.get("device", "cpu"));
  run.batch = batch;
  run.precision = Precision::Fp32;
  run.augment = {};
  EvalResult r;
  if (DeviceBackend* backend = require_device(run.device)) {
    auto dp = backend->create_plan(l.project.graph, *l.plan, DevicePlanOptions::for_training(run));
    dp->upload_params();
    int h = dp->add_dataset(test);
    r = evaluate_device(*dp, h, test, l.plan->output_shape(), {}, batch, *loss);
  } else {
    r = evaluate(*l.plan, test, {}, batch, *loss);
  }
  if (a.flag("json")) {
    json j = {{"test_accuracy", r.top1},
              {"test_top5", r.top5},
              {"test_loss", r.loss},
              {"samples", r.samples},
              {"confusion", r.confusion}};
    std::cout << j.dump() << std::endl;
    return 0;
  }
  std::printf("%lld test samples: accuracy %.2f%%, top-5 %.2f%%, loss %.4f\n", (long long)r.samples,
              100 * r.top1, 100 * r.top5, r.loss);
  std::printf("confusion matrix (rows: true class, columns: predicted):\n");
  for (size_t i = 0; i < r.confusion.size(); ++i) {
    std::printf("%14s",
                i < l.class_names.size() ? l.class_names[i].c_str() : std::to_string(i).c_str());
    for (int64_t v : r.confusion[i]) std::printf(" %5lld", (long long)v);
    std::printf("\n");
  }
  return 0;
}

// What an export writes: the project's network (refused with the reason
// when it cannot be built) with --checkpoint's weights or the seed's.
std::unique_ptr<Plan> export_plan(const Args& a, const Project& p) {
  if (auto problems = network_problems(p.graph, p.training); !problems.empty())
    for (const RunProblem& problem : problems)
      if (problem.kind == RunProblem::Kind::Network) throw_problem(problem);
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
  Project p = load(a);
  const std::unique_ptr<Plan> owned = export_plan(a, p);
  const Plan& plan = *owned;
  const std::string ck = a.get("checkpoint", "");
  PyTorchExportOptions o;
  o.force = a.flag("force");
  o.version = DC_VERSION;
  o.data_path = a.get("data", "");
  o.weights_source = ck;
  export_pytorch(out, p, plan, o);
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
  Project p = load(a);
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

// Arrays in, arrays out: the ecosystem's way to compare a network with its
// PyTorch, onnxruntime or OpenCV counterpart on exactly the same numbers.
int cmd_run(const Args& a) {
  const std::string in_path = a.get("input", ""), out_path = a.get("output", "");
  if (in_path.empty()) throw Error("missing --input X.npy (the network's input, batch first)");
  if (out_path.empty()) throw Error("missing --output Y.npy (where the output is written)");
  check_writable("--output", out_path, false);
  int64_t batch = a.get_int("batch", 64, 1, 1 << 16);
  set_num_threads(int(a.get_int("threads", 0, 0, 1024)));
  NpyArray x = load_npy(in_path);
  // Plan for no more samples than the array holds: a batch of 64 of a large
  // input would reserve memory that one sample never uses.
  if (x.data.shape().rank() > 0) batch = std::clamp<int64_t>(x.data.shape()[0], 1, batch);
  Loaded l = load_trained(a, batch);
  const Shape& in = l.plan->input_shape();
  const std::vector<int64_t>& dims = x.data.shape().dims();
  if (dims.size() != in.rank() + 1 ||
      !std::equal(in.dims().begin(), in.dims().end(), dims.begin() + 1))
    throw DataError(in_path + ": the array's shape is " + Shape(dims).str(true) +
                    " but the network's Input takes N x " + in.str(true) +
                    " (batch first); reshape it to that");
  const int64_t n = dims[0];
  if (n == 0) throw DataError(in_path + ": the array holds no samples (its first dimension is 0)");
  const Shape& out_sample = l.plan->output_shape();
  Tensor y(out_sample.with_batch(n));
  const int64_t in_row = in.numel(), out_row = out_sample.numel();
  const int64_t repeat = a.get_int("repeat", 1, 1, 1000);
  RunContext ctx{false, nullptr};
  // Seconds per pass over the array: the forward passes and their copies,
  // not loading the project, the weights or the array.
  std::vector<double> pass_seconds;
  for (int64_t r = 0; r < repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t at = 0; at < n; at += batch) {
      const int64_t b = std::min(batch, n - at);
      Tensor xb(in.with_batch(b));
      std::copy_n(x.data.f32() + at * in_row, b * in_row, xb.f32());
      const Tensor& out = l.plan->forward(xb, ctx);
      std::copy_n(out.f32(), b * out_row, y.f32() + at * out_row);
    }
    pass_seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  save_npy(out_path, y);
  if (a.flag("json")) {
    std::vector<double> sorted = pass_seconds;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted[sorted.size() / 2];
    std::cout << json({{"samples", n},
                       {"input", x.data.shape().dims()},
                       {"output", y.shape().dims()},
                       {"path", out_path},
                       {"batch", batch},
                       {"threads", num_threads()},
                       {"pass_seconds", pass_seconds},
                       {"samples_per_s", median > 0 ? double(n) / median : 0.0}})
                     .dump()
              << std::endl;
  } else if (!a.flag("quiet"))
    std::fprintf(stderr, "%lld samples %s -> %s written to %s\n", (long long)n,
                 x.data.shape().str(true).c_str(), y.shape().str(true).c_str(), out_path.c_str());
  return 0;
}

int cmd_predict(const Args& a) {
  Loaded l = load_trained(a, 1);
  int top = int(a.get_int("top", 5, 1, 1000));
  std::vector<std::pair<std::string, Tensor>> inputs;  // label, [1, ...input]
  const Shape& in = l.plan->input_shape();
  if (a.has("index")) {
    ProjectData d = load_project_dataset(l.project, a.get("data", ""));
    if (!d.note.empty()) std::fprintf(stderr, "note: %s\n", d.note.c_str());
    Dataset& test = d.data.test;
    int64_t i = a.get_int("index", 0, 0, test.size() - 1);
    test.mean = l.mean;
    test.stddev = l.stddev;
    Tensor x(in.with_batch(1));
    int32_t label;
    test.gather(&i, 1, x.f32(), &label);
    std::string truth =
        label < int(l.class_names.size()) ? l.class_names[label] : std::to_string(label);
    inputs.emplace_back("test sample " + std::to_string(i) + " (true class: " + truth + ")", x);
  }
  for (const std::string& path : image_paths(
           {a.positional.begin() + std::min<size_t>(1, a.positional.size()), a.positional.end()}))
    inputs.emplace_back(
        path, load_image_input(path, in, l.mean, l.stddev, l.project.dataset.preprocess.mean,
                               l.project.dataset.preprocess.std));
  if (inputs.empty()) throw Error("nothing to predict: give image files or --index N");
  RunContext ctx{false, nullptr};
  for (auto& [what, x] : inputs) {
    const Tensor& out = l.plan->forward(x, ctx);
    int c = int(out.numel());
    std::vector<double> prob(c);
    double mx = -1e30, sum = 0;
    for (int i = 0; i < c; ++i) mx = std::max(mx, double(out.f32()[i]));
    for (int i = 0; i < c; ++i) sum += prob[i] = std::exp(double(out.f32()[i]) - mx);
    std::vector<int> order(c);
    for (int i = 0; i < c; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return prob[x] > prob[y]; });
    std::printf("%s\n", what.c_str());
    for (int k = 0; k < std::min(top, c); ++k) {
      int i = order[k];
      std::string name =
          i < int(l.class_names.size()) ? l.class_names[i] : "class " + std::to_string(i);
      std::printf("  %-14s %6.2f%%\n", name.c_str(), 100 * prob[i] / sum);
    }
  }
  return 0;
}

int cmd_summary(const Args& a) {
  Project p = load(a);
  if (a.has("freeze-until")) freeze_until(p.graph, a.get("freeze-until", ""));
  int64_t batch = a.get_int("batch", p.training.batch, 1, 1 << 20);
  for (const RunProblem& problem : network_problems(p.graph, p.training))
    if (problem.kind == RunProblem::Kind::Network) throw_problem(problem);  // before allocating
  Plan plan(p.graph, 1);
  auto rows = plan.summary();
  int64_t params = 0, macs = 0, act = 0;
  for (auto& r : rows) {
    params += r.cost.params;
    macs += r.cost.macs;
    if (!is_input_type(r.type)) act += r.activation_bytes;
  }
  // The advisor's memory model: the figure the app's summary, advise,
  // batch-fit and train's memory check give.
  advisor::MemoryOptions mo;
  mo.batch = batch;
  mo.optimizer = p.training.optimizer;
  const int64_t train_bytes = advisor::predict_memory(p.graph, mo).total;
  const FreezeSavings fz = plan.freeze_savings();
  if (a.flag("json")) {
    json layers = json::array();
    for (auto& r : rows) {
      json l = {{"name", r.name},         {"type", r.type},
                {"output", r.out.dims()}, {"params", r.cost.params},
                {"macs", r.cost.macs},    {"activation_bytes", r.activation_bytes}};
      if (r.frozen) l["trainable"] = false;
      layers.push_back(l);
    }
    std::cout << json{{"layers", layers},
                      {"params", params},
                      {"trainable_params", fz.trainable_params},
                      {"frozen_params", fz.frozen_params},
                      {"macs", macs},
                      {"activation_bytes_per_sample", act},
                      {"batch", batch},
                      {"training_bytes", train_bytes},
                      {"frozen_saves_bytes", fz.bytes_saved(batch)},
                      {"frozen_saves_backward_macs_per_sample", fz.backward_macs_saved}}
                     .dump(2)
              << std::endl;
    return 0;
  }
  std::printf("%-16s %-16s %-14s %12s %12s %12s\n", "layer", "type", "output", "params", "MACs",
              "act/sample");
  for (auto& r : rows)
    std::printf("%-16s %-16s %-14s %12s %12s %12s%s\n", r.name.c_str(), r.type.c_str(),
                r.out.str(true).c_str(), human_count(double(r.cost.params)).c_str(),
                human_count(double(r.cost.macs)).c_str(),
                r.fused_into.empty() ? human_bytes(double(r.activation_bytes)).c_str()
                                     : ("in " + r.fused_into).c_str(),
                r.frozen ? "  frozen" : "");
  std::printf("total: %s parameters (%s), %s MACs per sample, %s activations per sample\n",
              human_count(double(params)).c_str(), human_bytes(double(params) * 4).c_str(),
              human_count(double(macs)).c_str(), human_bytes(double(act)).c_str());
  std::printf(
      "training at batch %lld needs about %s (activations and their gradients, weights, "
      "gradients, optimizer state, batches and scratch)\n",
      (long long)batch, human_bytes(double(train_bytes)).c_str());
  if (fz.frozen_nodes > 0)
    std::printf(
        "frozen: %s of the parameters (%s trainable); freezing saves about %s at batch %lld "
        "and %s backward MACs per sample\n",
        human_count(double(fz.frozen_params)).c_str(),
        human_count(double(fz.trainable_params)).c_str(),
        human_bytes(double(fz.bytes_saved(batch))).c_str(), (long long)batch,
        human_count(double(fz.backward_macs_saved)).c_str());
  return 0;
}

int cmd_devices(const Args& a) {
  std::string why;
  std::vector<GpuInfo> gpus = list_gpus(&why);
  if (a.flag("json")) {
    json j = {
        {"cpu",
         {{"name", advisor::cpu_model_name()}, {"threads", std::thread::hardware_concurrency()}}}};
    json g = json::array();
    for (const GpuInfo& d : gpus)
      g.push_back(
          {{"device", "cuda:" + std::to_string(d.index)},
           {"name", d.name},
           {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
           {"multiprocessors", d.multiprocessors},
           {"memory_bytes", d.total_bytes},
           {"free_bytes", d.free_bytes},
           {"tensor_cores", d.tensor_cores}});
    j["cuda"] = g;
    if (gpus.empty()) j["cuda_unavailable"] = why;
    std::cout << j.dump() << std::endl;
    return 0;
  }
  std::printf("cpu      %s, %u hardware threads\n", advisor::cpu_model_name().c_str(),
              std::thread::hardware_concurrency());
  if (gpus.empty()) std::printf("cuda     not available: %s\n", why.c_str());
  for (const GpuInfo& d : gpus)
    std::printf(
        "cuda:%-3d %s, compute capability %d.%d, %d SMs, %.1f GiB (%.1f GiB free), "
        "tensor cores: %s, driver CUDA %d.%d\n",
        d.index, d.name.c_str(), d.cc_major, d.cc_minor, d.multiprocessors,
        double(d.total_bytes) / (1 << 30), double(d.free_bytes) / (1 << 30),
        d.tensor_cores ? "yes" : "no", d.driver_version / 1000, d.driver_version % 1000 / 10);
  return 0;
}

int cmd_bench_device(const Args& a) {
  const DeviceSpec dev = parse_device(a.get("device", "cpu"));
  bool cached = false;
  const advisor::DeviceBench b = dev.cuda
                                     ? advisor::gpu_bench(dev.index, a.flag("refresh"), &cached)
                                     : advisor::cpu_bench(a.flag("refresh"), &cached);
  if (a.flag("json")) {
    json j = json::parse(advisor::bench_to_json(b));
    j["cached"] = cached;
    j["cache_file"] = advisor::bench_cache_path();
    std::cout << j.dump() << std::endl;
    return 0;
  }
  const char* again = cached ? " (cached; --refresh measures again)" : "";
  if (dev.cuda)
    std::printf("%s (%s)%s\n", b.name.c_str(), b.device.c_str(), again);
  else
    std::printf("%s, %d threads%s\n", b.name.c_str(), b.threads, again);
  std::printf("  fp32 GEMM        %8.1f GFLOP/s\n", b.fp32_gflops);
  if (dev.cuda) {
    std::printf("  bf16 GEMM        %8.1f GFLOP/s (tensor cores)\n", b.bf16_gflops);
    std::printf("  fp16 GEMM        %8.1f GFLOP/s (tensor cores)\n", b.fp16_gflops);
  }
  std::printf("  conv2d forward   %8.1f GFLOP/s\n", b.conv_gflops);
  if (b.depthwise_gflops > 0)
    std::printf("  depthwise conv   %8.1f GFLOP/s forward, %.1f backward\n", b.depthwise_gflops,
                b.depthwise_bwd_gflops);
  std::printf("  memory bandwidth %8.1f GB/s", b.mem_bandwidth_gbs);
  if (b.mem_bandwidth_samples.size() > 1) {
    // Shared hosts move this figure between runs: say what it is made of.
    std::string list;
    for (double v : b.mem_bandwidth_samples)
      list += (list.empty() ? "" : ", ") + std::to_string(int(v + 0.5));
    std::printf(" (median of the last %zu measurements: %s)", b.mem_bandwidth_samples.size(),
                list.c_str());
  }
  std::printf("\n");
  if (dev.cuda) std::printf("  host to device   %8.1f GB/s (pinned)\n", b.h2d_gbs);
  std::printf(dev.cuda ? "  launch overhead  %8.1f us\n" : "  per-step overhead %7.1f us\n",
              b.step_overhead_s * 1e6);
  std::printf("  measured %s, cached in %s\n", b.measured_at.c_str(),
              advisor::bench_cache_path().c_str());
  return 0;
}

// Training samples per epoch (the option, else the dataset's after its
// validation split) and the bytes a GPU run keeps resident (the training
// and test sets). --samples alone reads no dataset (resident 0); the
// project's dataset unreadable gives a note and 60000 samples; a --data
// folder unreadable is an error.
std::pair<int64_t, int64_t> epoch_samples(const Args& a, const Project& p, std::string& note) {
  if (a.has("samples") && !a.has("data")) return {a.get_int("samples", 0, 1, int64_t(1) << 40), 0};
  try {
    const ProjectData d = load_project_dataset(p, a.get("data", ""));
    const int64_t resident =
        advisor::cuda_resident_bytes(d.data.train) + advisor::cuda_resident_bytes(d.data.test);
    const int64_t samples =
        a.has("samples") ? a.get_int("samples", 0, 1, int64_t(1) << 40)
                         : int64_t(double(d.data.train.size()) * (1.0 - p.training.val_split));
    return {samples, resident};
  } catch (const std::exception& e) {
    if (a.has("data")) throw;
    note = std::string("dataset not read (") + e.what() + "); epoch times assume 60000 samples";
    return {60000, 0};
  }
}

// advise --profile: the step-time model's per-layer prediction for this
// machine beside the layers' measured times.
int print_layer_profile(const Args& a, const Project& p, int64_t batch,
                        const advisor::DeviceBench& bench) {
  const int steps = int(a.get_int("steps", 20, 1, 100000));
  const advisor::StepTime pred =
      advisor::predict_step_time(p.graph, batch, advisor::cpu_rates(bench), 4);
  const advisor::LayerProfile m =
      advisor::profile_layers(p.graph, batch, p.training.optimizer, steps);
  auto predicted = [&](const std::string& name) {
    for (const advisor::LayerTime& l : pred.layers)
      if (l.name == name) return l.seconds;
    return 0.0;
  };
  if (a.flag("json")) {
    json layers = json::array();
    for (const advisor::MeasuredLayer& l : m.layers)
      layers.push_back({{"name", l.name},
                        {"type", l.type},
                        {"predicted_s", predicted(l.name)},
                        {"measured_s", l.seconds}});
    std::cout << json{{"batch", batch},
                      {"steps", m.steps},
                      {"layers", layers},
                      {"optimizer",
                       {{"predicted_s", pred.optimizer_s}, {"measured_s", m.optimizer_s}}},
                      {"step", {{"predicted_s", pred.step_s}, {"measured_s", m.step_s}}}}
                     .dump()
              << std::endl;
    return 0;
  }
  std::printf("batch %lld on %s, %d steps measured (synthetic data, no loader or loss)\n",
              (long long)batch, bench.name.c_str(), m.steps);
  std::printf("%-24s %-12s %12s %12s %8s\n", "layer", "type", "predicted", "measured", "error");
  auto row = [](const std::string& name, const std::string& type, double p, double x) {
    char err[16] = "-";
    if (x > 0) std::snprintf(err, sizeof err, "%+.0f %%", 100 * (p - x) / x);
    std::printf("%-24.24s %-12.12s %9.3f ms %9.3f ms %8s\n", name.c_str(), type.c_str(), p * 1e3,
                x * 1e3, err);
  };
  for (const advisor::MeasuredLayer& l : m.layers)
    row(l.name, l.type, predicted(l.name), l.seconds);
  row("(optimizer)", "", pred.optimizer_s, m.optimizer_s);
  row("(step overhead)", "", pred.overhead_s, 0);
  row("step", "", pred.step_s, m.step_s);
  return 0;
}

int cmd_advise(const Args& a) {
  Project p = load(a);
  for (const RunProblem& problem : network_problems(p.graph, p.training))
    if (problem.kind == RunProblem::Kind::Network) throw_problem(problem);
  const int64_t batch = a.get_int("batch", p.training.batch, 1, 1 << 20);
  Precision prec = p.training.precision;
  if (a.has("precision")) {
    const auto v = enum_from_name<Precision>(a.get("precision", ""));
    if (!v) throw Error("--precision must be fp32, bf16 or fp16");
    prec = *v;
  }
  std::string note;
  const auto [samples, resident] = epoch_samples(a, p, note);
  bool cached = false;
  const advisor::DeviceBench bench = advisor::cpu_bench(false, &cached);
  // This machine's GPUs that bench-device has measured get rows of their own.
  std::vector<advisor::MeasuredGpu> here;
  for (const GpuInfo& g : list_gpus()) {
    advisor::MeasuredGpu m;
    m.memory_bytes = g.total_bytes;
    if (advisor::load_cached_bench(advisor::gpu_bench_key(g.index, g.name), m.bench))
      here.push_back(m);
  }
  const advisor::Advice adv =
      advisor::advise(p, batch, prec, samples, bench, advisor::load_gpu_catalog(), resident, here);
  if (a.flag("profile")) {
    // It runs real steps at that batch: refuse what would not fit, as train does.
    TrainConfig c = p.training;
    c.batch = batch;
    c.device = DeviceSpec{};
    check_cpu_memory(p.graph, c, "profiling");
    return print_layer_profile(a, p, batch, bench);
  }
  if (a.flag("json")) {
    auto row = [](const advisor::DeviceAdvice& d) {
      return json{{"name", d.name},
                  {"fits", d.fits},
                  {"memory_bytes", d.memory_bytes},
                  {"training_bytes", d.training_bytes},
                  {"max_batch", d.max_batch},
                  {"predicted_samples_per_s", d.samples_per_s},
                  {"step_seconds", d.step_s},
                  {"epoch_seconds", d.epoch_s}};
    };
    json gpus = json::array();
    for (const auto& g : adv.gpus) {
      json r = row(g);
      r["tdp_w"] = g.tdp_w;
      r["energy_wh_per_epoch"] = g.energy_wh;
      r["allocator_bytes"] = g.allocator_bytes;
      gpus.push_back(r);
    }
    json j = {{"batch", batch},
              {"precision", enum_name(prec)},
              {"train_samples", samples},
              {"this_machine", row(adv.this_machine)},
              {"gpus", gpus}};
    if (!note.empty()) j["note"] = note;
    std::cout << j.dump() << std::endl;
    return 0;
  }
  if (!note.empty()) std::fprintf(stderr, "note: %s\n", note.c_str());
  std::printf("batch %lld, %s, %lld samples per epoch%s\n", (long long)batch, enum_name(prec),
              (long long)samples, cached ? "" : " (this machine was just benchmarked)");
  std::printf("%-30s %10s %10s %5s %9s %11s %10s %9s\n", "device", "memory", "needs", "fits",
              "max batch", "samples/s", "epoch", "Wh/epoch");
  auto wh = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, v < 10 ? "%.2f" : "%.0f", v);
    return std::string(b);
  };
  auto line = [&](const advisor::DeviceAdvice& d, bool energy) {
    std::printf("%-30.30s %10s %10s %5s %9lld %11.0f %10s %9s\n", d.name.c_str(),
                human_bytes(double(d.memory_bytes)).c_str(),
                human_bytes(double(d.training_bytes)).c_str(), d.fits ? "yes" : "no",
                (long long)d.max_batch, d.samples_per_s, clock_text(d.epoch_s).c_str(),
                energy ? wh(d.energy_wh).c_str() : "-");
  };
  line(adv.this_machine, false);
  for (const auto& g : adv.gpus) line(g, true);
  std::printf(
      "this machine: measured rates (bench-device); GPUs: catalog figures with assumed "
      "efficiencies, an estimate\n");
  return 0;
}

int run(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(usage().c_str(), stderr);
    return 2;
  }
  std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::fputs(usage().c_str(), stdout);
    return 0;
  }
  if (cmd == "--version") {
    std::printf("deepcanvas-cli %s (OpenCV: %s, GEMM: %s, CUDA: %s)\n", DC_VERSION,
                opencv_enabled() ? "on" : "off", gemm_backend_name(), cuda_status().c_str());
    return 0;
  }
  const Command* command = nullptr;
  for (const Command& c : commands())
    if (c.name == cmd) command = &c;
  if (!command) {
    std::fprintf(stderr, "deepcanvas-cli: unknown command '%s'\n\n%s", cmd.c_str(),
                 usage().c_str());
    return 2;
  }
  register_builtin_layers();
  Args a = parse_args(*command, argc - 2, argv + 2);
  if (a.has("help")) {
    std::fputs(command_help(*command).c_str(), stdout);
    return 0;
  }
  if (cmd == "train") return cmd_train(a);
  if (cmd == "eval") return cmd_eval(a);
  if (cmd == "predict") return cmd_predict(a);
  if (cmd == "run") return cmd_run(a);
  if (cmd == "export") return cmd_export(a);
  if (cmd == "import") return cmd_import(a);
  if (cmd == "transfer") return cmd_transfer(a);
  if (cmd == "summary") return cmd_summary(a);
  if (cmd == "generate") return cmd_generate(a);
  if (cmd == "lr-find") return cmd_lr_find(a);
  if (cmd == "batch-fit") return cmd_batch_fit(a);
  if (cmd == "sweep") return cmd_sweep(a);
  if (cmd == "bench-device") return cmd_bench_device(a);
  if (cmd == "advise") return cmd_advise(a);
  return cmd_devices(a);
}

}  // namespace
}  // namespace dc::cli

int main(int argc, char** argv) {
  try {
    return dc::cli::run(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "deepcanvas-cli: out of memory\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "deepcanvas-cli: %s\n", e.what());
  }
  return 1;
}
