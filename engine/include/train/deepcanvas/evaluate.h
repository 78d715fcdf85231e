#pragma once
// Measuring a trained network's loss, accuracy and confusion matrix over a
// dataset, on the CPU or on a device plan (train/evaluate.cpp).
#include <deepcanvas/backend.h>
#include <deepcanvas/data.h>
#include <deepcanvas/loss.h>
#include <deepcanvas/plan.h>

#include <cstdint>
#include <vector>

namespace dc {

struct EvalResult {
  double loss = 0, top1 = 0, top5 = 0;
  int64_t samples = 0;
  std::vector<std::vector<int64_t>> confusion;
};

// Runs the plan in inference mode over indices of ds (all when empty).
EvalResult evaluate(Plan& plan, const Dataset& ds, const std::vector<int64_t>& indices,
                    int64_t batch, Loss& loss);
// The same on a device plan, over a dataset already resident there (handle
// from DevicePlan::add_dataset); logits come back to the host for metrics.
EvalResult evaluate_device(DevicePlan& plan, int dataset, const Dataset& ds,
                           const Shape& output_shape, const std::vector<int64_t>& indices,
                           int64_t batch, Loss& loss);

}  // namespace dc
