#pragma once
// Optimizers and learning-rate schedules. Update rules follow PyTorch's
// torch.optim exactly (same hyper-parameter meaning), so settings carry over.
#include <deepcanvas/checkpoint.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/optim_config.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dc {

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

// Learning rate at `step` (0-based) of `total_steps`, for base (or peak) lr.
double schedule_lr(const ScheduleConfig& s, double base_lr, int64_t step, int64_t total_steps,
                   int64_t steps_per_epoch);

}  // namespace dc
