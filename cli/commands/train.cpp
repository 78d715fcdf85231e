// deepcanvas-cli train: trains the project's network, reports progress
// from the trainer's events, saves the model and closes with a diagnosis.
#include "commands.h"

#include <deepcanvas/advisor/diagnose.h>
#include <deepcanvas/advisor/memory_model.h>
#include <deepcanvas/advisor/run_prediction.h>
#include <deepcanvas/device.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/format.h>
#include <deepcanvas/io.h>
#include <deepcanvas/parallel.h>
#include <deepcanvas/preflight.h>
#include <deepcanvas/project.h>
#include <deepcanvas/qat.h>
#include <deepcanvas/quantize.h>
#include <deepcanvas/run_log.h>
#include <deepcanvas/sequence_data.h>
#include <deepcanvas/settings.h>
#include <deepcanvas/trainer.h>
#include <deepcanvas/transfer.h>

#include <unistd.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../common.h"
#include "../diagnosis.h"
#include "../interrupt.h"
#include "../outcome.h"
#include "../preflight.h"

namespace dc::cli {

namespace {

using json = nlohmann::json;

// Set during static initialisation, before main: the process's start as
// the end-to-end time to accuracy counts it (train --test-every).
const std::chrono::steady_clock::time_point process_start = std::chrono::steady_clock::now();

double peak_rss_mb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
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

// A checkpoint's metadata without its tensors' checks, for telling a QAT
// checkpoint apart; a file that cannot be read is the run's to report.
bool names_qat_checkpoint(const std::string& path) {
  if (path.empty()) return false;
  try {
    return is_qat_checkpoint(load_safetensors(path).metadata);
  } catch (const std::exception&) {
    return false;
  }
}

// train --qat: quantization-aware fine-tuning of an fp32 checkpoint on the
// CPU (quant/qat.cpp), written as a QAT checkpoint whose learned int8
// ranges export --precision int8 keeps.
int cmd_train_qat(const Args& a) {
  const bool as_json = a.flag("json"), quiet = a.flag("quiet") || as_json;
  Project p = load_project_operand(a);
  TrainConfig c = p.training;
  apply_setting_flags(a, c);
  // --init-weights is how train takes starting weights; the project's own
  // (a pretrained base for transfer learning) is not an fp32 model of this
  // network, so the flag is required.
  const std::string init = a.get("init-weights", "");
  const std::string out = a.get("checkpoint", "");
  if (init.empty())
    throw Error(
        "train --qat needs --init-weights FP32_CHECKPOINT: the trained fp32 model it fine-tunes "
        "(and --checkpoint OUT, where the QAT model goes)");
  if (out.empty())
    throw Error(
        "train --qat needs --checkpoint OUT: where the quantization-aware model is written");
  for (const char* f : {"resume", "checkpoint-dir", "test-every", "freeze-until"})
    if (a.has(f))
      throw Error(std::string("train --qat does not take --") + f +
                  " (it fine-tunes every layer of --init-weights and writes --checkpoint)");
  {
    std::error_code ec;
    if (std::filesystem::equivalent(init, out, ec))
      throw Error("--checkpoint " + out +
                  " is the fp32 model --init-weights reads; write the QAT model elsewhere");
    if (std::filesystem::exists(out, ec) && !a.flag("overwrite"))
      throw Error("--checkpoint " + out + " exists; choose another file or pass --overwrite");
  }
  if (c.device.cuda) {
    if (a.has("device"))
      throw Error(
          "train --qat runs on the CPU only (its fake quantization has no CUDA kernels); use "
          "--device cpu");
    if (!quiet)
      std::fprintf(stderr,
                   "note: the project trains on %s; quantization-aware fine-tuning runs on the "
                   "CPU\n",
                   c.device.str().c_str());
  }
  const std::string method_name = a.get("calibration", "percentile");
  const auto method = parse_calibration(method_name);
  if (!method)
    throw Error("--calibration " + method_name +
                " is not known; use minmax, percentile or entropy");
  QuantizeOptions qo;
  qo.method = *method;
  qo.calibrate = a.get_int("calibrate", 256, 1, 1 << 20);
  qo.percentile = a.get_double("percentile", 99.99, 50.0, 100.0);
  qo.seed = c.seed;
  check_writable("--checkpoint", out, false);

  // The network first: a checkpoint of another one is refused before any
  // data is read.
  check_network_builds(p);
  CheckpointInfo info = read_checkpoint(init);
  Plan plan(p.graph, 1);
  plan.load_state(info.model, init);
  const bool from_qat = is_qat_checkpoint(info.metadata);
  if (from_qat && (a.has("calibration") || a.has("calibrate") || a.has("percentile")))
    throw Error(init +
                " is a QAT checkpoint: fine-tuning goes on from its learned ranges, which "
                "--calibration/--calibrate would replace; drop them, or start from the fp32 "
                "checkpoint");

  c.device = parse_device("cpu");
  c.precision = Precision::Fp32;
  c.augment = {};
  CliPrepare cp;
  cp.purpose = RunPurpose::Evaluate;
  cp.config = c;
  cp.device_requested = 1;
  cp.quiet = quiet;
  PreparedRun prepared = prepare(p, a, cp);
  Dataset& train = prepared.data.data.train;
  Dataset& test = prepared.data.data.test;
  // The inputs normalised as the checkpoint was trained, as export does.
  for (Dataset* d : {&train, &test}) {
    try {
      d->mean = std::stof(info.metadata.at("mean"));
      d->stddev = std::stof(info.metadata.at("stddev"));
    } catch (const std::exception&) {
      throw IoError(init + ": checkpoint metadata lacks the input normalisation (mean/stddev)");
    }
  }
  set_num_threads(c.threads);

  const QuantNetwork net = fold_batch_norms(plan.steps(), plan.state());
  QuantizedNetwork start;
  if (from_qat) {
    start = load_qat_scales(info.metadata, net, init);
    if (!quiet)
      std::fprintf(stderr, "continuing from the learned int8 ranges of %s\n", init.c_str());
  } else {
    const std::vector<int64_t> idx = calibration_indices(train, qo.calibrate, qo.seed);
    if (!quiet)
      std::fprintf(stderr, "calibrating the starting int8 ranges on %zu training samples (%s)...\n",
                   idx.size(), calibration_name(qo.method));
    start = calibrate(net, train, idx, qo);
  }
  if (start.ops.empty())
    throw Error("the network has no Conv2D or Dense layer to quantize; nothing to fine-tune");

  QatOptions o;
  // A fine-tuning, not a training run: few epochs at a tenth of the
  // project's learning rate unless the flags say otherwise.
  o.epochs = a.has("epochs") ? c.epochs : 3;
  o.optimizer = c.optimizer;
  if (!a.has("lr")) o.optimizer.lr = c.optimizer.lr / 10;
  o.batch = c.batch;
  o.loss = c.loss;
  o.label_smoothing = c.label_smoothing;
  o.seed = c.seed;
  o.steps_per_epoch_limit = a.get_int("steps-per-epoch", 0, 0, INT64_MAX);
  if (!quiet) {
    for (const auto& f : net.folded) std::fprintf(stderr, "folded: %s\n", f.c_str());
    std::fprintf(stderr,
                 "Quantization-aware fine-tuning of '%s' on the CPU: %d epochs, lr %g (%s), batch "
                 "%lld, %lld train / %lld test samples\n",
                 p.name.c_str(), o.epochs, o.optimizer.lr, enum_name(o.optimizer.type),
                 (long long)o.batch, (long long)train.size(), (long long)test.size());
  }
  json history = json::array();
  QuantAccuracy first, last;
  auto on_epoch = [&](const QatEpoch& e) {
    if (e.epoch == 0) first = e.test;
    last = e.test;
    history.push_back({{"epoch", e.epoch},
                       {"train_loss", std::isfinite(e.train_loss) ? e.train_loss : -1.0},
                       {"fp32_accuracy", e.test.fp32},
                       {"int8_accuracy", e.test.int8}});
    if (quiet) return;
    if (e.epoch == 0)
      std::fprintf(stderr, "start (%s): test fp32 %.2f%%, int8 (simulated) %.2f%%\n",
                   from_qat ? "learned ranges" : calibration_name(qo.method), 100 * e.test.fp32,
                   100 * e.test.int8);
    else
      std::fprintf(stderr, "epoch %d/%d: train loss %.4f | test fp32 %.2f%%, int8 %.2f%%\n",
                   e.epoch, e.epochs, e.train_loss, 100 * e.test.fp32, 100 * e.test.int8);
  };
  InterruptGuard stop;
  bool cancelled = false;
  const QuantizedNetwork q = train_qat(
      start, train, test, o, on_epoch, {}, [&] { return stop.requested(); }, &cancelled);
  if (cancelled) {
    std::fprintf(stderr,
                 "deepcanvas-cli: %s: quantization-aware fine-tuning stopped; nothing written\n",
                 stop.signal_name().c_str());
    return kInterruptedExit;
  }
  write_qat_checkpoint(out, plan.steps(), plan.state(), q, info.metadata, init, o.epochs,
                       last.samples > 0 ? last.int8 : NAN);
  if (as_json) {
    std::cout << json({{"checkpoint", out},
                       {"start_int8_accuracy", first.int8},
                       {"fp32_accuracy", last.fp32},
                       {"int8_accuracy", last.int8},
                       {"test_samples", last.samples},
                       {"epochs", o.epochs},
                       {"start", from_qat ? std::string("qat") : calibration_name(qo.method)},
                       {"history", history}})
                     .dump()
              << std::endl;
  } else if (!a.flag("quiet")) {
    std::fprintf(stderr,
                 "QAT model saved to %s (int8 test accuracy %.2f%%, from %.2f%% at the start); "
                 "export it with its learned ranges:\n  deepcanvas-cli export %s --checkpoint %s "
                 "--format onnx --precision int8 -o model.onnx\n",
                 out.c_str(), 100 * last.int8, 100 * first.int8, a.positional.at(0).c_str(),
                 out.c_str());
  }
  return 0;
}

int cmd_train(const Args& a) {
  if (a.flag("qat")) return cmd_train_qat(a);
  Project p = load_project_operand(a);
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
  for (const std::string& f : {c.init_weights, c.resume})
    if (names_qat_checkpoint(f))
      throw Error(f +
                  " is a quantization-aware (QAT) checkpoint: its BatchNorms are folded into "
                  "the convolutions and its int8 ranges are learned; fine-tune it further with "
                  "train --qat --init-weights " +
                  f + ", or train from the fp32 checkpoint");
  std::string out_ckpt = a.get("checkpoint", "");
  bool as_json = a.flag("json"), quiet = a.flag("quiet");
  // What would fail late fails first: bad settings, a network that cannot
  // be built or does not fit, an unwritable output, too little memory, data
  // that does not fit the network. A GPU the project names but this machine
  // lacks falls back to the CPU with a note; one asked for with --device is
  // an error.
  CliPrepare o;
  o.purpose = RunPurpose::Train;
  o.config = c;
  o.outputs = {{"--checkpoint", out_ckpt, false}, {"--checkpoint-dir", c.checkpoint_dir, true}};
  o.quiet = quiet;
  PreparedRun prepared = prepare(p, a, o);
  c = prepared.config;
  ProjectData& data = prepared.data;
  auto train = std::make_shared<Dataset>(std::move(data.data.train));
  auto test = std::make_shared<Dataset>(std::move(data.data.test));

  // For a text model, what ignoring context would reach: the loss to beat.
  const double unigram = train->tokens ? label_entropy(*train) : NAN;
  // The Trainer's messages name settings' keys; here they are flags.
  std::unique_ptr<Trainer> made;
  try {
    made = std::make_unique<Trainer>(p.graph, c, train, test);
  } catch (const IoError& e) {
    throw IoError(with_flags(e.what()));
  } catch (const DataError& e) {
    throw DataError(with_flags(e.what()));
  } catch (const GraphError& e) {
    throw GraphError(with_flags(e.what()));
  } catch (const Error& e) {
    throw Error(with_flags(e.what()));
  }
  Trainer& t = *made;
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
  // metrics.jsonl and the TensorBoard event file: problems with them are
  // said once and never stop the run.
  std::unique_ptr<RunRecorder> recorder;
  {
    RunRecordOptions ro;
    // Not --checkpoint-dir by default: that folder holds checkpoints only
    // (scripts and tests rely on it), and the runs folder gathers every run.
    ro.dir = a.get("log-dir", "");
    if (ro.dir.empty()) ro.dir = new_run_folder(p.name);
    ro.tensorboard = !a.flag("no-tensorboard");
    ro.append = !c.resume.empty();
    ro.project = p.name;
    ro.settings_text = run_settings_text(c);
    recorder = std::make_unique<RunRecorder>(ro);
    if (!quiet) std::fprintf(stderr, "run log: %s\n", ro.dir.c_str());
  }
  auto record = [&](const TrainEvent& e) {
    recorder->add(e);
    const std::string problem = recorder->take_problem();
    if (!problem.empty()) std::fprintf(stderr, "deepcanvas-cli: %s\n", problem.c_str());
  };
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
    record(e);
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
        // Validation and test losses where the epoch measured them (a run
        // without a validation split has none), for curves from --json.
        for (const auto& [key, v] :
             {std::pair{"val_loss", e.val_loss}, std::pair{"val_accuracy", e.val_accuracy},
              std::pair{"test_loss", e.test_loss}})
          if (std::isfinite(v)) history.back()[key] = v;
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
  print_bad_images(*train, *test);
  if (!r.ok) throw Error("training failed: " + with_flags(r.error));
  const bool diverged = run_diverged(first_loss, r.final_train_loss);
  SaveDecision save = decide_save(out_ckpt, a.flag("overwrite"), diverged, r.test_accuracy);
  if (!save.path.empty()) {
    t.save_checkpoint(save.path, r.epochs_run, 0, r.test_accuracy);
    if (!quiet) std::fprintf(stderr, "model saved to %s\n", save.path.c_str());
  }
  print_note(save.note);
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

}  // namespace

const Command& train_command() {
  static const Command cmd{
      .name = "train",
      .operands = "PROJECT",
      .summary =
          "Train the project's network on its dataset; flags override the project's settings.",
      .options =
          {{"data", "DIR",
            "dataset folder ('fashion-mnist': Debian's full set) instead of the project's"},
           {"checkpoint", "FILE", "save the trained model (safetensors) there"},
           {"qat", "",
            "quantization-aware fine-tuning for int8 (CPU): from the fp32 model --init-weights, "
            "BatchNorms folded, int8 ranges calibrated then learned; writes --checkpoint for "
            "export --precision int8 (default 3 epochs at a tenth of the learning rate)"},
           {"calibrate", "N", "--qat: training samples that calibrate the starting ranges (256)"},
           {"calibration", "METHOD",
            "--qat: minmax, percentile (default) or entropy, for the starting ranges"},
           {"percentile", "P", "--qat with --calibration percentile: 50 to 100 (99.99)"},
           {"overwrite", "", "replace --checkpoint even with a worse or diverged model"},
           {"checkpoint-dir", "DIR",
            "write last.safetensors and best.safetensors there every epoch"},
           {"resume", "FILE", "continue from a checkpoint (weights, optimizer state, epoch)"},
           {"log-dir", "DIR",
            "write metrics.jsonl and a TensorBoard event file there (default: a new folder in "
            "~/.local/share/DeepCanvas/runs)"},
           {"no-tensorboard", "", "no TensorBoard event file (metrics.jsonl is still written)"},
           {"steps-per-epoch", "N", "stop each epoch after N steps (quick looks)"},
           {"freeze-until", "LAYER", "freeze LAYER and everything before it (transfer learning)"},
           {"test-every", "N",
            "also measure the test set every N steps (--json: test_curve, with training seconds)"},
           {"json", "", "print one JSON object with the results"},
           {"quiet", "", "no progress output"}},
      .training_settings = true,
      .run = cmd_train};
  return cmd;
}

}  // namespace dc::cli
