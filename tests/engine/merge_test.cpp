// Add and Concat: gradients reach every input, and the shape rules explain
// mismatches.
#include <deepcanvas/errors.h>
#include <deepcanvas/layer.h>
#include <gtest/gtest.h>

#include "gradcheck.h"
#include "test_util.h"

namespace dc {
namespace {

using test::attrs;
using test::desc;

TEST(Merge, GradientsMatchFiniteDifferences) {
  test::check_layer_gradients("Add", {}, {Shape{3, 4, 4}, Shape{3, 4, 4}}, 2);
  test::check_layer_gradients("Add", attrs({{"inputs", int64_t(3)}}),
                              {Shape{6}, Shape{6}, Shape{6}}, 3);
  test::check_layer_gradients("Concat", {}, {Shape{2, 3, 3}, Shape{5, 3, 3}}, 2);
  test::check_layer_gradients("Concat", attrs({{"axis", int64_t(2)}}),
                              {Shape{2, 3, 1}, Shape{2, 3, 4}}, 2);
  test::check_layer_gradients("Concat", attrs({{"inputs", int64_t(3)}}),
                              {Shape{4}, Shape{1}, Shape{7}}, 3);
}

TEST(Merge, ConcatPlacesInputsInOrder) {
  const auto& d = desc("Concat");
  Attrs a = d.with_defaults(attrs({{"axis", int64_t(1)}}));
  std::vector<Shape> in = {Shape{2, 1}, Shape{2, 2}};
  Shape out = d.infer(in, a);
  EXPECT_EQ(out, (Shape{2, 3}));
  auto layer = d.create(a, in, out);
  Tensor x0(Shape{1, 2, 1}), x1(Shape{1, 2, 2}), y(Shape{1, 2, 3});
  float v0[2] = {1, 2}, v1[4] = {3, 4, 5, 6};
  std::copy(v0, v0 + 2, x0.f32());
  std::copy(v1, v1 + 4, x1.f32());
  RunContext ctx;
  layer->forward({&x0, &x1}, y, ctx);
  float want[6] = {1, 3, 4, 2, 5, 6};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y.f32()[i], want[i]) << i;
}

TEST(Merge, ShapeErrorsSayWhatDiffers) {
  const auto& add = desc("Add");
  try {
    add.infer({Shape{64, 7, 7}, Shape{32, 7, 7}}, add.with_defaults({}));
    FAIL();
  } catch (const ShapeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("64×7×7"), std::string::npos) << m;
    EXPECT_NE(m.find("32×7×7"), std::string::npos) << m;
  }
  const auto& cat = desc("Concat");
  EXPECT_THROW(cat.infer({Shape{2, 3, 3}, Shape{2, 4, 3}}, cat.with_defaults({})), ShapeError);
  EXPECT_THROW(
      cat.infer({Shape{2, 3}, Shape{2, 3}}, cat.with_defaults(attrs({{"axis", int64_t(2)}}))),
      ShapeError);
  EXPECT_EQ(add.num_inputs(add.with_defaults(attrs({{"inputs", int64_t(4)}}))), 4);
}

}  // namespace
}  // namespace dc
