#include <deepcanvas/errors.h>
#include <deepcanvas/metrics.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

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
  ++unread_;
  return n;
}

namespace {

// Steps between reads of the device's running loss and accuracy: the host
// never stalls the GPU per step, and reads at an epoch's end or a stop.
constexpr int64_t kReport = 25;

bool device_report_due(int64_t step_in_epoch, int64_t steps_per_epoch, bool interrupted) {
  return step_in_epoch % kReport == 0 || step_in_epoch == steps_per_epoch || interrupted;
}

}  // namespace

bool DeviceStepper::report_due(int64_t step_in_epoch, int64_t steps_per_epoch,
                               bool interrupted) const {
  return device_report_due(step_in_epoch, steps_per_epoch, interrupted) || next_ >= order_.size();
}

namespace {

// The statistics of the steps queued since the last read; a non-finite loss
// among them stops the run. The device's weights are not read back: the
// update after a non-finite loss has already made them NaN, and the host
// Plan still holds the last weights read (an epoch's end or a checkpoint).
DeviceStepStats read_device_stats(DevicePlan& plan, int epoch, int64_t steps, int64_t step) {
  DeviceStepStats s = plan.take_stats();
  if (!s.finite)
    throw Error("the loss became NaN or infinite at epoch " + std::to_string(epoch) + ", in the " +
                std::to_string(steps) + " step(s) up to step " + std::to_string(step) +
                "; training stopped and the weights of the last epoch end or checkpoint were "
                "kept. Lower the learning rate, normalise the inputs or add BatchNorm");
  return s;
}

}  // namespace

DeviceStepStats DeviceStepper::take_stats(int64_t step) {
  return read_device_stats(plan_, epoch_, std::exchange(unread_, 0), step);
}

StreamedDeviceStepper::StreamedDeviceStepper(DevicePlan& plan, int dataset, const Dataset& train,
                                             const std::vector<int64_t>& train_idx,
                                             const TrainConfig& cfg)
    : plan_(plan),
      cfg_(cfg),
      dataset_(dataset),
      loader_(train, train_idx, cfg.batch, /*shuffle=*/true, /*drop_last=*/false, cfg.seed,
              /*prefetch=*/3, /*training_draws=*/true, /*bytes=*/true),
      slots_(all_indices(cfg.batch)) {}

void StreamedDeviceStepper::start_epoch(int epoch) {
  epoch_ = epoch;
  loader_.start_epoch(epoch);
}

// Queued without waiting for the device: the bytes go up behind the steps
// already queued, and the device gathers, normalises and augments them as
// it does resident data (the same seed, so the same draws as on the CPU).
int64_t StreamedDeviceStepper::step(int64_t step, double lr) {
  const Batch& b = batch_;
  plan_.set_batch(dataset_, static_cast<const uint8_t*>(b.x.raw()), b.labels.data(), b.n);
  plan_.train_step(dataset_, slots_.data(), b.n, lr, step_seed(cfg_.seed, step));
  ++unread_;
  return b.n;
}

// The loader's end is known only when next_batch finds it; an epoch cut
// short by bad files is read by stats_pending's read after the loop.
bool StreamedDeviceStepper::report_due(int64_t step_in_epoch, int64_t steps_per_epoch,
                                       bool interrupted) const {
  return device_report_due(step_in_epoch, steps_per_epoch, interrupted);
}

DeviceStepStats StreamedDeviceStepper::take_stats(int64_t step) {
  const int64_t steps = std::exchange(unread_, 0);
  return read_device_stats(plan_, epoch_, steps, step);
}

HostBatchDeviceStepper::HostBatchDeviceStepper(DevicePlan& plan, const Shape& output,
                                               const Dataset& train,
                                               const std::vector<int64_t>& train_idx,
                                               const TrainConfig& cfg, Loss& host_loss)
    : plan_(plan),
      train_(train),
      cfg_(cfg),
      loader_(train, train_idx, cfg.batch, /*shuffle=*/true, /*drop_last=*/false, cfg.seed,
              /*prefetch=*/3, /*training_draws=*/true),
      out_(output.with_batch(cfg.batch)),
      dout_(output.with_batch(cfg.batch)),
      host_scorer_(host_loss, scores_every_step(train, output)) {}

void HostBatchDeviceStepper::start_epoch(int epoch) {
  epoch_ = epoch;
  loader_.start_epoch(epoch);
}

// As CpuStepper::step, with the forward, backward and update on the device.
int64_t HostBatchDeviceStepper::step(int64_t step, double lr) {
  Batch& b = batch_;
  const uint64_t seed = step_seed(cfg_.seed, step);
  if (cfg_.augment.enabled())
    augment_batch(cfg_.augment, train_.sample_shape, augment_levels(train_), seed, b.x.f32(), b.n);
  Tensor out = out_.narrow_batch(b.n), dout = dout_.narrow_batch(b.n);
  plan_.zero_grad();
  plan_.forward(b.x, out, /*training=*/true, seed);
  ClassificationMetrics m;
  float shown = 0;
  const float l = host_scorer_.train(out, b.x, b.labels.data(), dout, &m, &shown);
  // The update has not run: the device still holds the last good weights.
  if (!std::isfinite(l)) plan_.download_params();
  tally_.add(l, shown, m, b.n, epoch_, step);
  plan_.backward(dout);
  plan_.step(lr);
  return b.n;
}

DeviceStepStats HostBatchDeviceStepper::take_stats(int64_t) {
  return tally_.take();
}

}  // namespace dc
