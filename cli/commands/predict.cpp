// deepcanvas-cli predict: the likeliest classes of image files or of a test
// sample.
#include "commands.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/int8_inference.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../common.h"
#include "../image_input.h"
#include "../preflight.h"

namespace dc::cli {

namespace {

int cmd_predict(const Args& a) {
  Loaded l = load_trained(a, 1);
  const std::string int8_path = a.get("int8", "");
  std::unique_ptr<QuantizedNetwork> quantized;
  std::unique_ptr<Int8Runner> int8;
  if (!int8_path.empty()) {
    quantized = std::make_unique<QuantizedNetwork>(load_int8_model(int8_path, *l.plan));
    int8 = std::make_unique<Int8Runner>(*quantized, 1);
    print_note(int8_cpu_note());
  }
  int top = int(a.get_int("top", 5, 1, 1000));
  std::vector<std::pair<std::string, Tensor>> inputs;  // label, [1, ...input]
  const Shape& in = l.plan->input_shape();
  if (a.has("index")) {
    CliPrepare prep;
    prep.purpose = RunPurpose::Predict;
    prep.config = l.project.training;
    prep.config.device = DeviceSpec{};  // predict runs on the CPU
    prep.config.precision = Precision::Fp32;
    prep.config.augment = {};
    prep.device_requested = 0;
    prep.quiet = true;
    PreparedRun prepared = prepare(l.project, a, prep);
    Dataset& test = prepared.data.data.test;
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
    inputs.emplace_back(path, load_image_input(path, in, l.project.dataset.inference_crop(), l.mean,
                                               l.stddev, l.project.dataset.preprocess.mean,
                                               l.project.dataset.preprocess.std));
  if (inputs.empty()) throw Error("nothing to predict: give image files or --index N");
  RunContext ctx{false, nullptr};
  for (auto& [what, x] : inputs) {
    const Tensor& out = int8 ? int8->forward(x) : l.plan->forward(x, ctx);
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

}  // namespace

const Command& predict_command() {
  static const Command cmd{
      .name = "predict",
      .operands = "PROJECT [IMAGE...]",
      .summary = "Classify image files, or a test sample with --index.",
      .options = {{"checkpoint", "FILE", "the trained model"},
                  {"index", "N", "predict test sample N instead of image files"},
                  {"data", "DIR", "dataset folder for --index"},
                  {"top", "K", "classes to show (default 5)"},
                  {"int8", "FILE",
                   "classify with the int8 model (the .int8.json export --precision int8 "
                   "writes) on oneDNN's int8 kernels"}},
      .max_operands = -1,
      .run = cmd_predict};
  return cmd;
}

}  // namespace dc::cli
