// Dense: gradients, a hand-computed product, PyTorch's init bounds, and the
// shape errors a user sees when Dense follows a conv stack directly.
#include <deepcanvas/errors.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/rng.h>
#include <gtest/gtest.h>

#include <cmath>

#include "gradcheck.h"
#include "test_util.h"

namespace dc {
namespace {

using test::attrs;
using test::desc;

TEST(Dense, GradientsMatchFiniteDifferences) {
  test::check_layer_gradients("Dense", attrs({{"units", int64_t(5)}}), {Shape{7}}, 3);
  test::check_layer_gradients("Dense", attrs({{"units", int64_t(4)}, {"bias", false}}), {Shape{9}},
                              2);
}

TEST(Dense, HandComputedExample) {
  const auto& d = desc("Dense");
  Attrs a = d.with_defaults(attrs({{"units", int64_t(2)}}));
  auto layer = d.create(a, {Shape{3}}, Shape{2});
  auto ps = layer->params();
  ASSERT_EQ(ps.size(), 2u);
  // W = [[1,2,3],[4,5,6]] (PyTorch's [out, in] layout), b = [0.5, -1].
  for (int i = 0; i < 6; ++i) ps[0]->value.f32()[i] = float(i + 1);
  ps[1]->value.f32()[0] = 0.5f;
  ps[1]->value.f32()[1] = -1.0f;
  Tensor x(Shape{1, 3});
  x.f32()[0] = 1;
  x.f32()[1] = 0;
  x.f32()[2] = -1;
  Tensor y(Shape{1, 2});
  RunContext ctx;
  layer->forward({&x}, y, ctx);
  EXPECT_FLOAT_EQ(y.f32()[0], 1 - 3 + 0.5f);
  EXPECT_FLOAT_EQ(y.f32()[1], 4 - 6 - 1.0f);
}

TEST(Dense, InitUsesPyTorchBounds) {
  const auto& d = desc("Dense");
  Attrs a = d.with_defaults(attrs({{"units", int64_t(64)}}));
  auto layer = d.create(a, {Shape{100}}, Shape{64});
  Rng rng(1);
  layer->init(rng);
  const float bound = 1.0f / std::sqrt(100.0f);
  for (Param* p : layer->params()) {
    float lo = 1, hi = -1;
    for (int64_t i = 0; i < p->value.numel(); ++i) {
      lo = std::min(lo, p->value.f32()[i]);
      hi = std::max(hi, p->value.f32()[i]);
    }
    EXPECT_GE(lo, -bound) << p->name;
    EXPECT_LE(hi, bound) << p->name;
    EXPECT_LT(lo, -0.5f * bound) << p->name << ": values should fill the range";
    EXPECT_GT(hi, 0.5f * bound) << p->name;
  }
  EXPECT_FALSE(layer->params()[1]->decay) << "biases are not weight-decayed";
}

TEST(Dense, CostAndShapeErrors) {
  const auto& d = desc("Dense");
  Attrs a = d.with_defaults(attrs({{"units", int64_t(10)}}));
  Cost c = d.cost({Shape{128}}, Shape{10}, a);
  EXPECT_EQ(c.params, 128 * 10 + 10);
  EXPECT_EQ(c.macs, 128 * 10);
  try {
    d.infer({Shape{64, 7, 7}}, a);
    FAIL() << "a 3-D input must be refused";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("Flatten"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dc
