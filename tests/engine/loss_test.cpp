// Losses: d(loss)/d(output) by finite differences, values against formulas
// written out in double (PyTorch's definitions), and clear label errors.
#include <deepcanvas/errors.h>
#include <deepcanvas/loss.h>
#include <deepcanvas/rng.h>
#include <deepcanvas/settings.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace dc {
namespace {

Tensor random(Shape s, uint64_t seed, float lo = -3, float hi = 3) {
  Tensor t(std::move(s));
  Rng r(seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = r.uniform(lo, hi);
  return t;
}

void check_gradient(Loss& loss, Tensor out, const Targets& t) {
  Tensor d(out.shape()), scratch(out.shape());
  loss.compute(out, t, d);
  for (int64_t i = 0; i < out.numel(); ++i) {
    float saved = out.f32()[i];
    out.f32()[i] = saved + 1e-2f;
    double lp = loss.compute(out, t, scratch);
    out.f32()[i] = saved - 1e-2f;
    double lm = loss.compute(out, t, scratch);
    out.f32()[i] = saved;
    double num = (lp - lm) / 2e-2;
    EXPECT_NEAR(d.f32()[i], num, 2e-4 + 1e-2 * std::fabs(num)) << loss.name() << "[" << i << "]";
  }
}

TEST(Loss, GradientsMatchFiniteDifferences) {
  std::vector<int32_t> labels = {0, 3, 2, 1, 3};
  Targets t{labels.data(), nullptr};
  for (float smoothing : {0.0f, 0.1f}) {
    auto ce = make_loss(LossType::SoftmaxCrossEntropy, smoothing);
    check_gradient(*ce, random(Shape{5, 4}, 1), t);
  }
  Tensor target = random(Shape{5, 4}, 2, 0, 1);
  Targets tv{nullptr, &target};
  check_gradient(*make_loss(LossType::BinaryCrossEntropy), random(Shape{5, 4}, 3), tv);
  check_gradient(*make_loss(LossType::Mse), random(Shape{5, 4}, 4), tv);
  check_gradient(*make_loss(LossType::Mse), random(Shape{5, 4}, 5), t);  // one-hot targets
}

TEST(Loss, ValuesFollowPyTorchDefinitions) {
  Tensor out = random(Shape{3, 5}, 7);
  std::vector<int32_t> labels = {4, 0, 2};
  Tensor d(out.shape());
  const double eps = 0.1;
  double want = 0;
  for (int n = 0; n < 3; ++n) {
    const float* o = out.f32() + n * 5;
    double m = o[0], s = 0;
    for (int c = 0; c < 5; ++c) m = std::max(m, double(o[c]));
    for (int c = 0; c < 5; ++c) s += std::exp(o[c] - m);
    double lse = m + std::log(s), mean_logp = 0;
    for (int c = 0; c < 5; ++c) mean_logp += (o[c] - lse) / 5;
    want += -(1 - eps) * (o[labels[n]] - lse) - eps * mean_logp;
  }
  auto ce = make_loss(LossType::SoftmaxCrossEntropy, float(eps));
  EXPECT_NEAR(ce->compute(out, Targets{labels.data(), nullptr}, d), want / 3, 1e-5);

  Tensor y = random(Shape{3, 5}, 8, 0, 1);
  double bce = 0, mse = 0;
  for (int64_t i = 0; i < 15; ++i) {
    double x = out.f32()[i], z = y.f32()[i];
    bce += std::max(x, 0.0) - x * z + std::log1p(std::exp(-std::fabs(x)));
    mse += (x - z) * (x - z);
  }
  EXPECT_NEAR(make_loss(LossType::BinaryCrossEntropy)->compute(out, Targets{nullptr, &y}, d),
              bce / 15, 1e-5);
  EXPECT_NEAR(make_loss(LossType::Mse)->compute(out, Targets{nullptr, &y}, d), mse / 15, 1e-5);
}

TEST(Loss, HugeLogitsStayFinite) {
  Tensor out(Shape{1, 3});
  out.f32()[0] = 1e4f;
  out.f32()[1] = -1e4f;
  out.f32()[2] = 0;
  std::vector<int32_t> labels = {1};
  Tensor d(out.shape());
  float l =
      make_loss(LossType::SoftmaxCrossEntropy)->compute(out, Targets{labels.data(), nullptr}, d);
  EXPECT_TRUE(std::isfinite(l));
  EXPECT_NEAR(l, 2e4, 1);
  Tensor z(Shape{1, 3});
  EXPECT_TRUE(std::isfinite(
      make_loss(LossType::BinaryCrossEntropy)->compute(out, Targets{nullptr, &z}, d)));
}

TEST(Loss, BadLabelsAndNamesAreExplained) {
  Tensor out(Shape{2, 5}), d(Shape{2, 5});
  std::vector<int32_t> labels = {1, 9};
  try {
    make_loss(LossType::SoftmaxCrossEntropy)->compute(out, Targets{labels.data(), nullptr}, d);
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("units"), std::string::npos) << e.what();
  }
  // Loss names are turned into LossType where projects and flags are read:
  // an unknown one is refused there with the words that are accepted.
  const SettingSpec* s = find_setting("loss");
  ASSERT_NE(s, nullptr);
  try {
    parse_setting_text(*s, "hinge");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("softmax_cross_entropy"), std::string::npos) << e.what();
  }
  EXPECT_EQ(s->attr.choices, enum_names<LossType>());
  EXPECT_EQ(enum_names<LossType>().size(), 3u);
  EXPECT_THROW(make_loss(LossType::SoftmaxCrossEntropy, 1.5f), Error);
}

}  // namespace
}  // namespace dc
