// deepcanvas-cli summary: every layer's shape, parameters, MACs and memory,
// and the training memory at a batch.
#include "commands.h"

#include <deepcanvas/advisor/memory_model.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/format.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/project.h>
#include <deepcanvas/transfer.h>

#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "../common.h"

namespace dc::cli {

namespace {

using json = nlohmann::json;

int cmd_summary(const Args& a) {
  Project p = load_project_operand(a);
  if (a.has("freeze-until")) freeze_until(p.graph, a.get("freeze-until", ""));
  int64_t batch = a.get_int("batch", p.training.batch, 1, 1 << 20);
  check_network_builds(p);  // before allocating
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

}  // namespace

const Command& summary_command() {
  static const Command cmd{
      .name = "summary",
      .operands = "PROJECT",
      .summary = "Shapes, parameters, MACs and memory of every layer.",
      .options = {{"batch", "N", "batch for the training-memory estimate (default: the project's)"},
                  {"freeze-until", "LAYER",
                   "as train's: count LAYER and everything before it as frozen"},
                  {"json", "", "print JSON"}},
      .run = cmd_summary};
  return cmd;
}

}  // namespace dc::cli
