#include <deepcanvas/errors.h>
#include <deepcanvas/optim.h>
#include <deepcanvas/settings.h>
#include <gtest/gtest.h>

#include <cmath>

namespace dc {
namespace {

// One scalar parameter, stepped with given gradients; compared against the
// update rules written out by hand from PyTorch's documentation.
struct Scalar {
  Param p;
  Scalar(float w, bool decay = true) {
    p.value = Tensor::from(Shape{1}, {w});
    p.grad = Tensor(Shape{1});
    p.decay = decay;
  }
  float w() const { return p.value.f32()[0]; }
};

TEST(Optimizer, SgdPlainMomentumNesterovAndWeightDecay) {
  OptimizerConfig c;
  c.type = OptimizerType::Sgd;
  c.momentum = 0.0;
  Scalar s(1.0f);
  auto o = make_optimizer(c);
  s.p.grad.f32()[0] = 0.5f;
  o->step({&s.p}, 0.1);
  EXPECT_FLOAT_EQ(s.w(), 1.0f - 0.05f);

  c.momentum = 0.9;
  c.weight_decay = 0.1;
  Scalar m(1.0f);
  o = make_optimizer(c);
  double w = 1.0, buf = 0;
  for (int t = 0; t < 3; ++t) {
    m.p.grad.f32()[0] = 0.5f;
    o->step({&m.p}, 0.1);
    double d = 0.5 + 0.1 * w;
    buf = t == 0 ? d : 0.9 * buf + d;
    w -= 0.1 * buf;
  }
  EXPECT_NEAR(m.w(), w, 1e-6);

  c.nesterov = true;
  Scalar n(1.0f);
  o = make_optimizer(c);
  w = 1.0;
  buf = 0;
  for (int t = 0; t < 3; ++t) {
    n.p.grad.f32()[0] = 0.5f;
    o->step({&n.p}, 0.1);
    double d = 0.5 + 0.1 * w;
    buf = t == 0 ? d : 0.9 * buf + d;
    w -= 0.1 * (d + 0.9 * buf);
  }
  EXPECT_NEAR(n.w(), w, 1e-6);
}

TEST(Optimizer, AdamAndAdamWFollowTheirFormulas) {
  for (OptimizerType type : {OptimizerType::Adam, OptimizerType::AdamW}) {
    OptimizerConfig c;
    c.type = type;
    c.weight_decay = 0.01;
    Scalar s(2.0f);
    auto o = make_optimizer(c);
    double w = 2.0, m = 0, v = 0, lr = 0.01;
    const double grads[] = {0.3, -0.2, 0.7, 0.1};
    for (int t = 1; t <= 4; ++t) {
      s.p.grad.f32()[0] = float(grads[t - 1]);
      o->step({&s.p}, lr);
      double g = grads[t - 1];
      if (type == OptimizerType::Adam)
        g += 0.01 * w;
      else
        w *= 1 - lr * 0.01;
      m = 0.9 * m + 0.1 * g;
      v = 0.999 * v + 0.001 * g * g;
      double mh = m / (1 - std::pow(0.9, t)), vh = v / (1 - std::pow(0.999, t));
      w -= lr * mh / (std::sqrt(vh) + 1e-8);
    }
    EXPECT_NEAR(s.w(), w, 1e-5) << type;
  }
}

TEST(Optimizer, NoDecayParamsAreNotDecayed) {
  OptimizerConfig c;
  c.type = OptimizerType::AdamW;
  c.weight_decay = 0.5;
  Scalar s(1.0f, /*decay=*/false);
  auto o = make_optimizer(c);
  o->step({&s.p}, 0.1);  // zero gradient: only decay could move it
  EXPECT_FLOAT_EQ(s.w(), 1.0f);
}

TEST(Optimizer, StateRoundTripsSoResumedRunsMatch) {
  OptimizerConfig c;
  Scalar a(1.0f), b(1.0f);
  auto oa = make_optimizer(c);
  for (int t = 0; t < 3; ++t) {
    a.p.grad.f32()[0] = 0.1f * float(t + 1);
    oa->step({&a.p}, 0.01);
  }
  auto ob = make_optimizer(c);
  ob->load_state(oa->state(), {&b.p}, "a.safetensors");
  ob->set_steps(oa->steps());
  b.p.value.copy_from(a.p.value);
  a.p.grad.f32()[0] = b.p.grad.f32()[0] = 0.5f;
  oa->step({&a.p}, 0.01);
  ob->step({&b.p}, 0.01);
  EXPECT_EQ(a.w(), b.w());
}

// Issue 17 item 1: a damaged optimizer state is refused, naming the tensor,
// before any of it is used (it used to overflow the heap, dereference null
// or allocate hundreds of GB).
std::string load_error(OptimizerType type,
                       const std::vector<std::pair<std::string, Tensor>>& state) {
  OptimizerConfig c;
  c.type = type;
  Scalar a(1.0f), b(2.0f);
  b.p.value = Tensor(Shape{2, 3});
  b.p.grad = Tensor(Shape{2, 3});
  auto o = make_optimizer(c);
  try {
    o->load_state(state, {&a.p, &b.p}, "ck.safetensors");
  } catch (const IoError& e) {
    return e.what();
  }
  return "";
}

TEST(Optimizer, DamagedStateIsRefusedNamingTheTensor) {
  Tensor one(Shape{1}), six(Shape{2, 3});
  auto expect = [](const std::string& err, const std::string& part) {
    EXPECT_NE(err.find(part), std::string::npos) << "'" << err << "' lacks '" << part << "'";
    EXPECT_EQ(err.rfind("ck.safetensors: ", 0), 0u) << err;
  };
  EXPECT_EQ(
      load_error(
          OptimizerType::Adam,
          {{"exp_avg.0", one}, {"exp_avg_sq.0", one}, {"exp_avg.1", six}, {"exp_avg_sq.1", six}}),
      "");
  expect(load_error(OptimizerType::Adam, {{"exp_avg.1", one}, {"exp_avg_sq.1", six}}),
         "'exp_avg.1' is 1 but parameter 1 is 2x3");
  expect(load_error(OptimizerType::Adam, {{"exp_avg.0", one}}),
         "'exp_avg.0' has no exp_avg_sq.0 beside it");
  expect(load_error(OptimizerType::Adam, {{"exp_avg_sq.0", one}}),
         "'exp_avg_sq.0' has no exp_avg.0");
  expect(load_error(OptimizerType::Adam, {{"exp_avg.4000000000", one}}),
         "'exp_avg.4000000000' is for parameter 4000000000 but the network has 2");
  expect(load_error(OptimizerType::Adam, {{"exp_avg.2", one}}),
         "network has 2 trainable parameters");
  expect(load_error(OptimizerType::Adam, {{"exp_avg.abc", one}}),
         "'exp_avg.abc' has no parameter index");
  expect(load_error(OptimizerType::Adam, {{"exp_avg.0", one}, {"exp_avg.0", one}}),
         "appears twice");
  expect(load_error(OptimizerType::Adam, {{"exp_avg.0", Tensor(Shape{1}, DType::F16)}}),
         "'exp_avg.0' is F16; optimizer state is F32");
  expect(load_error(OptimizerType::AdamW, {{"momentum.0", one}}),
         "is not AdamW's (exp_avg.N, exp_avg_sq.N)");
  Tensor nan = Tensor::from(Shape{1}, {NAN}), neg = Tensor::from(Shape{1}, {-1.0f});
  expect(load_error(OptimizerType::Adam, {{"exp_avg.0", nan}, {"exp_avg_sq.0", one}}),
         "NaN or infinite");
  expect(load_error(OptimizerType::Adam, {{"exp_avg.0", one}, {"exp_avg_sq.0", neg}}), "negative");
  expect(load_error(OptimizerType::Sgd, {{"momentum.1", one}}),
         "'momentum.1' is 1 but parameter 1 is 2x3");
  expect(load_error(OptimizerType::Sgd, {{"exp_avg.0", one}}), "is not SGD's (momentum.N)");
  expect(load_error(OptimizerType::Sgd, {{"momentum", one}}), "is not SGD's");
}

TEST(Optimizer, ARefusedStateLeavesTheOptimizerAsItWas) {
  OptimizerConfig c;
  Scalar a(1.0f), b(1.0f);
  auto oa = make_optimizer(c), ob = make_optimizer(c);
  for (int t = 0; t < 3; ++t) {
    a.p.grad.f32()[0] = b.p.grad.f32()[0] = 0.1f * float(t + 1);
    oa->step({&a.p}, 0.01);
    ob->step({&b.p}, 0.01);
  }
  EXPECT_THROW(ob->load_state({{"exp_avg.0", Tensor(Shape{1})}}, {&b.p}, "x"), IoError);
  a.p.grad.f32()[0] = b.p.grad.f32()[0] = 0.5f;
  oa->step({&a.p}, 0.01);
  ob->step({&b.p}, 0.01);
  EXPECT_EQ(a.w(), b.w());
}

// Issue 17 item 2: a step count Adam's bias correction cannot use.
TEST(Optimizer, StepCountOutOfRangeIsRefused) {
  auto o = make_optimizer(OptimizerConfig{});
  EXPECT_THROW(o->set_steps(-1, "ck"), IoError);
  EXPECT_THROW(o->set_steps(INT64_MAX, "ck"), IoError);
  EXPECT_THROW(o->set_steps(kMaxOptimizerSteps + 1, "ck"), IoError);
  o->set_steps(kMaxOptimizerSteps, "ck");
  EXPECT_EQ(o->steps(), kMaxOptimizerSteps);
  try {
    o->set_steps(-1, "ck.safetensors");
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("ck.safetensors: step -1"), std::string::npos) << e.what();
  }
}

TEST(Optimizer, UnknownNameIsRejectedWithTheKnownOnes) {
  const SettingSpec* s = find_setting("optimizer.type");
  ASSERT_NE(s, nullptr);
  try {
    parse_setting_text(*s, "rmsprop");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sgd, adam, adamw"), std::string::npos) << e.what();
  }
}

TEST(Schedule, ConstantStepCosineWarmup) {
  ScheduleConfig s;
  EXPECT_DOUBLE_EQ(schedule_lr(s, 0.1, 50, 100, 10), 0.1);
  s.type = ScheduleType::Step;
  s.step_epochs = 2;
  s.gamma = 0.5;
  EXPECT_DOUBLE_EQ(schedule_lr(s, 0.1, 19, 100, 10), 0.1);
  EXPECT_DOUBLE_EQ(schedule_lr(s, 0.1, 20, 100, 10), 0.05);
  EXPECT_DOUBLE_EQ(schedule_lr(s, 0.1, 45, 100, 10), 0.025);
  s.type = ScheduleType::Cosine;
  EXPECT_NEAR(schedule_lr(s, 0.1, 0, 100, 10), 0.1, 1e-12);
  EXPECT_NEAR(schedule_lr(s, 0.1, 50, 100, 10), 0.05, 1e-12);
  EXPECT_NEAR(schedule_lr(s, 0.1, 100, 100, 10), 0.0, 1e-12);
  s.type = ScheduleType::Constant;
  s.warmup_steps = 10;
  EXPECT_NEAR(schedule_lr(s, 0.1, 0, 100, 10), 0.01, 1e-12);
  EXPECT_NEAR(schedule_lr(s, 0.1, 9, 100, 10), 0.1, 1e-12);
}

TEST(Schedule, OneCycleMatchesPyTorchShape) {
  // OneCycleLR(max_lr=3e-3, total_steps=100, pct_start=0.3): starts at
  // max/25, peaks at step 29 (pct*total - 1), ends at max/25/1e4.
  ScheduleConfig s;
  s.type = ScheduleType::OneCycle;
  EXPECT_NEAR(schedule_lr(s, 3e-3, 0, 100, 10), 3e-3 / 25, 1e-12);
  EXPECT_NEAR(schedule_lr(s, 3e-3, 29, 100, 10), 3e-3, 1e-12);
  EXPECT_NEAR(schedule_lr(s, 3e-3, 99, 100, 10), 3e-3 / 25 / 1e4, 1e-12);
  EXPECT_LT(schedule_lr(s, 3e-3, 10, 100, 10), schedule_lr(s, 3e-3, 20, 100, 10));
  EXPECT_GT(schedule_lr(s, 3e-3, 50, 100, 10), schedule_lr(s, 3e-3, 80, 100, 10));
}

}  // namespace
}  // namespace dc
