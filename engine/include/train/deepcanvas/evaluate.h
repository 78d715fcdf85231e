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
// The device's copy of ds for training or evaluation in batches of at
// most `batch`: resident (DevicePlan::add_dataset) for data held in memory;
// a batch dataset (add_batch_dataset) for pictures decoded from files,
// which the loader streams to it as bytes.
int add_device_dataset(DevicePlan& plan, const Dataset& ds, int64_t batch);
// The same on a device plan, over the device's copy of ds (the handle from
// add_device_dataset, batch no larger than it was made for); logits come
// back to the host for metrics.
EvalResult evaluate_device(DevicePlan& plan, int dataset, const Dataset& ds,
                           const Shape& output_shape, const std::vector<int64_t>& indices,
                           int64_t batch, Loss& loss);

}  // namespace dc
