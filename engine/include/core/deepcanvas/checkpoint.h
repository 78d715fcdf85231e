#pragma once
// Training checkpoints: a safetensors file holding the model's tensors, the
// optimizer's state under "optimizer.<name>", and metadata the CLI and the
// app need to resume training or run inference without the project's data.
#include <deepcanvas/tensor.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace dc {

constexpr int kCheckpointFormatVersion = 1;
// The most epochs a checkpoint may claim (as --epochs allows): more is damage,
// and epoch + 1 must not overflow.
constexpr int64_t kMaxCheckpointEpoch = 100000;
// The most optimizer steps a checkpoint may claim: more than any run takes
// (10^12), so a larger count is damage; Optimizer::set_steps (optim.h)
// refuses the same.
constexpr int64_t kMaxOptimizerSteps = 1000000000000;

// Metadata keys: format, format_version, epoch, step, input_shape,
// num_classes, mean, stddev, class_names (JSON array), test_accuracy
// (optional), frozen_params (JSON array; only when layers were frozen),
// sweep_trial (only in a sweep's kept weights: which trial wrote them).
struct CheckpointInfo {
  std::vector<std::pair<std::string, Tensor>> model, optimizer;
  std::map<std::string, std::string> metadata;
  int epoch = 0;
  int64_t step = 0;
  // The parameters that were frozen when it was written ("conv1.weight"):
  // optimizer state is indexed by the trainable ones, so a resume must
  // freeze the same.
  std::vector<std::string> frozen_params;
  int sweep_trial = -1;  // the sweep trial that wrote it; -1: not a sweep's
};
// Reads and checks a checkpoint: format and format_version, epoch and step
// in range, mean finite and stddev positive (when present), every model
// tensor f32 and finite. The optimizer's tensors are checked against the
// parameters when loaded (Optimizer::load_state). Throws IoError naming the
// file and the field or tensor.
CheckpointInfo read_checkpoint(const std::string& path);
// The same checks of the metadata alone (model and optimizer left empty):
// which epoch or sweep trial wrote a file, without reading its tensors.
CheckpointInfo read_checkpoint_metadata(const std::string& path);

// What a checkpoint records besides its tensors.
struct CheckpointMeta {
  int epoch = 0;
  int64_t step = 0;
  std::string input_shape;  // Shape::str(true)
  int64_t num_classes = 0;
  float mean = 0.0f, stddev = 1.0f;
  std::vector<std::string> class_names;
  // The finished run's test accuracy, so a later run can tell whether its
  // model is better before replacing the file; NaN (not written) mid-run.
  double test_accuracy = NAN;
  std::vector<std::string> frozen_params;  // see CheckpointInfo
  // A sweep's kept weights name their trial, so a front end can tell
  // whether the file still holds the sweep's best (a crash between writing
  // the weights and the state file leaves them apart); -1: not written.
  int sweep_trial = -1;
};

// Writes the model's tensors and the optimizer's (prefixed "optimizer.")
// atomically, creating the parent folder.
void write_checkpoint(const std::string& path, std::vector<std::pair<std::string, Tensor>> model,
                      const std::vector<std::pair<std::string, Tensor>>& optimizer,
                      const CheckpointMeta& meta);

}  // namespace dc
