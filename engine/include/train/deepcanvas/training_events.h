#pragma once
// What a training run reports, step by step and epoch by epoch: the Trainer
// sends these (trainer.h) and a run log read back yields the same
// (run_log.h), so the app plots either alike.
#include <deepcanvas/telemetry.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace dc {

struct TrainEvent {
  enum class Kind {
    Started,
    Step,
    Epoch,
    Checkpoint,
    Paused,
    Resumed,
    Finished,
    Failed,
    Cancelled,
    Telemetry,  // GPU runs: an NVML sample (>= 4 Hz) and the plugin allocator's bytes
    // A measurement of the validation split inside an epoch, at one of
    // TrainConfig::validate_at: epoch, step_in_epoch, steps_per_epoch,
    // val_loss, val_accuracy and at; or of the test set at one of
    // TrainConfig::test_every_steps: test_loss, test_accuracy, train_seconds.
    Validation
  };
  Kind kind = Kind::Step;
  int epoch = 0, epochs = 0;  // 1-based epoch
  int64_t step = 0, steps_total = 0, step_in_epoch = 0, steps_per_epoch = 0;
  double loss = 0, accuracy = 0, lr = 0;  // Step: running means over the epoch so far
  // Step: loss and top-1 of the steps since the previous Step event alone
  // (one step on the CPU, up to 25 on a GPU), for per-step curves; the
  // running means above lag behind and restart every epoch.
  double batch_loss = 0, batch_accuracy = 0;
  double samples_per_s = 0, elapsed_s = 0, eta_s = 0;
  // Step: where the steps since the previous Step event spent their time,
  // per step on average (the diagnosis, advisor/diagnose.h, reads these):
  // waiting for the loader's next batch, inside the step itself (forward,
  // backward, update; on a device, until its queued work is done).
  int64_t steps_in_report = 0;
  double loader_wait_s = 0, compute_s = 0;
  // Step: the run's host tensor peak so far (as TrainResult::peak_tensor_bytes).
  int64_t peak_tensor_bytes = 0;
  // Validation: the point of TrainConfig::validate_at it answers (in epochs;
  // the steps run are epoch - 1 + step_in_epoch / steps_per_epoch epochs).
  double at = NAN;
  // Validation of the test set: training seconds of the run up to this
  // step; elapsed_s is then the run's seconds without these measurements.
  double train_seconds = NAN;
  // Epoch (NaN when not evaluated)
  double train_loss = 0, train_accuracy = 0;
  double val_loss = NAN, val_accuracy = NAN, test_loss = NAN, test_accuracy = NAN;
  std::vector<std::vector<int64_t>> confusion;  // on the test (else validation) set
  bool best = false;
  std::string message;  // Failed: the reason; Checkpoint: the path; Started: a summary
  // Telemetry: the GPU's reading, and the backend allocator's allocated and
  // reserved bytes as of the last reported step (-1 before the first).
  GpuSample gpu;
  int64_t device_allocated = -1, device_reserved = -1;
};

const char* event_kind_name(TrainEvent::Kind k);

}  // namespace dc
