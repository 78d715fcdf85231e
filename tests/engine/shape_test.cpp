// Flatten and Reshape: values keep their order, gradients flow back, and a
// reshape that cannot work says how many values there are.
#include <deepcanvas/errors.h>
#include <deepcanvas/layer.h>
#include <gtest/gtest.h>

#include "gradcheck.h"
#include "test_util.h"

namespace dc {
namespace {

using test::attrs;
using test::desc;
using test::Ints;

TEST(ShapeLayers, GradientsMatchFiniteDifferences) {
  test::check_layer_gradients("Flatten", {}, {Shape{2, 3, 4}}, 2);
  test::check_layer_gradients("Reshape", attrs({{"shape", Ints{4, -1}}}), {Shape{2, 3, 4}}, 2);
}

TEST(ShapeLayers, InferAndKeepOrder) {
  const auto& f = desc("Flatten");
  EXPECT_EQ(f.infer({Shape{64, 7, 7}}, f.with_defaults({})), (Shape{3136}));
  const auto& r = desc("Reshape");
  Attrs a = r.with_defaults(attrs({{"shape", Ints{1, 28, -1}}}));
  EXPECT_EQ(r.infer({Shape{784}}, a), (Shape{1, 28, 28}));
  auto layer = r.create(a, {Shape{784}}, Shape{1, 28, 28});
  Tensor x(Shape{2, 784}), y(Shape{2, 1, 28, 28});
  for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = float(i);
  RunContext ctx;
  layer->forward({&x}, y, ctx);
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(y.f32()[i], float(i));
}

TEST(ShapeLayers, ImpossibleReshapeExplains) {
  const auto& r = desc("Reshape");
  try {
    r.infer({Shape{784}}, r.with_defaults(attrs({{"shape", Ints{3, -1}}})));
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("784"), std::string::npos) << e.what();
  }
  EXPECT_THROW(r.infer({Shape{784}}, r.with_defaults(attrs({{"shape", Ints{-1, -1}}}))),
               ShapeError);
  EXPECT_THROW(r.infer({Shape{784}}, r.with_defaults(attrs({{"shape", Ints{27, 28}}}))),
               ShapeError);
}

TEST(InputLayer, ShapeRuleAndErrors) {
  const auto& in = desc("Input");
  EXPECT_EQ(in.infer({}, in.with_defaults({})), (Shape{1, 28, 28}));
  EXPECT_EQ(in.num_inputs(in.with_defaults({})), 0);
  EXPECT_THROW(in.infer({}, in.with_defaults(attrs({{"shape", Ints{1, 0, 28}}}))), ShapeError);
  EXPECT_THROW(in.infer({}, in.with_defaults(attrs({{"shape", Ints{1, 2, 3, 4, 5}}}))), ShapeError);
}

}  // namespace
}  // namespace dc
