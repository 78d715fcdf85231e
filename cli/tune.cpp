#include "tune.h"

#include <deepcanvas/device.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/lr_find.h>
#include <deepcanvas/preflight.h>
#include <deepcanvas/project.h>
#include <deepcanvas/sweep.h>
#include <deepcanvas/sysinfo.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <thread>

#include <nlohmann/json.hpp>

#include "interrupt.h"
#include "preflight.h"

namespace dc::cli {

namespace {

using json = nlohmann::json;

Project load(const Args& a) {
  if (a.positional.empty()) throw Error("missing PROJECT (a .dcproj file)");
  return load_project(a.positional[0]);
}

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

void check_network(const Project& p, const TrainConfig& c) {
  const std::vector<RunProblem> problems = network_problems(p.graph, c);
  if (const RunProblem* problem = first_blocking(problems)) throw_problem(*problem);
}

// The memory check of train for the sweep's largest batch (the space's batch
// values: a choice's largest, a range's top; else the project's), with
// `parallel` trials training at once.
void check_sweep_memory(const Project& p, const SearchSpace& space, int parallel) {
  TrainConfig c = p.training;
  std::string option = "--batch";
  for (const SearchParam& sp : space.params) {
    if (!sp.setting || sp.setting->attr.name != "batch") continue;
    option = "the batch in --param " + sp.spec_text();
    if (sp.kind != SearchParam::Kind::Choice) {
      c.batch = std::get<int64_t>(search_value(sp, sp.hi));
      continue;
    }
    c.batch = 0;
    for (size_t i = 0; i < sp.choices.size(); ++i)
      c.batch = std::max(c.batch, std::get<int64_t>(search_value(sp, double(i))));
  }
  check_cpu_memory(
      p.graph, c,
      parallel > 1 ? std::to_string(parallel) + " sweep trials at once" : "a sweep trial", option,
      parallel);
}

}  // namespace

int cmd_lr_find(const Args& a) {
  Project p = load(a);
  TrainConfig c = p.training;
  apply_setting_flags(a, c);
  c.device = DeviceSpec{};  // the range test runs on the CPU
  c.precision = Precision::Fp32;
  check_network(p, c);
  check_cpu_memory(p.graph, c, "the LR range test");
  LrFindOptions o;
  o.start = a.get_double("start", o.start, 1e-12, 1e6);
  o.end = a.get_double("end", o.end, 1e-12, 1e9);
  o.steps = int(a.get_int("steps", o.steps, 5, 100000));
  ProjectData data = load_project_dataset(p, a.get("data", ""));
  if (!data.note.empty()) std::fprintf(stderr, "note: %s\n", data.note.c_str());
  const bool quiet = a.flag("quiet") || a.flag("json");
  if (!quiet)
    std::fprintf(stderr, "LR range test of '%s': %d steps from %g to %g, batch %lld, %s\n",
                 p.name.c_str(), o.steps, o.start, o.end, (long long)c.batch,
                 enum_name(c.optimizer.type));
  LrFindResult r =
      lr_find(p.graph, c, data.data.train, o, nullptr, [&](int i, double lr, double smooth) {
        if (!quiet && (i % 10 == 0))
          std::fprintf(stderr, "  step %3d  lr %-10.3g smoothed loss %.4f\n", i, lr, smooth);
        return true;
      });
  if (a.flag("json")) {
    json j = {{"suggested_lr", r.suggested_lr},
              {"min_loss_lr", r.min_lr},
              {"steepest_lr", r.steepest_lr},
              {"rule", "min_loss_lr / 10"},
              {"diverged", r.diverged},
              {"steps", r.lrs.size()},
              {"lr", r.lrs},
              {"loss", r.losses},
              {"smoothed_loss", r.smoothed},
              {"batch", c.batch},
              {"optimizer", enum_name(c.optimizer.type)}};
    if (!r.note.empty()) j["note"] = r.note;
    std::cout << j.dump() << std::endl;
    return 0;
  }
  if (!r.note.empty()) std::fprintf(stderr, "note: %s\n", r.note.c_str());
  std::printf(
      "suggested learning rate %.3g (the smoothed loss was lowest at %.3g; steepest descent at "
      "%.3g)\nuse it with: deepcanvas-cli train %s --lr %.3g\n",
      r.suggested_lr, r.min_lr, r.steepest_lr, a.positional[0].c_str(), r.suggested_lr);
  return 0;
}

int cmd_batch_fit(const Args& a) {
  Project p = load(a);
  TrainConfig c = p.training;
  apply_setting_flags(a, c);
  check_network(p, c);
  int64_t available = -1;
  std::string where;
  if (c.device.cuda) {
    std::string why;
    for (const GpuInfo& gpu : list_gpus(&why))
      if (gpu.index == c.device.index) available = gpu.free_bytes, where = gpu.name;
    if (available < 0) throw Error(c.device.str() + " is not available: " + why);
  } else {
    available = available_memory_bytes();
    where = "CPU memory";
  }
  const BatchFit f = largest_batch(p.graph, available, c);
  const int64_t new_batch = a.get_int("to", f.pow2 > 0 ? f.pow2 : c.batch, 1, 1 << 20);
  ProjectData data = load_project_dataset(p, a.get("data", ""));
  if (!data.note.empty()) std::fprintf(stderr, "note: %s\n", data.note.c_str());
  const BatchLrAdvice adv = batch_lr_advice(c, p.training.batch, new_batch, data.data.train.size());
  if (a.flag("json")) {
    std::cout << json{{"device", c.device.str()},
                      {"available_bytes", f.available_bytes},
                      {"bytes_per_sample", f.bytes_per_sample},
                      {"fixed_bytes", f.fixed_bytes},
                      {"max_batch", f.max_batch},
                      {"max_batch_pow2", f.pow2},
                      {"batch", p.training.batch},
                      {"new_batch", new_batch},
                      {"lr", c.optimizer.lr},
                      {"linear_lr", adv.linear_lr},
                      {"sqrt_lr", adv.sqrt_lr},
                      {"warmup_steps", adv.warmup_steps},
                      {"advice", adv.text}}
                     .dump()
              << std::endl;
    return 0;
  }
  std::printf("%s: %.1f GiB available; training needs %.1f MiB fixed + %.1f KiB per sample\n",
              where.c_str(), double(f.available_bytes) / double(1 << 30),
              double(f.fixed_bytes) / double(1 << 20), double(f.bytes_per_sample) / 1024.0);
  std::printf("largest batch that fits (the advisor's memory model): %lld (power of two: %lld)\n",
              (long long)f.max_batch, (long long)f.pow2);
  std::printf("%s\n", adv.text.c_str());
  return 0;
}

int cmd_sweep(const Args& a) {
  Project p = load(a);
  // --seed is the sampler's: every trial trains with the project's seed, so
  // trials differ only in their parameters.
  const uint64_t train_seed = p.training.seed;
  apply_setting_flags(a, p.training);
  p.training.seed = train_seed;
  std::vector<std::string> specs;
  if (auto it = a.repeated.find("param"); it != a.repeated.end()) specs = it->second;
  SearchSpace space = parse_search_space(specs, p.graph);
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
  check_network(p, p.training);
  check_sweep_memory(p, space, o.parallel);
  const std::string state = a.get("state", sweep_state_path(a.positional[0]));
  ProjectData data = load_project_dataset(p, a.get("data", ""));
  if (!data.note.empty()) std::fprintf(stderr, "note: %s\n", data.note.c_str());
  auto shared = std::make_shared<const TrainTest>(std::move(data.data));
  Sweep sweep(p, shared, space, o, state, a.flag("fresh"));
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
  std::atomic<bool> stop{false};
  InterruptGuard guard;
  std::thread watch([&] {
    while (!stop) {
      if (guard.requested()) stop = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  auto on_update = [&](const Trial& t) {
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
  if (a.flag("json")) {
    std::cout << sweep_to_json(s, space) << std::endl;
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
  return 0;
}

}  // namespace dc::cli
