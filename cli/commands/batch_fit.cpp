// deepcanvas-cli batch-fit: the largest batch that fits the device's memory
// and the learning rate for a new batch.
#include "commands.h"

#include <deepcanvas/device.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/lr_find.h>
#include <deepcanvas/preflight.h>
#include <deepcanvas/project.h>
#include <deepcanvas/sysinfo.h>

#include <cstdio>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "../common.h"
#include "../preflight.h"

namespace dc::cli {

namespace {

using json = nlohmann::json;

int cmd_batch_fit(const Args& a) {
  Project p = load_project_operand(a);
  TrainConfig c = p.training;
  apply_setting_flags(a, c);
  CliPrepare prep;
  prep.purpose = RunPurpose::BatchFit;
  prep.config = c;
  prep.device_requested = 1;  // the memory asked about is the named device's
  prep.quiet = a.flag("json");
  PreparedRun prepared = prepare(p, a, prep);
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
  const BatchLrAdvice adv =
      batch_lr_advice(c, p.training.batch, new_batch, prepared.data.data.train.size());
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

}  // namespace

const Command& batch_fit_command() {
  static const Command cmd{
      .name = "batch-fit",
      .operands = "PROJECT",
      .summary =
          "The largest batch whose training fits the device's memory (estimate), and the "
          "learning rate for a new batch (linear and square-root rules, warm-up).",
      .options = {{"data", "DIR", "dataset folder instead of the project's"},
                  {"to", "N", "the new batch (default: the largest power of two that fits)"},
                  {"json", "", "print one JSON object"}},
      .training_settings = true,
      .run = cmd_batch_fit};
  return cmd;
}

}  // namespace dc::cli
