#pragma once
// Optimizers and learning-rate schedules. Update rules follow PyTorch's
// torch.optim exactly (same hyper-parameter meaning), so settings carry over.
#include <deepcanvas/enum_names.h>
#include <deepcanvas/layer.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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

// More steps than any run takes (10^12); a resumed count beyond it is damage.
constexpr int64_t kMaxOptimizerSteps = 1000000000000;

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Applies one update with learning rate lr to every parameter, using and
  // then leaving Param::grad as is (the trainer zeroes it).
  virtual void step(const std::vector<Param*>& params, double lr) = 0;
  // Moment buffers etc., by parameter index, for checkpoints ("m.3").
  virtual std::vector<std::pair<std::string, Tensor>> state() = 0;
  // Loads state written by state() for `params` (the ones step() will get).
  // Every tensor is checked before any is used: its name is one this
  // optimizer writes, its index names a parameter, it is f32 of that
  // parameter's shape with finite values, and Adam's moments come in pairs.
  // Throws IoError naming `source` and the tensor; the state is then as before.
  virtual void load_state(const std::vector<std::pair<std::string, Tensor>>& s,
                          const std::vector<Param*>& params, const std::string& source) = 0;
  int64_t steps() const { return t_; }
  // Throws IoError naming `source` unless 0 <= t <= kMaxOptimizerSteps:
  // Adam's bias correction needs a count it can raise beta to.
  void set_steps(int64_t t, const std::string& source = "optimizer state");

 protected:
  int64_t t_ = 0;
};

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& c);

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

// Learning rate at `step` (0-based) of `total_steps`, for base (or peak) lr.
double schedule_lr(const ScheduleConfig& s, double base_lr, int64_t step, int64_t total_steps,
                   int64_t steps_per_epoch);

}  // namespace dc
