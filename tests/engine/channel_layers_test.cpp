// The mobile-CNN layers: SiLU, HardSwish and HardSigmoid (values against
// their formulas in double, PyTorch's gradient at the kinks, finite
// differences) and the channel layers ChannelScale, ChannelShuffle and
// ChannelSlice (exact values, finite differences, shape rules).
#include <deepcanvas/errors.h>
#include <deepcanvas/layer.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "gradcheck.h"
#include "test_util.h"

namespace dc {
namespace {

using test::attrs;

Tensor run(const std::string& type, const Attrs& a, const std::vector<const Tensor*>& x) {
  register_builtin_layers();
  const LayerDescriptor& d = LayerRegistry::instance().get(type);
  const Attrs full = d.with_defaults(a);
  std::vector<Shape> in;
  for (const Tensor* t : x) in.push_back(t->shape().without_batch());
  const Shape out = d.infer(in, full);
  auto layer = d.create(full, in, out);
  Tensor y(out.with_batch(x[0]->dim(0)));
  RunContext ctx;
  layer->forward(x, y, ctx);
  return y;
}

Tensor iota(const Shape& s) {
  Tensor t(s);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = float(i);
  return t;
}

TEST(MobileActivations, ValuesMatchTheirFormulas) {
  Tensor x(Shape{1, 4001});
  for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = -20.f + 40.f * float(i) / 4000.f;
  Tensor si = run("SiLU", {}, {&x}), hs = run("HardSwish", {}, {&x}),
         hg = run("HardSigmoid", {}, {&x});
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.f32()[i];
    const double silu = v / (1.0 + std::exp(-v));
    const double hsig = std::min(std::max(v + 3.0, 0.0), 6.0) / 6.0;
    EXPECT_NEAR(si.f32()[i], silu, 1e-6 * std::max(1.0, std::fabs(silu))) << v;
    EXPECT_NEAR(hg.f32()[i], hsig, 1e-7) << v;
    EXPECT_NEAR(hs.f32()[i], v * hsig, 1e-6 * std::max(1.0, std::fabs(v))) << v;
  }
  Tensor nan(Shape{1, 1});
  nan.f32()[0] = std::numeric_limits<float>::quiet_NaN();
  for (const char* t : {"SiLU", "HardSwish", "HardSigmoid"})
    EXPECT_TRUE(std::isnan(run(t, {}, {&nan}).f32()[0])) << t;
}

TEST(MobileActivations, GradientsMatchFiniteDifferences) {
  test::GradCheckOptions wide;
  wide.input_lo = -6;
  wide.input_hi = 6;
  wide.distinct_inputs = true;  // off the kinks at ±3
  wide.eps = 1e-3f;
  for (const char* t : {"SiLU", "HardSwish", "HardSigmoid"}) {
    test::check_layer_gradients(t, {}, {Shape{3, 4, 5}}, 2, wide);
    test::check_layer_gradients(t, {}, {Shape{7}}, 3);
  }
}

// PyTorch's hardswish_backward takes x = -3 on the middle piece (-1/2) and
// x = 3 too (3/2); Hardsigmoid's passes nothing at either.
TEST(MobileActivations, GradientAtTheKinksIsPyTorchs) {
  register_builtin_layers();
  Tensor x(Shape{1, 2});
  x.f32()[0] = -3.f;
  x.f32()[1] = 3.f;
  Tensor dy(x.shape());
  dy.fill(1.f);
  auto grad = [&](const char* type) {
    const LayerDescriptor& d = LayerRegistry::instance().get(type);
    auto layer = d.create({}, {Shape{2}}, Shape{2});
    Tensor y(x.shape()), dx(x.shape());
    RunContext ctx;
    layer->forward({&x}, y, ctx);
    layer->backward({&x}, y, dy, {&dx}, ctx);
    return dx;
  };
  Tensor hs = grad("HardSwish"), hg = grad("HardSigmoid");
  EXPECT_FLOAT_EQ(hs.f32()[0], -0.5f);
  EXPECT_FLOAT_EQ(hs.f32()[1], 1.5f);
  EXPECT_EQ(hg.f32()[0], 0.f);
  EXPECT_EQ(hg.f32()[1], 0.f);
}

TEST(ChannelLayers, ScaleMultipliesEachChannelByItsGate) {
  Tensor x = iota(Shape{2, 3, 2, 2});
  for (const Shape& gs : {Shape{2, 3}, Shape{2, 3, 1, 1}}) {
    Tensor g(gs);
    for (int64_t i = 0; i < 6; ++i) g.f32()[i] = float(i + 1);
    Tensor y = run("ChannelScale", {}, {&x, &g});
    ASSERT_EQ(y.shape(), x.shape());
    for (int64_t i = 0; i < y.numel(); ++i) EXPECT_EQ(y.f32()[i], float(i) * float(i / 4 + 1)) << i;
  }
}

TEST(ChannelLayers, ShuffleInterleavesTheGroups) {
  // 6 channels of 2 values, 2 groups: output channels 0..5 are input
  // channels 0, 3, 1, 4, 2, 5 (torchvision's channel_shuffle).
  Tensor x = iota(Shape{2, 6, 1, 2});
  Tensor y = run("ChannelShuffle", attrs({{"groups", int64_t(2)}}), {&x});
  const int src[] = {0, 3, 1, 4, 2, 5};
  for (int n = 0; n < 2; ++n)
    for (int o = 0; o < 6; ++o)
      for (int s = 0; s < 2; ++s)
        EXPECT_EQ(y.f32()[(n * 6 + o) * 2 + s], x.f32()[(n * 6 + src[o]) * 2 + s]);
  // 3 groups of 2: 0, 2, 4, 1, 3, 5.
  Tensor z = run("ChannelShuffle", attrs({{"groups", int64_t(3)}}), {&x});
  const int src3[] = {0, 2, 4, 1, 3, 5};
  for (int o = 0; o < 6; ++o) EXPECT_EQ(z.f32()[o * 2], x.f32()[src3[o] * 2]);
}

TEST(ChannelLayers, SliceKeepsTheChannelRange) {
  Tensor x = iota(Shape{2, 5, 3});
  Tensor y = run("ChannelSlice", attrs({{"start", int64_t(1)}, {"count", int64_t(3)}}), {&x});
  ASSERT_EQ(y.shape(), (Shape{2, 3, 3}));
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 9; ++i) EXPECT_EQ(y.f32()[n * 9 + i], x.f32()[n * 15 + 3 + i]);
}

TEST(ChannelLayers, GradientsMatchFiniteDifferences) {
  test::check_layer_gradients("ChannelScale", {}, {Shape{4, 3, 5}, Shape{4, 1, 1}}, 2);
  test::check_layer_gradients("ChannelScale", {}, {Shape{4, 3, 5}, Shape{4}}, 3);
  test::check_layer_gradients("ChannelScale", {}, {Shape{6}, Shape{6}}, 2);
  test::check_layer_gradients("ChannelShuffle", attrs({{"groups", int64_t(3)}}), {Shape{6, 2, 3}},
                              2);
  test::check_layer_gradients("ChannelSlice", attrs({{"start", int64_t(2)}, {"count", int64_t(3)}}),
                              {Shape{6, 2, 2}}, 2);
}

TEST(ChannelLayers, ShapeRulesNameWhatIsWrong) {
  register_builtin_layers();
  auto infer = [](const std::string& t, const Attrs& a, const std::vector<Shape>& in) {
    const LayerDescriptor& d = LayerRegistry::instance().get(t);
    return d.infer(in, d.with_defaults(a));
  };
  EXPECT_EQ(infer("ChannelScale", {}, {Shape{8, 4, 4}, Shape{8, 1, 1}}), (Shape{8, 4, 4}));
  EXPECT_THROW(infer("ChannelScale", {}, {Shape{8, 4, 4}, Shape{4, 1, 1}}), ShapeError);
  EXPECT_THROW(infer("ChannelScale", {}, {Shape{8, 4, 4}, Shape{8, 4, 4}}), ShapeError);
  EXPECT_THROW(infer("ChannelShuffle", attrs({{"groups", int64_t(3)}}), {Shape{8, 4, 4}}),
               ShapeError);
  EXPECT_THROW(infer("ChannelSlice", attrs({{"start", int64_t(6)}, {"count", int64_t(3)}}),
                     {Shape{8, 4, 4}}),
               ShapeError);
  EXPECT_EQ(infer("ChannelSlice", attrs({{"start", int64_t(4)}, {"count", int64_t(4)}}),
                  {Shape{8, 4, 4}}),
            (Shape{4, 4, 4}));
  // The gate's multiply counts; the layers have no parameters.
  const LayerDescriptor& d = LayerRegistry::instance().get("ChannelScale");
  Cost c = d.cost({Shape{8, 4, 4}, Shape{8}}, Shape{8, 4, 4}, {});
  EXPECT_EQ(c.params, 0);
  EXPECT_EQ(c.macs, 128);
}

}  // namespace
}  // namespace dc
