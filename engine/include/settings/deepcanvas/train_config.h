#pragma once
// The settings of one training run, as a project stores them and the CLI and
// the app edit them. Kept apart from the Trainer so that project files and
// settings code do not pull in the training machinery.
#include <deepcanvas/augment_config.h>
#include <deepcanvas/device_spec.h>
#include <deepcanvas/enum_names.h>
#include <deepcanvas/loss_type.h>
#include <deepcanvas/optim_config.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dc {

// Arithmetic of a CUDA run (docs/ARCHITECTURE.md says exactly what runs in
// reduced precision). The CPU computes in fp32 only.
enum class Precision { Fp32, Bf16, Fp16 };
template <>
struct EnumNames<Precision> {
  static constexpr std::array<std::pair<Precision, const char*>, 3> table{{
      {Precision::Fp32, "fp32"},
      {Precision::Bf16, "bf16"},
      {Precision::Fp16, "fp16"},
  }};
};

struct TrainConfig {
  int epochs = 3;
  int64_t batch = 64;
  OptimizerConfig optimizer;
  ScheduleConfig schedule;
  LossType loss = LossType::SoftmaxCrossEntropy;
  double label_smoothing = 0.0;
  double val_split = 0.0;  // fraction of the training set held out for validation
  uint64_t seed = 42;
  int threads = 0;             // 0: all cores
  bool normalize = true;       // standardise inputs with the training set's mean/std
  std::string checkpoint_dir;  // "" = none; else last.safetensors / best.safetensors there
  std::string resume;          // a checkpoint to continue from
  // A safetensors file (a pretrained base): a fresh run (epoch 1, new
  // optimizer state) starts from its tensors wherever a parameter's name
  // matches; the rest (a new head) is initialised from the seed.
  std::string init_weights;
  int early_stopping_patience = 0;    // epochs without improvement; 0 = off
  bool restore_best = true;           // at the end, load the best epoch's weights (if any was kept)
  int64_t steps_per_epoch_limit = 0;  // 0 = whole epoch (tests and quick looks use less)
  // Points inside epochs, in epochs run (0.5: halfway through epoch 1; 1.25:
  // a quarter into epoch 2), where the Trainer also measures the validation
  // split and sends a Validation event; sweeps put ASHA's fractional rungs
  // here. Each is taken after the step nearest to it (at least one step into
  // its epoch and one before its end); whole numbers are epoch ends, which
  // are measured anyway, and are ignored.
  std::vector<double> validate_at;
  // Also measure the test set after every N-th step (0: at epoch ends only),
  // reported as Validation events with test_accuracy and the training
  // seconds so far: time-to-accuracy curves finer than an epoch (benchmarks).
  // Like validation, it never selects the model and is not training time.
  int64_t test_every_steps = 0;
  DeviceSpec device;  // cpu
  Precision precision = Precision::Fp32;
  // Random crop with padding, flips, rotation, translation and brightness
  // of image batches in training (CPU and CUDA alike; evaluation never
  // augments).
  AugmentConfig augment;
};

}  // namespace dc
