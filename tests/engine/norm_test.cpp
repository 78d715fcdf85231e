// BatchNorm1D / BatchNorm2D: gradients in both modes, forward values against
// statistics computed here, PyTorch's running-statistics update by hand.
// LayerNorm: gradients with and without affine, rows normalised on their
// own, the same in training and evaluation.
#include <deepcanvas/errors.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/rng.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gradcheck.h"
#include "test_util.h"

namespace dc {
namespace {

using test::attrs;
using test::desc;

std::unique_ptr<Layer> make(const std::string& type, const Shape& in, const Attrs& at = {}) {
  const LayerDescriptor& d = desc(type);
  Attrs a = d.with_defaults(at);
  auto l = d.create(a, {in}, d.infer({in}, a));
  Rng rng(1);
  l->init(rng);
  return l;
}

Param* find_param(Layer& l, const std::string& name) {
  for (Param* p : l.params())
    if (p->name == name) return p;
  return nullptr;
}

Tensor random_tensor(Shape s, uint64_t seed, float lo = -2, float hi = 3) {
  Tensor x(s);
  Rng rng(seed);
  for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = rng.uniform(lo, hi);
  return x;
}

TEST(BatchNorm, GradientsMatchFiniteDifferences) {
  for (bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "eval");
    test::GradCheckOptions o;
    o.training = training;
    test::check_layer_gradients("BatchNorm2D", {}, {Shape{3, 3, 4}}, 4, o);
    test::check_layer_gradients("BatchNorm1D", {}, {Shape{5}}, 6, o);
    test::check_layer_gradients("BatchNorm1D", {}, {Shape{3, 7}}, 3, o);
    test::check_layer_gradients("BatchNorm2D", attrs({{"eps", 0.1}}), {Shape{2, 2, 2}}, 3, o);
  }
}

TEST(BatchNorm, TrainingNormalisesWithBatchStatistics) {
  // Per channel c: y = (x - mean_c) / sqrt(var_c + eps) * gamma_c + beta_c,
  // mean and biased variance over batch and positions.
  const int64_t N = 5, C = 3, H = 2, W = 3;
  auto l = make("BatchNorm2D", Shape{C, H, W});
  float* g = find_param(*l, "weight")->value.f32();
  float* b = find_param(*l, "bias")->value.f32();
  for (int c = 0; c < C; ++c) {
    g[c] = 0.5f + float(c);
    b[c] = -1.0f + float(c);
  }
  Tensor x = random_tensor(Shape{N, C, H, W}, 3), y(x.shape());
  RunContext ctx{true, nullptr};
  l->forward({&x}, y, ctx);
  for (int64_t c = 0; c < C; ++c) {
    double s = 0, q = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < H * W; ++i) s += x.f32()[(n * C + c) * H * W + i];
    double mean = s / (N * H * W);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < H * W; ++i) {
        double d = x.f32()[(n * C + c) * H * W + i] - mean;
        q += d * d;
      }
    double var = q / (N * H * W);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < H * W; ++i) {
        int64_t k = (n * C + c) * H * W + i;
        double want = (x.f32()[k] - mean) / std::sqrt(var + 1e-5) * g[c] + b[c];
        EXPECT_NEAR(y.f32()[k], want, 1e-5);
      }
  }
}

TEST(BatchNorm, RunningStatisticsFollowPyTorch) {
  // One feature, batch {1, 2, 3, 6}: mean 3, biased variance
  // (4 + 1 + 0 + 9) / 4 = 3.5, unbiased 14 / 3. With momentum 0.1:
  //   running_mean = 0.9 * 0 + 0.1 * 3        = 0.3
  //   running_var  = 0.9 * 1 + 0.1 * 14 / 3   = 1.3666667
  // and a second identical step:
  //   running_mean = 0.9 * 0.3 + 0.3          = 0.57
  //   running_var  = 0.9 * 1.3666667 + 0.4666667 = 1.6966667
  // The output uses the biased variance: (1 - 3) / sqrt(3.5 + 1e-5).
  auto l = make("BatchNorm1D", Shape{1});
  Tensor x = Tensor::from(Shape{4, 1}, {1, 2, 3, 6}), y(x.shape());
  RunContext ctx{true, nullptr};
  l->forward({&x}, y, ctx);
  const float* rm = find_param(*l, "running_mean")->value.f32();
  const float* rv = find_param(*l, "running_var")->value.f32();
  EXPECT_NEAR(rm[0], 0.3f, 1e-6f);
  EXPECT_NEAR(rv[0], 1.3666667f, 1e-6f);
  EXPECT_NEAR(y.f32()[0], -2.0 / std::sqrt(3.5 + 1e-5), 1e-6);
  EXPECT_NEAR(y.f32()[3], 3.0 / std::sqrt(3.5 + 1e-5), 1e-6);
  l->forward({&x}, y, ctx);
  EXPECT_NEAR(rm[0], 0.57f, 1e-6f);
  EXPECT_NEAR(rv[0], 1.6966667f, 1e-6f);

  // momentum 0 freezes the running statistics; momentum 1 replaces them.
  auto frozen = make("BatchNorm1D", Shape{1}, attrs({{"momentum", 0.0}}));
  frozen->forward({&x}, y, ctx);
  EXPECT_EQ(find_param(*frozen, "running_mean")->value.f32()[0], 0.f);
  EXPECT_EQ(find_param(*frozen, "running_var")->value.f32()[0], 1.f);
  auto replace = make("BatchNorm1D", Shape{1}, attrs({{"momentum", 1.0}}));
  replace->forward({&x}, y, ctx);
  EXPECT_NEAR(find_param(*replace, "running_mean")->value.f32()[0], 3.f, 1e-6f);
  EXPECT_NEAR(find_param(*replace, "running_var")->value.f32()[0], 14.f / 3, 1e-5f);
}

TEST(BatchNorm, EvalUsesRunningStatistics) {
  const int64_t N = 3, C = 2, L = 4;
  auto l = make("BatchNorm1D", Shape{C, L}, attrs({{"eps", 0.01}}));
  float* rm = find_param(*l, "running_mean")->value.f32();
  float* rv = find_param(*l, "running_var")->value.f32();
  float* g = find_param(*l, "weight")->value.f32();
  float* b = find_param(*l, "bias")->value.f32();
  rm[0] = 0.5f, rm[1] = -1.f;
  rv[0] = 4.f, rv[1] = 0.25f;
  g[0] = 2.f, g[1] = -1.f;
  b[0] = 0.1f, b[1] = 0.2f;
  Tensor x = random_tensor(Shape{N, C, L}, 8), y(x.shape());
  RunContext ctx{false, nullptr};
  l->forward({&x}, y, ctx);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < L; ++i) {
        int64_t k = (n * C + c) * L + i;
        double want = (x.f32()[k] - rm[c]) / std::sqrt(rv[c] + 0.01) * g[c] + b[c];
        EXPECT_NEAR(y.f32()[k], want, 1e-5);
      }
  // Evaluation leaves the running statistics alone.
  EXPECT_EQ(rm[0], 0.5f);
  EXPECT_EQ(rv[1], 0.25f);
}

TEST(BatchNorm, SingleValuePerChannelDoesNotCorruptRunningStats) {
  auto l = make("BatchNorm1D", Shape{3});
  Tensor x = Tensor::from(Shape{1, 3}, {1, 2, 3}), y(x.shape());
  RunContext ctx{true, nullptr};
  l->forward({&x}, y, ctx);
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(y.f32()[c], 0.f);  // x - mean = 0, beta = 0
    EXPECT_EQ(find_param(*l, "running_mean")->value.f32()[c], 0.f);
    EXPECT_EQ(find_param(*l, "running_var")->value.f32()[c], 1.f);
    EXPECT_TRUE(std::isfinite(y.f32()[c]));
  }
}

TEST(BatchNorm, ParametersAndBuffers) {
  auto l = make("BatchNorm2D", Shape{4, 3, 3});
  ASSERT_EQ(l->params().size(), 4u);
  Param* g = find_param(*l, "weight");
  Param* b = find_param(*l, "bias");
  Param* rm = find_param(*l, "running_mean");
  Param* rv = find_param(*l, "running_var");
  ASSERT_TRUE(g && b && rm && rv);
  for (Param* p : {g, b}) {
    EXPECT_TRUE(p->trainable);
    EXPECT_FALSE(p->decay);
    EXPECT_TRUE(p->grad.defined());
    EXPECT_EQ(p->value.shape(), (Shape{4}));
  }
  for (Param* p : {rm, rv}) {
    EXPECT_FALSE(p->trainable);
    EXPECT_FALSE(p->grad.defined());
    EXPECT_EQ(p->value.shape(), (Shape{4}));
  }
  for (int c = 0; c < 4; ++c) {
    EXPECT_EQ(g->value.f32()[c], 1.f);
    EXPECT_EQ(b->value.f32()[c], 0.f);
    EXPECT_EQ(rm->value.f32()[c], 0.f);
    EXPECT_EQ(rv->value.f32()[c], 1.f);
  }
  const LayerDescriptor& d = desc("BatchNorm2D");
  EXPECT_EQ(d.category, "Normalization");
  EXPECT_DOUBLE_EQ(std::get<double>(d.find_attr("momentum")->def), 0.1);
  EXPECT_DOUBLE_EQ(std::get<double>(d.find_attr("eps")->def), 1e-5);
  Cost c = d.cost({Shape{4, 3, 3}}, Shape{4, 3, 3}, d.with_defaults({}));
  EXPECT_EQ(c.params, 8);
}

TEST(BatchNorm, BackwardAccumulatesIntoGradients) {
  auto l = make("BatchNorm2D", Shape{2, 3, 3});
  Tensor x = random_tensor(Shape{4, 2, 3, 3}, 2), y(x.shape());
  Tensor dy = random_tensor(y.shape(), 6, -1, 1), dx(x.shape());
  RunContext ctx{true, nullptr};
  l->forward({&x}, y, ctx);
  l->backward({&x}, y, dy, {&dx}, ctx);
  Tensor dx1 = dx.clone(), dg1 = find_param(*l, "weight")->grad.clone();
  l->backward({&x}, y, dy, {&dx}, ctx);
  for (int64_t i = 0; i < dx.numel(); ++i) EXPECT_NEAR(dx.f32()[i], 2 * dx1.f32()[i], 1e-5f);
  for (int c = 0; c < 2; ++c)
    EXPECT_NEAR(find_param(*l, "weight")->grad.f32()[c], 2 * dg1.f32()[c], 1e-5f);
  // In training the input gradient of each channel sums to zero (the mean
  // is subtracted).
  for (int c = 0; c < 2; ++c) {
    double s = 0;
    for (int n = 0; n < 4; ++n)
      for (int i = 0; i < 9; ++i) s += dx1.f32()[(n * 2 + c) * 9 + i];
    EXPECT_NEAR(s, 0.0, 1e-4);
  }
}

std::string shape_error(const std::string& type, const Shape& in) {
  try {
    desc(type).infer({in}, desc(type).with_defaults({}));
  } catch (const ShapeError& e) {
    return e.what();
  }
  return "";
}

TEST(BatchNorm, ShapeErrorsSayWhatToChange) {
  std::string m = shape_error("BatchNorm2D", Shape{128});
  EXPECT_NE(m.find("expects a 3-D input (channels×height×width) but got 128"), std::string::npos)
      << m;
  EXPECT_NE(m.find("BatchNorm1D"), std::string::npos) << m;
  m = shape_error("BatchNorm1D", Shape{32, 14, 14});
  EXPECT_NE(m.find("expects features (F) or channels×length (C×L) but got 32×14×14"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("BatchNorm2D"), std::string::npos) << m;
  EXPECT_EQ(shape_error("BatchNorm1D", Shape{16}), "");
  EXPECT_EQ(shape_error("BatchNorm1D", Shape{16, 10}), "");
  EXPECT_EQ(desc("BatchNorm2D").infer({Shape{8, 5, 5}}, desc("BatchNorm2D").with_defaults({})),
            (Shape{8, 5, 5}));
}

TEST(LayerNorm, GradientsMatchFiniteDifferences) {
  for (bool affine : {true, false}) {
    SCOPED_TRACE(affine ? "affine" : "no affine");
    const Attrs a = attrs({{"affine", affine}});
    test::check_layer_gradients("LayerNorm", a, {Shape{9}}, 4);
    test::check_layer_gradients("LayerNorm", a, {Shape{5, 6}}, 3);  // a sequence of 5 steps
    test::check_layer_gradients("LayerNorm", attrs({{"eps", 0.1}, {"affine", affine}}),
                                {Shape{2, 3, 4}}, 2);
  }
}

TEST(LayerNorm, EachRowIsNormalisedOnItsOwn) {
  const Shape s{4, 8};  // 4 steps of 8 features
  auto l = make("LayerNorm", s, attrs({{"eps", 0.0}}));
  Tensor x = random_tensor(s.with_batch(3), 5);
  // One row far from the others: it must not move them.
  for (int64_t i = 0; i < 8; ++i) x.f32()[8 + i] = 1000.f + float(i);
  Tensor y(s.with_batch(3));
  Rng rng(1);
  for (bool training : {true, false}) {
    RunContext ctx{training, &rng};
    l->forward({&x}, y, ctx);
    for (int64_t r = 0; r < 12; ++r) {
      double m = 0, v = 0;
      for (int64_t i = 0; i < 8; ++i) m += y.f32()[r * 8 + i];
      m /= 8;
      for (int64_t i = 0; i < 8; ++i) v += (y.f32()[r * 8 + i] - m) * (y.f32()[r * 8 + i] - m);
      v /= 8;
      EXPECT_NEAR(m, 0.0, 1e-5) << "row " << r;
      EXPECT_NEAR(v, 1.0, 1e-3) << "row " << r;
    }
    // The far row is 0..7 shifted: normalised to the same values as 0..7.
    double mean = 3.5, sd = std::sqrt(5.25);
    for (int64_t i = 0; i < 8; ++i)
      EXPECT_NEAR(y.f32()[8 + i], (double(i) - mean) / sd, 1e-4) << "position " << i;
  }
  ASSERT_EQ(l->params().size(), 2u);
  EXPECT_EQ(l->params()[0]->value.shape(), Shape{8});
  EXPECT_TRUE(make("LayerNorm", s, attrs({{"affine", false}}))->params().empty());
  EXPECT_NE(shape_error("LayerNorm", Shape{}).find("at least one dimension"), std::string::npos);
}

}  // namespace
}  // namespace dc
