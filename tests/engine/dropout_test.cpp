// Dropout: identity in evaluation; in training a seeded mask keeps about
// 1 - rate of the values, scaled by 1 / (1 - rate), and backward reuses it.
#include <deepcanvas/layer.h>
#include <deepcanvas/parallel.h>
#include <deepcanvas/rng.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gradcheck.h"

namespace dc {
namespace {

const LayerDescriptor& dropout() {
  register_builtin_layers();
  return LayerRegistry::instance().get("Dropout");
}

std::unique_ptr<Layer> make(double rate, const Shape& in) {
  Attrs a;
  a.set("rate", rate);
  a = dropout().with_defaults(a);
  return dropout().create(a, {in}, dropout().infer({in}, a));
}

Tensor ramp(Shape s) {
  Tensor x(s);
  // Nonzero everywhere so a zero in the output can only come from the mask.
  for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = 0.5f + float(i % 97) * 0.01f;
  return x;
}

TEST(Dropout, EvalIsIdentity) {
  auto l = make(0.5, Shape{4, 5});
  Tensor x = ramp(Shape{3, 4, 5}), y(x.shape());
  Rng rng(1);
  RunContext ctx{false, &rng};
  l->forward({&x}, y, ctx);
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(y.f32()[i], x.f32()[i]);
  Tensor dy = ramp(x.shape()), dx(x.shape());
  dx.fill(1.f);
  l->backward({&x}, y, dy, {&dx}, ctx);
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(dx.f32()[i], 1.f + dy.f32()[i]);
}

TEST(Dropout, TrainingKeepsAboutOneMinusRateAndRescales) {
  for (double rate : {0.1, 0.5, 0.8}) {
    SCOPED_TRACE(rate);
    const int64_t n = 200000;
    auto l = make(rate, Shape{n});
    Tensor x = ramp(Shape{1, n}), y(x.shape());
    Rng rng(123);
    RunContext ctx{true, &rng};
    l->forward({&x}, y, ctx);
    int64_t kept = 0;
    const float scale = float(1.0 / (1.0 - rate));
    for (int64_t i = 0; i < n; ++i) {
      float v = y.f32()[i];
      if (v == 0.f) continue;
      ++kept;
      ASSERT_NEAR(v, x.f32()[i] * scale, 1e-6f * std::fabs(v));
    }
    // Binomial standard deviation is at most sqrt(n)/2 ~ 224; allow ~6 sigma.
    EXPECT_NEAR(double(kept), (1.0 - rate) * n, 1400.0);
  }
}

TEST(Dropout, MaskComesFromTheStepGeneratorAndDrivesBackward) {
  auto l = make(0.3, Shape{50});
  Tensor x = ramp(Shape{4, 50}), y1(x.shape()), y2(x.shape()), y3(x.shape());
  Rng a(7), b(7), c(8);
  RunContext ca{true, &a}, cb{true, &b}, cc{true, &c};
  l->forward({&x}, y1, ca);
  l->forward({&x}, y3, cc);
  l->forward({&x}, y2, cb);  // last forward: seed 7 again
  int differ = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    EXPECT_EQ(y1.f32()[i], y2.f32()[i]);
    differ += (y1.f32()[i] == 0.f) != (y3.f32()[i] == 0.f);
  }
  EXPECT_GT(differ, 0);
  Tensor dy(x.shape()), dx(x.shape());
  dy.fill(2.f);
  l->backward({&x}, y2, dy, {&dx}, cb);
  for (int64_t i = 0; i < x.numel(); ++i) {
    float expect = y2.f32()[i] == 0.f ? 0.f : 2.f / 0.7f;
    EXPECT_NEAR(dx.f32()[i], expect, 1e-5f);
  }
}

TEST(Dropout, TheMaskDoesNotDependOnTheThreadCount) {
  const int64_t n = 100000;  // several parallel chunks
  auto l = make(0.4, Shape{n});
  Tensor x = ramp(Shape{1, n}), y1(x.shape()), y4(x.shape());
  const int before = num_threads();
  Rng a(11), b(11);
  RunContext ca{true, &a}, cb{true, &b};
  set_num_threads(1);
  l->forward({&x}, y1, ca);
  set_num_threads(4);
  l->forward({&x}, y4, cb);
  set_num_threads(before);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y1.f32()[i], y4.f32()[i]) << i;
}

TEST(Dropout, RateZeroIsIdentityInTraining) {
  auto l = make(0.0, Shape{10});
  Tensor x = ramp(Shape{2, 10}), y(x.shape());
  Rng rng(3);
  RunContext ctx{true, &rng};
  l->forward({&x}, y, ctx);
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(y.f32()[i], x.f32()[i]);
}

TEST(Dropout, GradientsMatchFiniteDifferences) {
  // gradcheck reseeds the step generator before every forward, so the mask
  // is the same for each finite difference.
  test::check_layer_gradients("Dropout", {}, {Shape{6, 5}}, 3);
  Attrs a;
  a.set("rate", 0.2);
  test::check_layer_gradients("Dropout", a, {Shape{2, 3, 4}}, 2);
  test::GradCheckOptions eval;
  eval.training = false;
  test::check_layer_gradients("Dropout", a, {Shape{7}}, 2, eval);
}

TEST(Dropout, SchemaAndShape) {
  const LayerDescriptor& d = dropout();
  EXPECT_EQ(d.category, "Regularization");
  EXPECT_EQ(d.num_inputs(Attrs{}), 1);
  const AttrSpec* r = d.find_attr("rate");
  ASSERT_NE(r, nullptr);
  EXPECT_DOUBLE_EQ(std::get<double>(r->def), 0.5);
  EXPECT_EQ(validate_attr(*r, AttrValue(0.99)), "");
  EXPECT_NE(validate_attr(*r, AttrValue(1.0)), "");
  EXPECT_NE(validate_attr(*r, AttrValue(-0.1)), "");
  Attrs a = d.with_defaults({});
  EXPECT_EQ(d.infer({Shape{3, 8, 8}}, a), (Shape{3, 8, 8}));
  EXPECT_EQ(d.cost({Shape{10}}, Shape{10}, a).params, 0);
  EXPECT_TRUE(make(0.5, Shape{4})->params().empty());
}

}  // namespace
}  // namespace dc
