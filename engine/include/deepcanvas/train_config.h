#pragma once
// The settings of one training run, as a project stores them and the CLI and
// the app edit them. Kept apart from the Trainer so that project files and
// settings code do not pull in the training machinery.
#include <deepcanvas/data.h>
#include <deepcanvas/optim.h>

#include <cstdint>
#include <string>

namespace dc {

struct TrainConfig {
  int epochs = 3;
  int64_t batch = 64;
  OptimizerConfig optimizer;
  ScheduleConfig schedule;
  std::string loss = "softmax_cross_entropy";
  double label_smoothing = 0.0;
  double val_split = 0.0;  // fraction of the training set held out for validation
  uint64_t seed = 42;
  int threads = 0;                    // 0: all cores
  bool normalize = true;              // standardise inputs with the training set's mean/std
  std::string checkpoint_dir;         // "" = none; else last.safetensors / best.safetensors there
  std::string resume;                 // a checkpoint to continue from
  int early_stopping_patience = 0;    // epochs without improvement; 0 = off
  bool restore_best = true;           // at the end, load the best epoch's weights (if any was kept)
  int64_t steps_per_epoch_limit = 0;  // 0 = whole epoch (tests and quick looks use less)
  std::string device = "cpu";
  // Arithmetic of a CUDA run: "fp32", "bf16" or "fp16" (docs/ARCHITECTURE.md
  // says exactly what runs in reduced precision). The CPU computes in fp32 only.
  std::string precision = "fp32";
  // Random crop with padding, flips, rotation, translation and brightness
  // of image batches in training (CPU and CUDA alike; evaluation never
  // augments).
  AugmentConfig augment;
};

}  // namespace dc
