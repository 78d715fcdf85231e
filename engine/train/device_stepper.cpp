#include <deepcanvas/errors.h>

#include <algorithm>
#include <string>

#include "stepper.h"

namespace dc {

void DeviceStepper::start_epoch(int epoch) {
  epoch_ = epoch;
  order_ = epoch_order(train_idx_, cfg_.seed, epoch);
  next_ = 0;
}

// Queued without waiting for the device.
int64_t DeviceStepper::step(int64_t step, double lr) {
  const int64_t n = std::min<int64_t>(cfg_.batch, int64_t(order_.size() - next_));
  plan_.train_step(dataset_, order_.data() + next_, n, lr, step_seed(cfg_.seed, step));
  next_ += size_t(n);
  return n;
}

bool DeviceStepper::report_due(int64_t step_in_epoch, int64_t steps_per_epoch,
                               bool interrupted) const {
  return step_in_epoch % kReport == 0 || step_in_epoch == steps_per_epoch ||
         next_ >= order_.size() || interrupted;
}

DeviceStepStats DeviceStepper::take_stats(int64_t step) {
  DeviceStepStats s = plan_.take_stats();
  if (!s.finite) {
    plan_.download_params();
    throw Error("the loss became NaN or infinite at epoch " + std::to_string(epoch_) +
                ", within the " + std::to_string(kReport) + " steps before step " +
                std::to_string(step) +
                "; training stopped. Lower the learning rate, normalise the inputs or add "
                "BatchNorm");
  }
  return s;
}

}  // namespace dc
