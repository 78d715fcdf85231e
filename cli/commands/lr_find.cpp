// deepcanvas-cli lr-find: Smith's learning-rate range test, a short run
// with the learning rate rising exponentially; the project is not touched.
#include "commands.h"

#include <deepcanvas/device.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/lr_find.h>
#include <deepcanvas/project.h>

#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "../common.h"
#include "../preflight.h"

namespace dc::cli {

namespace {

using json = nlohmann::json;

int cmd_lr_find(const Args& a) {
  Project p = load_project_operand(a);
  TrainConfig c = p.training;
  apply_setting_flags(a, c);
  c.device = DeviceSpec{};  // the range test runs on the CPU
  c.precision = Precision::Fp32;
  LrFindOptions o;
  o.start = a.get_double("start", o.start, 1e-12, 1e6);
  o.end = a.get_double("end", o.end, 1e-12, 1e9);
  o.steps = int(a.get_int("steps", o.steps, 5, 100000));
  const bool quiet = a.flag("quiet") || a.flag("json");
  CliPrepare prep;
  prep.purpose = RunPurpose::LrFind;
  prep.config = c;
  prep.device_requested = 0;
  prep.quiet = quiet;
  PreparedRun prepared = prepare(p, a, prep);
  ProjectData& data = prepared.data;
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
  // The engine's note names the range's ends; here they are flags.
  if (r.note.find("end learning rate to see") != std::string::npos)
    r.note += " (--end)";
  else if (r.note.find("lower the start learning rate") != std::string::npos)
    r.note += " (--start)";
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
  print_note(r.note);
  std::printf(
      "suggested learning rate %.3g (the smoothed loss was lowest at %.3g; steepest descent at "
      "%.3g)\nuse it with: deepcanvas-cli train %s --lr %.3g\n",
      r.suggested_lr, r.min_lr, r.steepest_lr, a.positional[0].c_str(), r.suggested_lr);
  return 0;
}

}  // namespace

const Command& lr_find_command() {
  static const Command cmd{
      .name = "lr-find",
      .operands = "PROJECT",
      .summary =
          "Learning-rate range test (Smith): a short run with the learning rate rising "
          "exponentially; suggests a learning rate. The project's weights are not touched.",
      .options = {{"data", "DIR", "dataset folder instead of the project's"},
                  {"start", "X", "first learning rate (default 1e-7)"},
                  {"end", "Y", "last learning rate (default 10)"},
                  {"steps", "N", "steps of the test (default 100)"},
                  {"json", "", "print one JSON object (suggested_lr, the curve)"}},
      .training_settings = true,
      .run = cmd_lr_find};
  return cmd;
}

}  // namespace dc::cli
