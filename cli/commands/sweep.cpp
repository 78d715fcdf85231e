// deepcanvas-cli sweep: TPE or random search over training settings and
// layer attributes with ASHA pruning, resumable from its state file.
#include "commands.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/project.h>
#include <deepcanvas/run_log.h>
#include <deepcanvas/sweep.h>
#include <deepcanvas/sweep_board.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "../common.h"
#include "../interrupt.h"
#include "../preflight.h"

namespace dc::cli {

namespace {

// --min-epochs: a number of epochs or a fraction written N/D (1/3 is not
// exactly 0.333, and its rungs should land on whole epochs).
double min_epochs_flag(const Args& a) {
  const std::string v = a.get("min-epochs", "");
  if (v.empty()) return 0;
  const size_t slash = v.find('/');
  double x = NAN;
  try {
    size_t used = 0;
    if (slash == std::string::npos) {
      x = std::stod(v, &used);
      if (used != v.size()) x = NAN;
    } else {
      const std::string num = v.substr(0, slash), den = v.substr(slash + 1);
      size_t used_den = 0;
      const double n = std::stod(num, &used), d = std::stod(den, &used_den);
      x = used == num.size() && used_den == den.size() && d > 0 ? n / d : NAN;
    }
  } catch (const std::exception&) {
  }
  if (!(x > 0) || !std::isfinite(x))
    throw Error("--min-epochs must be a positive number of epochs such as 1, 0.5 or 1/3, got '" +
                v + "'");
  return x;
}

int cmd_sweep(const Args& a) {
  Project p = load_project_operand(a);
  // --seed is the sampler's: every trial trains with the project's seed, so
  // trials differ only in their parameters.
  const uint64_t train_seed = p.training.seed;
  apply_setting_flags(a, p.training);
  p.training.seed = train_seed;
  // What --save-best writes: the project as the trials started from it
  // (setting flags included), before the device falls back below.
  Project best_project = p;
  const std::string save_best = a.get("save-best", "");
  std::vector<std::string> specs;
  if (auto it = a.repeated.find("param"); it != a.repeated.end()) specs = it->second;
  SearchSpace space;
  try {
    space = parse_search_space(specs, p.graph);
  } catch (const SearchSpaceError& e) {
    // The engine names no flag; its parts say which spec.
    if (e.problem() == SearchSpaceError::Problem::Empty)
      throw Error("no --param given: " + e.detail());
    throw Error("--param " + e.spec() + ": " + e.detail());
  }
  SweepOptions o;
  o.trials = int(a.get_int("trials", o.trials, 1, kMaxSweepTrials));
  o.epochs = int(a.get_int("epochs", o.epochs, 1, kMaxSweepEpochs));
  const std::string pruner = a.get("pruner", "asha"), sampler = a.get("sampler", "tpe");
  if (pruner != "asha" && pruner != "none")
    throw Error("--pruner must be asha or none, got '" + pruner + "'");
  if (sampler != "tpe" && sampler != "random")
    throw Error("--sampler must be tpe or random, got '" + sampler + "'");
  o.asha = pruner == "asha";
  o.tpe = sampler == "tpe";
  o.eta = int(a.get_int("eta", o.eta, 2, kMaxSweepEta));
  o.min_epochs = min_epochs_flag(a);
  o.seed = uint64_t(a.get_int("seed", 0, 0, INT64_MAX));
  o.parallel = int(a.get_int("parallel", 1, 1, 1024));
  o.steps_per_epoch_limit = a.get_int("steps-per-epoch", 0, 0, INT64_MAX);
  o.baseline = !a.flag("no-baseline");
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  if (o.parallel > cores) {
    std::fprintf(stderr, "note: --parallel %d is more than the %d cores; running %d at once\n",
                 o.parallel, cores, cores);
    o.parallel = cores;
  }
  if (p.training.device.cuda && o.parallel > 1)
    throw Error("--parallel runs CPU trials; a CUDA sweep runs one trial at a time (--parallel 1)");
  const std::string state = a.get("state", sweep_state_path(a.positional[0]));
  CliPrepare prep;
  prep.purpose = RunPurpose::Sweep;
  const SearchParam* batch_param = nullptr;
  prep.config = largest_batch_config(p.training, space, &batch_param);
  if (batch_param) prep.batch_option = "the batch in --param " + batch_param->spec_text();
  prep.concurrent = o.parallel;
  prep.outputs = {{"--state", state, false},
                  {"--state", sweep_weights_path(state), false},
                  {"--save-best", save_best, false}};
  prep.quiet = a.flag("quiet") || a.flag("json");
  PreparedRun prepared = prepare(p, a, prep);
  // Trials train on the device the run falls back to, with its precision.
  p.training.device = prepared.config.device;
  p.training.precision = prepared.config.precision;
  ProjectData& data = prepared.data;
  auto shared = std::make_shared<const TrainTest>(std::move(data.data));
  // The engine says what is wrong with a state file; the remedy is a flag here.
  std::unique_ptr<Sweep> made;
  try {
    made = std::make_unique<Sweep>(p, shared, space, o, state, a.flag("fresh"));
  } catch (const SweepStateError& e) {
    throw IoError(std::string(e.what()) + " (pass --fresh to start over, or delete the file)");
  } catch (const SweepMismatchError& e) {
    throw Error(std::string(e.what()) +
                "; pass --fresh to replace it, or repeat that sweep's options to continue it");
  }
  Sweep& sweep = *made;
  const std::string weights = sweep_weights_path(state);
  sweep.keep_best_weights(weights);
  const bool quiet = a.flag("quiet") || a.flag("json");
  if (!quiet) {
    std::string pruning = "no pruning";
    const double min_epochs = sweep.state().options.min_epochs;
    if (o.asha && double(o.epochs) > min_epochs) {
      pruning = "ASHA pruning (eta " + std::to_string(o.eta) + ", rungs at";
      const Asha asha(min_epochs, double(o.epochs), o.eta);
      for (double r : asha.rungs()) pruning += " " + attr_to_string(r);
      pruning += " epochs)";
    }
    std::fprintf(stderr, "%s sweep of '%s': %d trials x %d epochs, %s, %s; state in %s\n",
                 sweep.resumed() ? "Resuming the" : "Starting a", p.name.c_str(), o.trials,
                 o.epochs, o.tpe ? "TPE" : "random search", pruning.c_str(), state.c_str());
  }
  // Not quiet-only: a baseline the user expected and did not get matters
  // in scripts too.
  if (const std::string why = sweep.state().baseline_skipped; !why.empty())
    std::fprintf(stderr, "note: no baseline trial: the project's %s\n", why.c_str());
  std::unique_ptr<SweepBoard> board;
  if (!a.flag("no-tensorboard")) {
    const std::string dir = a.get("log-dir", new_run_folder(p.name + "-sweep"));
    board = std::make_unique<SweepBoard>(dir, space);
    if (!quiet) std::fprintf(stderr, "TensorBoard HParams: %s\n", dir.c_str());
    // Trials of an earlier run of this sweep, finished or cut short.
    for (const Trial& t : sweep.state().trials) board->update(t);
    if (const std::string why = board->take_problem(); !why.empty())
      std::fprintf(stderr, "deepcanvas-cli: %s\n", why.c_str());
  }
  std::atomic<bool> stop{false};
  InterruptGuard guard;
  std::thread watch([&] {
    while (!stop) {
      if (guard.requested()) stop = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  auto on_update = [&](const Trial& t) {
    if (board) {
      board->update(t);
      if (const std::string why = board->take_problem(); !why.empty())
        std::fprintf(stderr, "deepcanvas-cli: %s\n", why.c_str());
    }
    if (quiet) return;
    std::string params;
    for (size_t i = 0; i < space.params.size(); ++i)
      params += (i ? ", " : "") + space.params[i].name + "=" +
                attr_to_string(search_value(space.params[i], t.x[i]));
    if (t.status == Trial::Status::Running && !t.epochs.empty()) {
      const TrialEpoch& e = t.epochs.back();
      if (e.at == double(e.epoch))
        std::fprintf(stderr, "trial %d epoch %d: val acc %.2f%%  (%s)\n", t.id, e.epoch,
                     100 * e.val_accuracy, params.c_str());
      else
        std::fprintf(stderr, "trial %d at %.3g epochs: val acc %.2f%%  (%s)\n", t.id, e.trained,
                     100 * e.val_accuracy, params.c_str());
    } else if (t.status != Trial::Status::Running) {
      std::fprintf(stderr, "trial %d%s %s%s%s\n", t.id, t.baseline ? " (project's values)" : "",
                   trial_status_name(t.status), t.error.empty() ? "" : ": ", t.error.c_str());
    }
  };
  try {
    sweep.run(on_update, &stop);
  } catch (...) {
    stop = true;
    watch.join();
    throw;
  }
  const bool interrupted = guard.requested();
  stop = true;
  watch.join();
  const SweepState s = sweep.state();
  if (interrupted) {
    std::fprintf(stderr,
                 "deepcanvas-cli: %s: sweep stopped; %zu trials recorded in %s (run the same "
                 "command again to continue)\n",
                 guard.signal_name().c_str(), s.trials.size(), state.c_str());
    return kInterruptedExit;
  }
  const std::string kept = sweep_best_weights(s, weights);
  // The best trial's values written into a copy of the project, so that
  // it and the kept weights go together (eval, predict, export, train).
  std::string saved_to;
  if (!save_best.empty() && s.best() >= 0) {
    sweep.apply_best(best_project.graph, best_project.training);
    save_project(best_project, save_best);
    saved_to = save_best;
  }
  if (const std::string why = sweep.weights_problem(); !why.empty())
    std::fprintf(stderr, "deepcanvas-cli: the best trial's weights were not kept: %s\n",
                 why.c_str());
  if (a.flag("json")) {
    nlohmann::json j = nlohmann::json::parse(sweep_to_json(s, space));
    j["best_weights"] = kept.empty() ? nlohmann::json(nullptr) : nlohmann::json(kept);
    if (!save_best.empty())
      j["best_project"] = saved_to.empty() ? nlohmann::json(nullptr) : nlohmann::json(saved_to);
    std::cout << j.dump() << std::endl;
    return 0;
  }
  int completed = 0, pruned = 0, failed = 0;
  for (const Trial& t : s.trials) {
    completed += t.status == Trial::Status::Completed;
    pruned += t.status == Trial::Status::Pruned;
    failed += t.status == Trial::Status::Failed;
  }
  std::printf("%zu trials: %d completed, %d pruned, %d failed; %.4g epochs trained\n",
              s.trials.size(), completed, pruned, failed, s.epochs_used());
  const int b = s.best();
  if (b < 0) {
    std::printf("no trial completed\n");
    return 1;
  }
  const Trial& t = s.trials[size_t(b)];
  std::printf("best: trial %d, val accuracy %.2f%%, test accuracy %.2f%%:", t.id,
              100 * t.epochs.back().val_accuracy, 100 * t.epochs.back().test_accuracy);
  for (size_t i = 0; i < space.params.size(); ++i)
    std::printf(" %s=%s", space.params[i].name.c_str(),
                attr_to_string(search_value(space.params[i], t.x[i])).c_str());
  std::printf("%s\n",
              t.baseline ? " (the project's own values: no other trial validated better)" : "");
  // Trained on the training set less the validation split, for the
  // sweep's epochs: usable as they are (predict, eval, export --checkpoint).
  if (!kept.empty()) std::printf("best trial's weights: %s\n", kept.c_str());
  if (!saved_to.empty())
    std::printf("the project with the best trial's values: %s\n", saved_to.c_str());
  return 0;
}

}  // namespace

const Command& sweep_command() {
  static const Command cmd{
      .name = "sweep",
      .operands = "PROJECT",
      .summary =
          "Hyperparameter sweep: TPE or random search over training settings and layer "
          "attributes, ASHA pruning at its rungs (from a fraction of the first epoch); resumable "
          "(state in PROJECT.sweep.json); the best trial's trained weights are kept in "
          "PROJECT.sweep.best.safetensors.",
      .options = {{"param", "NAME=KIND:ARGS",
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
                  {"seed", "S",
                   "seed of the sampler (default 0); trials train with the project's seed"},
                  {"parallel", "K", "trials at once, each single-threaded (at most the cores)"},
                  {"no-baseline", "",
                   "do not start with the project's own values of the parameters as trial 0"},
                  {"state", "FILE", "state file (default PROJECT.sweep.json beside the project)"},
                  {"fresh", "", "discard an existing state file instead of continuing it"},
                  {"save-best", "FILE",
                   "write the project with the best trial's values there (its trained weights "
                   "are PROJECT.sweep.best.safetensors)"},
                  {"log-dir", "DIR",
                   "TensorBoard's HParams summaries there, a folder per trial (default: a new "
                   "folder in ~/.local/share/DeepCanvas/runs)"},
                  {"no-tensorboard", "", "no TensorBoard files"},
                  {"steps-per-epoch", "N", "stop each epoch after N steps (quick looks)"},
                  {"data", "DIR", "dataset folder instead of the project's"},
                  {"json", "", "print one JSON object (trials, best)"}},
      .training_settings = true,
      .run = cmd_sweep};
  return cmd;
}

}  // namespace dc::cli
