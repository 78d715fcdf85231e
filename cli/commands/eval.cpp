// deepcanvas-cli eval: a checkpoint's accuracy, loss, confusion matrix and
// per-class precision, recall and F1 on the project's test set, on the CPU
// or a GPU.
#include "commands.h"

#include <deepcanvas/device.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/metrics.h>
#include <deepcanvas/parallel.h>
#include <deepcanvas/trainer.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "../common.h"
#include "../preflight.h"

namespace dc::cli {

namespace {

using json = nlohmann::json;

int cmd_eval(const Args& a) {
  int64_t batch = a.get_int("batch", 256, 1, 1 << 20);
  set_num_threads(int(a.get_int("threads", 0, 0, 1024)));
  Loaded l = load_trained(a, batch);
  TrainConfig run = l.project.training;  // evaluated in fp32, without augmentation
  run.device = parse_device(a.get("device", "cpu"));
  run.batch = batch;
  run.precision = Precision::Fp32;
  run.augment = {};
  CliPrepare o;
  o.purpose = RunPurpose::Evaluate;
  o.config = run;
  o.device_requested = 1;  // eval's device is always the command line's (default cpu)
  o.quiet = a.flag("json");
  PreparedRun prepared = prepare(l.project, a, o);
  Dataset& test = prepared.data.data.test;
  test.mean = l.mean;
  test.stddev = l.stddev;
  auto loss = make_loss(l.project.training.loss, float(l.project.training.label_smoothing));
  EvalResult r;
  if (DeviceBackend* backend = require_device(run.device)) {
    auto dp = backend->create_plan(l.project.graph, *l.plan, DevicePlanOptions::for_training(run));
    dp->upload_params();
    int h = add_device_dataset(*dp, test, batch);
    r = evaluate_device(*dp, h, test, l.plan->output_shape(), {}, batch, *loss);
  } else {
    r = evaluate(*l.plan, test, {}, batch, *loss);
  }
  print_bad_images(prepared.data.data.train, test);
  const std::vector<ClassScores> scores = class_scores(r.confusion);
  auto class_name = [&](size_t i) {
    return i < l.class_names.size() ? l.class_names[i] : std::to_string(i);
  };
  if (a.flag("json")) {
    // NaN (a share without samples) is written as null.
    json per_class = json::array();
    for (size_t i = 0; i < scores.size(); ++i)
      per_class.push_back({{"class", class_name(i)},
                           {"precision", scores[i].precision},
                           {"recall", scores[i].recall},
                           {"f1", scores[i].f1},
                           {"support", scores[i].support}});
    json j = {{"test_accuracy", r.top1},     {"test_top5", r.top5},      {"test_loss", r.loss},
              {"samples", r.samples},        {"confusion", r.confusion}, {"per_class", per_class},
              {"macro_f1", macro_f1(scores)}};
    std::cout << j.dump() << std::endl;
    return 0;
  }
  std::printf("%lld test samples: accuracy %.2f%%, top-5 %.2f%%, loss %.4f\n", (long long)r.samples,
              100 * r.top1, 100 * r.top5, r.loss);
  std::printf("confusion matrix (rows: true class, columns: predicted):\n");
  for (size_t i = 0; i < r.confusion.size(); ++i) {
    std::printf("%14s", class_name(i).c_str());
    for (int64_t v : r.confusion[i]) std::printf(" %5lld", (long long)v);
    std::printf("\n");
  }
  // As scikit-learn's classification_report; "-" where a share has no
  // samples (nothing predicted as the class, or none of it).
  auto share = [](double v) {
    char b[16];
    std::snprintf(b, sizeof b, "%9.3f", v);
    return std::isnan(v) ? std::string("        -") : std::string(b);
  };
  std::printf("%14s %9s %9s %9s %9s\n", "per class", "precision", "recall", "F1", "support");
  for (size_t i = 0; i < scores.size(); ++i)
    std::printf("%14s %s %s %s %9lld\n", class_name(i).c_str(), share(scores[i].precision).c_str(),
                share(scores[i].recall).c_str(), share(scores[i].f1).c_str(),
                (long long)scores[i].support);
  std::printf("macro F1 %.3f\n", macro_f1(scores));
  return 0;
}

}  // namespace

const Command& eval_command() {
  static const Command cmd{.name = "eval",
                           .operands = "PROJECT",
                           .summary = "Evaluate a checkpoint on the project's test set.",
                           .options = {{"checkpoint", "FILE", "the trained model"},
                                       {"data", "DIR", "dataset folder instead of the project's"},
                                       {"batch", "N", "evaluation batch (default 256)"},
                                       {"threads", "N", "CPU threads (0: every core)"},
                                       {"device", "DEV", "cpu, cuda or cuda:N"},
                                       {"json", "", "print one JSON object"}},
                           .run = cmd_eval};
  return cmd;
}

}  // namespace dc::cli
