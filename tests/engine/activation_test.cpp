// Activations: derivatives by finite differences (inputs kept off ReLU's
// kink), values against libm in double, NaN propagation and Softmax rows.
#include <deepcanvas/layer.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "gradcheck.h"
#include "test_util.h"

namespace dc {
namespace {

using test::attrs;
using test::desc;

Tensor apply(const std::string& type, const Attrs& a, const Tensor& x) {
  const auto& d = desc(type);
  Attrs full = d.with_defaults(a);
  Shape s = x.shape().without_batch();
  auto layer = d.create(full, {s}, d.infer({s}, full));
  Tensor y(x.shape());
  RunContext ctx;
  layer->forward({&x}, y, ctx);
  return y;
}

Tensor ramp(int64_t n, float lo, float hi) {
  Tensor x(Shape{1, n});
  for (int64_t i = 0; i < n; ++i) x.f32()[i] = lo + (hi - lo) * float(i) / float(n - 1);
  return x;
}

TEST(Activation, GradientsMatchFiniteDifferences) {
  test::GradCheckOptions kinkfree;
  kinkfree.distinct_inputs = true;  // no input within eps of 0
  kinkfree.eps = 1e-3f;
  for (const char* t : {"ReLU", "LeakyReLU"})
    test::check_layer_gradients(t, {}, {Shape{3, 5, 5}}, 2, kinkfree);
  test::check_layer_gradients("LeakyReLU", attrs({{"slope", 0.2}}), {Shape{40}}, 2, kinkfree);
  // ReLU6 over [-7.3, 7.1]: both kinks (0 and 6, each at least 0.02 from
  // every input of the grid) and the flat parts.
  test::GradCheckOptions relu6 = kinkfree;
  relu6.input_lo = -7.3f;
  relu6.input_hi = 7.1f;
  test::check_layer_gradients("ReLU6", {}, {Shape{3, 5, 5}}, 2, relu6);
  test::GradCheckOptions wide;
  wide.input_lo = -4;
  wide.input_hi = 4;
  for (const char* t : {"Sigmoid", "Tanh", "GELU", "Softmax"}) {
    test::check_layer_gradients(t, {}, {Shape{10}}, 3, wide);
    test::check_layer_gradients(t, {}, {Shape{2, 3, 4}}, 2);
  }
}

TEST(Activation, ValuesMatchLibmAcrossTheRange) {
  Tensor x = ramp(2001, -30, 30);
  Tensor sg = apply("Sigmoid", {}, x), th = apply("Tanh", {}, x), ge = apply("GELU", {}, x);
  Tensor re = apply("ReLU", {}, x), lr = apply("LeakyReLU", attrs({{"slope", 0.1}}), x);
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = x.f32()[i];
    double s = 1 / (1 + std::exp(-v)), t = std::tanh(v),
           g = 0.5 * v * std::erfc(-v / std::sqrt(2.0));
    EXPECT_NEAR(sg.f32()[i], s, 1e-6 * std::max(1.0, s) + 4e-7 * s) << v;
    EXPECT_NEAR(th.f32()[i], t, 2e-6 * std::fabs(t) + 1e-7) << v;
    EXPECT_NEAR(ge.f32()[i], g, 1e-5 * std::fabs(g) + 1e-7) << v;
    EXPECT_EQ(re.f32()[i], v > 0 ? float(v) : 0.0f);
    EXPECT_FLOAT_EQ(lr.f32()[i], v > 0 ? float(v) : float(0.1 * v));
  }
}

TEST(Activation, NanPropagatesAsInPyTorch) {
  Tensor x(Shape{1, 3});
  x.f32()[0] = std::numeric_limits<float>::quiet_NaN();
  x.f32()[1] = 1;
  x.f32()[2] = -1;
  for (const char* t : {"ReLU", "ReLU6", "Sigmoid", "Tanh", "GELU"})
    EXPECT_TRUE(std::isnan(apply(t, {}, x).f32()[0])) << t;
}

TEST(Activation, Relu6ClampsToZeroAndSix) {
  Tensor x(Shape{1, 6});
  const float in[] = {-3.f, 0.f, 2.5f, 6.f, 7.f, std::numeric_limits<float>::quiet_NaN()};
  std::copy(in, in + 6, x.f32());
  Tensor y = apply("ReLU6", {}, x);
  EXPECT_EQ(y.f32()[0], 0.f);
  EXPECT_EQ(y.f32()[1], 0.f);
  EXPECT_EQ(y.f32()[2], 2.5f);
  EXPECT_EQ(y.f32()[3], 6.f);
  EXPECT_EQ(y.f32()[4], 6.f);
  EXPECT_TRUE(std::isnan(y.f32()[5]));
}

TEST(Activation, SoftmaxRowsSumToOneAndSurviveHugeLogits) {
  Tensor x(Shape{2, 4});
  float v[8] = {1, 2, 3, 4, 1000, 1001, -1000, 0};
  for (int i = 0; i < 8; ++i) x.f32()[i] = v[i];
  Tensor y = apply("Softmax", {}, x);
  for (int r = 0; r < 2; ++r) {
    double s = 0;
    for (int c = 0; c < 4; ++c) {
      EXPECT_TRUE(std::isfinite(y.f32()[r * 4 + c]));
      s += y.f32()[r * 4 + c];
    }
    EXPECT_NEAR(s, 1.0, 1e-6);
  }
  double e = std::exp(1.0) + std::exp(2.0) + std::exp(3.0) + std::exp(4.0);
  EXPECT_NEAR(y.f32()[3], std::exp(4.0) / e, 1e-6);
  EXPECT_NEAR(y.f32()[5], 1 / (1 + std::exp(-1.0)), 1e-6);
}

}  // namespace
}  // namespace dc
