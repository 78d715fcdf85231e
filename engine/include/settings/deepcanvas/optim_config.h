#pragma once
// The optimizer's and the learning-rate schedule's settings: training
// settings (train_config.h), kept apart from the optimizers themselves
// (optim.h, in the train library) so that the settings sit below the
// training machinery.
#include <deepcanvas/enum_names.h>

#include <cstdint>

namespace dc {

enum class OptimizerType { Sgd, Adam, AdamW };
template <>
struct EnumNames<OptimizerType> {
  static constexpr std::array<std::pair<OptimizerType, const char*>, 3> table{{
      {OptimizerType::Sgd, "sgd"},
      {OptimizerType::Adam, "adam"},
      {OptimizerType::AdamW, "adamw"},
  }};
};

struct OptimizerConfig {
  OptimizerType type = OptimizerType::Adam;
  double lr = 1e-3;
  double momentum = 0.9;      // SGD
  bool nesterov = false;      // SGD
  double weight_decay = 0.0;  // L2 for SGD/Adam, decoupled for AdamW
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
};

enum class ScheduleType { Constant, Step, Cosine, OneCycle };
template <>
struct EnumNames<ScheduleType> {
  static constexpr std::array<std::pair<ScheduleType, const char*>, 4> table{{
      {ScheduleType::Constant, "constant"},
      {ScheduleType::Step, "step"},
      {ScheduleType::Cosine, "cosine"},
      {ScheduleType::OneCycle, "onecycle"},
  }};
};

struct ScheduleConfig {
  ScheduleType type = ScheduleType::Constant;
  int64_t warmup_steps = 0;       // linear warm-up from 0 (constant/step/cosine)
  double step_epochs = 1;         // step: decay every step_epochs epochs ...
  double gamma = 0.1;             // ... by this factor
  double min_lr = 0.0;            // cosine: floor
  double pct_start = 0.3;         // onecycle: fraction of steps spent rising
  double div_factor = 25.0;       // onecycle: initial lr = max lr / div_factor
  double final_div_factor = 1e4;  // onecycle: final lr = initial lr / final_div_factor
};

}  // namespace dc
