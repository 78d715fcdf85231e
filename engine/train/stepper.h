#pragma once
// The four ways a Trainer takes training steps: on the host Plan with the
// prefetching loader (CpuStepper); on a device plan over data resident
// there (DeviceStepper); on a device plan fed byte batches by the loader
// (StreamedDeviceStepper: image folders, whose pictures are decoded on the
// host and cannot be made resident; the device normalises and augments
// them); or on a device plan fed float batches whose loss is computed on
// the host (HostBatchDeviceStepper: networks that score every step of a
// text). Trainer::run() drives each through one epoch loop, so pausing,
// timing, the schedule and the Step events are written once. All take
// their order from epoch_order() and their per-step seed from step_seed(),
// so CPU and CUDA runs see the same batches.
#include <deepcanvas/backend.h>
#include <deepcanvas/data.h>
#include <deepcanvas/loss.h>
#include <deepcanvas/metrics.h>
#include <deepcanvas/next_token.h>
#include <deepcanvas/optim.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/rng.h>
#include <deepcanvas/train_config.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace dc {

class Stepper {
 public:
  virtual ~Stepper() = default;
  virtual void start_epoch(int epoch) = 0;
  // Makes the epoch's next batch ready; false when its samples are used up.
  // Apart from step() so that waiting for the loader is not training time.
  virtual bool next_batch() = 0;
  // One optimizer step on that batch at learning rate lr; `step` is the
  // run's step count before it. Returns the batch's sample count.
  virtual int64_t step(int64_t step, double lr) = 0;
  // Whether the statistics should be read after the epoch's step_in_epoch-th
  // step; reading them may wait for the device, so a device reads them only
  // every few steps, at the epoch's end and when the run is interrupted.
  virtual bool report_due(int64_t step_in_epoch, int64_t steps_per_epoch,
                          bool interrupted) const = 0;
  // Loss sum and top-1 hits since the last call. Throws when the loss became
  // NaN or infinite, keeping the last good weights in the host Plan (on a
  // device: those last read back, at an epoch's end or a checkpoint).
  virtual DeviceStepStats take_stats(int64_t step) = 0;
  // Steps taken since the last take_stats: an epoch whose loader ran out
  // before report_due said so (every file of its last batches bad) reads
  // them at its end.
  virtual bool stats_pending() const { return false; }
};

// The statistics of steps whose loss is computed on the host (CpuStepper,
// HostBatchDeviceStepper): each step's batch is added as it is scored.
class HostStepTally {
 public:
  // Adds a step's batch of n samples (mean loss `shown`, top-1 hits in m);
  // a loss l that is not finite throws instead, naming the epoch and the
  // step (the caller has kept its last good weights).
  void add(float l, float shown, const ClassificationMetrics& m, int64_t n, int epoch,
           int64_t step);
  DeviceStepStats take() { return std::exchange(stats_, {}); }

 private:
  DeviceStepStats stats_;
};

class CpuStepper : public Stepper {
 public:
  CpuStepper(Plan& plan, Loss& loss, Optimizer& opt, const Dataset& train,
             const std::vector<int64_t>& train_idx, const TrainConfig& cfg);
  void start_epoch(int epoch) override;
  bool next_batch() override { return loader_.next(batch_); }
  int64_t step(int64_t step, double lr) override;
  bool report_due(int64_t, int64_t, bool) const override { return true; }
  DeviceStepStats take_stats(int64_t step) override;

 private:
  Plan& plan_;
  Optimizer& opt_;
  const Dataset& train_;
  const TrainConfig& cfg_;
  BatchLoader loader_;
  std::vector<Param*> params_;
  std::vector<Tensor> good_;  // weights that last gave a finite loss
  Tensor dout_;
  Rng rng_;
  BatchScorer scorer_;
  Batch batch_;
  int epoch_ = 0;
  HostStepTally tally_;
};

class DeviceStepper : public Stepper {
 public:
  DeviceStepper(DevicePlan& plan, int dataset, const std::vector<int64_t>& train_idx,
                const TrainConfig& cfg)
      : plan_(plan), dataset_(dataset), train_idx_(train_idx), cfg_(cfg) {}
  void start_epoch(int epoch) override;
  bool next_batch() override { return next_ < order_.size(); }
  int64_t step(int64_t step, double lr) override;
  bool report_due(int64_t step_in_epoch, int64_t steps_per_epoch, bool interrupted) const override;
  DeviceStepStats take_stats(int64_t step) override;
  // A stop between two reports leaves steps unread: their loss is read
  // (and a NaN among them caught) before the weights are.
  bool stats_pending() const override { return unread_ > 0; }

 private:
  DevicePlan& plan_;
  int dataset_;
  const std::vector<int64_t>& train_idx_;
  const TrainConfig& cfg_;
  std::vector<int64_t> order_;
  size_t next_ = 0;  // into order_
  int epoch_ = 0;
  int64_t unread_ = 0;  // steps queued since the last take_stats
};

class StreamedDeviceStepper : public Stepper {
 public:
  // train: byte images (Dataset::is_bytes), decoded by the loader's workers
  // with their picture-level draws (random resized crop, colour jitter);
  // dataset: its batch dataset on the plan (add_device_dataset), room for
  // cfg.batch samples.
  StreamedDeviceStepper(DevicePlan& plan, int dataset, const Dataset& train,
                        const std::vector<int64_t>& train_idx, const TrainConfig& cfg);
  void start_epoch(int epoch) override;
  bool next_batch() override { return loader_.next(batch_); }
  int64_t step(int64_t step, double lr) override;
  bool report_due(int64_t step_in_epoch, int64_t steps_per_epoch, bool interrupted) const override;
  DeviceStepStats take_stats(int64_t step) override;
  bool stats_pending() const override { return unread_ > 0; }

 private:
  DevicePlan& plan_;
  const TrainConfig& cfg_;
  int dataset_;  // the plan's batch dataset
  BatchLoader loader_;
  std::vector<int64_t> slots_;  // all_indices(batch): a step takes the whole batch
  Batch batch_;
  int epoch_ = 0;
  int64_t unread_ = 0;
};

class HostBatchDeviceStepper : public Stepper {
 public:
  // The loss and its gradient are computed on the host from the downloaded
  // output (host_loss: networks that score every step).
  HostBatchDeviceStepper(DevicePlan& plan, const Shape& output, const Dataset& train,
                         const std::vector<int64_t>& train_idx, const TrainConfig& cfg,
                         Loss& host_loss);
  void start_epoch(int epoch) override;
  bool next_batch() override { return loader_.next(batch_); }
  int64_t step(int64_t step, double lr) override;
  bool report_due(int64_t, int64_t, bool) const override { return true; }
  DeviceStepStats take_stats(int64_t step) override;

 private:
  DevicePlan& plan_;
  const Dataset& train_;
  const TrainConfig& cfg_;
  BatchLoader loader_;
  Tensor out_, dout_;
  BatchScorer host_scorer_;
  Batch batch_;
  int epoch_ = 0;
  HostStepTally tally_;
};

}  // namespace dc
