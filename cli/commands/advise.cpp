// deepcanvas-cli advise: predicted training memory, speed, largest batch and
// energy here and on each catalog GPU; --profile measures each layer here.
#include "commands.h"

#include <deepcanvas/advisor/advise.h>
#include <deepcanvas/advisor/device_bench.h>
#include <deepcanvas/advisor/layer_profile.h>
#include <deepcanvas/advisor/memory_model.h>
#include <deepcanvas/advisor/step_time.h>
#include <deepcanvas/device.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/format.h>
#include <deepcanvas/project.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "../common.h"
#include "../preflight.h"

namespace dc::cli {

namespace {

using json = nlohmann::json;

// Training samples per epoch (the option, else the dataset's after its
// validation split) and the bytes a GPU run keeps resident (the training
// and test sets). --samples alone reads no dataset (resident 0); the
// project's dataset unreadable gives a note and 60000 samples; a --data
// folder unreadable is an error.
std::pair<int64_t, int64_t> epoch_samples(const Args& a, const Project& p, std::string& note) {
  // A network that cannot be built is refused before any dataset is read.
  CliPrepare prep;
  prep.purpose = RunPurpose::Advise;
  prep.config = p.training;
  prep.device_requested = 0;
  prep.check_memory = false;
  prep.quiet = a.flag("json");
  const bool read = !(a.has("samples") && !a.has("data"));
  prep.data = read ? DataNeed::Required : DataNeed::None;
  try {
    const PreparedRun prepared = prepare(p, a, prep);
    if (!read) return {a.get_int("samples", 0, 1, int64_t(1) << 40), 0};
    const ProjectData& d = prepared.data;
    const int64_t resident =
        advisor::cuda_resident_bytes(d.data.train) + advisor::cuda_resident_bytes(d.data.test);
    const int64_t samples =
        a.has("samples") ? a.get_int("samples", 0, 1, int64_t(1) << 40)
                         : int64_t(double(d.data.train.size()) * (1.0 - p.training.val_split));
    return {samples, resident};
  } catch (const DataError& e) {
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
      advisor::predict_step_time(p.graph, batch, advisor::cpu_rates(bench));
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
  Project p = load_project_operand(a);
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
    if (const RunProblem m = cpu_memory_problem(p.graph, c, "profiling"); !m.message.empty())
      throw_cli_problem(m);
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
  print_note(note);
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

}  // namespace

const Command& advise_command() {
  static const Command cmd{
      .name = "advise",
      .operands = "PROJECT",
      .summary =
          "Predict training memory, speed, the largest batch and energy here and on each catalog "
          "GPU.",
      .options =
          {{"batch", "N", "batch size (default: the project's)"},
           {"precision", "P", "fp32, bf16 or fp16 for the GPU rows (default: the project's)"},
           {"samples", "N", "training samples per epoch (default: the project's dataset's)"},
           {"data", "DIR",
            "dataset folder instead of the project's (its size and what a GPU keeps)"},
           {"profile", "",
            "also train a few steps here on synthetic data and show each layer's measured time "
            "beside its prediction"},
           {"steps", "N", "--profile: steps measured (default 20, after 3 warm-up steps)"},
           {"json", "", "print JSON"}},
      .run = cmd_advise};
  return cmd;
}

}  // namespace dc::cli
