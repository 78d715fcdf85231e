// The host-batch device stepper with a host loss, the path a GPU run of a
// network that predicts every step takes (the Character Transformer on
// CUDA), checked without a GPU: a DevicePlan that runs its forward,
// backward and update on a second host Plan stands in for the plugin, so
// what is checked is the stepper's own part (batches, the host scorer, the
// order of zero_grad / forward / loss / backward / step, the statistics).
// It must train exactly as the CPU stepper does.
#include <deepcanvas/backend.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/loss.h>
#include <deepcanvas/optim.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/rng.h>
#include <deepcanvas/sequence_data.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

// The steppers are the Trainer's private classes.
#include "../../engine/train/stepper.h"
#include "test_util.h"

namespace dc {
namespace {

// A DevicePlan on the host: the entry points a host-batch stepper uses run
// on `plan` with a CPU optimizer; the resident-data ones are not used by it
// and throw.
class HostDevicePlan : public DevicePlan {
 public:
  HostDevicePlan(Plan& plan, const OptimizerConfig& o)
      : plan_(plan), opt_(make_optimizer(o)), params_(plan.trainable()) {}

  void upload_params() override {}
  void download_params() override {}
  void download_grads() override {}
  void forward(const Tensor& x, Tensor& out, bool training, uint64_t seed) override {
    rng_.reseed(seed);
    ctx_ = RunContext{training, &rng_};
    out.copy_from(plan_.forward(x, ctx_));
  }
  void backward(const Tensor& dout) override { plan_.backward(dout, ctx_); }
  void zero_grad() override { plan_.zero_grad(); }
  float loss(const int32_t*, const Tensor*, Tensor*) override { unused("loss"); }
  void step(double lr) override {
    opt_->step(params_, lr);
    ++steps_;
  }
  int add_dataset(const Dataset&) override { unused("add_dataset"); }
  void train_step(int, const int64_t*, int64_t, double, uint64_t) override { unused("train_step"); }
  DeviceStepStats take_stats() override { unused("take_stats"); }
  void predict(int, const int64_t*, int64_t, float*) override { unused("predict"); }
  std::vector<std::pair<std::string, Tensor>> optimizer_state() override { return {}; }
  void load_optimizer_state(const std::vector<std::pair<std::string, Tensor>>&) override {}
  int64_t optimizer_steps() const override { return steps_; }
  void set_optimizer_steps(int64_t t) override { steps_ = t; }
  DeviceMemory memory() override { return {}; }
  std::string device_name() const override { return "host stand-in"; }

 private:
  [[noreturn]] static void unused(const char* what) {
    throw Error(std::string("HostDevicePlan::") + what + " is not used by a host-batch stepper");
  }
  Plan& plan_;
  std::unique_ptr<Optimizer> opt_;
  std::vector<Param*> params_;
  Rng rng_{0};
  RunContext ctx_;
  int64_t steps_ = 0;
};

// Runs `steps` steps of one epoch and returns the statistics.
DeviceStepStats run(Stepper& s, int steps, double lr) {
  s.start_epoch(1);
  DeviceStepStats total;
  for (int k = 0; k < steps && s.next_batch(); ++k) {
    s.step(k, lr);
    const DeviceStepStats st = s.take_stats(k + 1);
    total.loss_sum += st.loss_sum;
    total.correct += st.correct;
    total.samples += st.samples;
  }
  return total;
}

TEST(HostBatchStepper, ANetworkPredictingEveryStepTrainsAsOnTheCpu) {
  test::TmpDir dir;
  std::string text;
  for (int i = 0; i < 60; ++i) text += "the cat sat on the mat. ";
  TrainTest tt = load_text_dataset(dir.write("t.txt", text), {8, 1, 0.1});
  const int64_t V = tt.train.num_classes;
  // With dropout, so the mask's seed is part of what must agree.
  const Graph g = test::every_step_model(8, V, 0.2);
  TrainConfig c;
  c.batch = 16;
  c.seed = 5;
  c.optimizer.type = OptimizerType::Adam;
  c.optimizer.lr = 0.01;
  std::vector<int64_t> idx(size_t(tt.train.size()));
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = int64_t(i);

  Plan cpu_plan(g, c.batch), dev_plan(g, c.batch);
  cpu_plan.init_params(11);
  dev_plan.init_params(11);
  auto cpu_loss = make_loss(c.loss), dev_loss = make_loss(c.loss);
  auto cpu_opt = make_optimizer(c.optimizer);
  CpuStepper cpu(cpu_plan, *cpu_loss, *cpu_opt, tt.train, idx, c);
  HostDevicePlan device(dev_plan, c.optimizer);
  HostBatchDeviceStepper host_batch(device, dev_plan.output_shape(), tt.train, idx, c,
                                    dev_loss.get());

  const int kSteps = 12;
  const DeviceStepStats a = run(cpu, kSteps, c.optimizer.lr);
  const DeviceStepStats b = run(host_batch, kSteps, c.optimizer.lr);
  ASSERT_EQ(a.samples, kSteps * c.batch);
  EXPECT_EQ(b.samples, a.samples);
  // The figures shown are the last step's loss over V classes: below the
  // uniform log(V) after training, never that of the T x V softmax.
  EXPECT_LT(a.loss_sum / double(a.samples), std::log(double(V)));
  EXPECT_NEAR(b.loss_sum, a.loss_sum, 1e-5 * std::abs(a.loss_sum));
  EXPECT_EQ(b.correct, a.correct);
  // The same updates: every weight agrees.
  for (size_t k = 0; k < cpu_plan.params().size(); ++k) {
    const Tensor& x = cpu_plan.params()[k].param->value;
    const Tensor& y = dev_plan.params()[k].param->value;
    ASSERT_EQ(x.numel(), y.numel());
    double worst = 0;
    for (int64_t i = 0; i < x.numel(); ++i)
      worst = std::max(worst, double(std::abs(x.f32()[i] - y.f32()[i])));
    EXPECT_LE(worst, 1e-6) << cpu_plan.params()[k].name;
  }
  // And the weights moved: the comparison is not of two untouched copies.
  Plan fresh(g, c.batch);
  fresh.init_params(11);
  double moved = 0;
  const Tensor& w0 = fresh.params().back().param->value;
  const Tensor& w1 = dev_plan.params().back().param->value;
  for (int64_t i = 0; i < w0.numel(); ++i) moved += std::abs(w0.f32()[i] - w1.f32()[i]);
  EXPECT_GT(moved, 1e-3);
}

}  // namespace
}  // namespace dc
