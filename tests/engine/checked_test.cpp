// Checked arithmetic for shapes and attributes: overflow at the edges of
// int64, a zero stride or dilation refused with the attribute named, sizes
// past 64 bits refused by the shape rules, and the tensor limits held by
// Tensor before anything is allocated. The shape rules are called with
// attributes their ranges would refuse, as a model's attributes reach them
// in the importer.
#include <deepcanvas/checked.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/graph.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/tensor.h>
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>

#include "test_util.h"

namespace dc {
namespace {

using test::attrs;
using test::desc;
using test::Ints;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

// The ShapeError f throws (a failure when it throws none).
std::string shape_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const ShapeError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ShapeError";
  return "";
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(CheckedArithmetic, AddAndMultiplyRefuseOverflowAtTheEdges) {
  EXPECT_EQ(checked_add(kMax, 0, "x"), kMax);
  EXPECT_EQ(checked_add(kMin, 0, "x"), kMin);
  EXPECT_EQ(checked_add(kMax, kMin, "x"), -1);
  EXPECT_THROW(checked_add(kMax, 1, "x"), ShapeError);
  EXPECT_THROW(checked_add(kMin, -1, "x"), ShapeError);
  EXPECT_EQ(checked_mul(int64_t{1} << 31, int64_t{1} << 31, "x"), int64_t{1} << 62);
  EXPECT_EQ(checked_mul(kMin, 1, "x"), kMin);
  EXPECT_THROW(checked_mul(int64_t{1} << 32, int64_t{1} << 31, "x"), ShapeError);
  EXPECT_THROW(checked_mul(kMin, -1, "x"), ShapeError);
  EXPECT_THROW(checked_mul(kMax, 2, "x"), ShapeError);
  const std::string msg = shape_error([] { checked_mul(kMax, 3, "the padded height"); });
  EXPECT_TRUE(has(msg, "the padded height")) << msg;
}

TEST(CheckedArithmetic, ElementCountHoldsTheTensorLimit) {
  EXPECT_EQ(checked_numel(Ints{}, "t"), 1);
  EXPECT_EQ(checked_numel(Ints{2, 3, 4}, "t"), 24);
  EXPECT_EQ(checked_numel(Ints{int64_t{1} << 17, int64_t{1} << 17}, "t"), kMaxTensorElements);
  EXPECT_THROW(checked_numel(Ints{int64_t{1} << 17, int64_t{1} << 17, 2}, "t"), ShapeError);
  // An overflowing product, and an empty tensor whatever its other sizes.
  EXPECT_THROW(checked_numel(Ints{kMax, kMax}, "t"), ShapeError);
  EXPECT_EQ(checked_numel(Ints{kMax, kMax, 0}, "t"), 0);
  std::string msg = shape_error([] {
    checked_numel(Ints{1000000, 1000000, 1000000}, "the input");
  });
  EXPECT_TRUE(has(msg, "the input") && has(msg, "2^34")) << msg;
  // The product alone: any size that fits in 64 bits.
  EXPECT_EQ(checked_product(Ints{int64_t{1} << 31, int64_t{1} << 31}, "t"), int64_t{1} << 62);
  EXPECT_EQ(checked_product(Ints{kMax, kMax, 0}, "t"), 0);
  msg = shape_error([] {
    checked_product(Ints{int64_t{1} << 32, int64_t{1} << 31}, "the weight");
  });
  EXPECT_TRUE(has(msg, "the weight") && has(msg, "64-bit")) << msg;
  msg = shape_error([] { checked_numel(Ints{3, -1}, "the weight"); });
  EXPECT_TRUE(has(msg, "the weight") && has(msg, "negative")) << msg;
}

TEST(CheckedArithmetic, ByteCountHoldsTheTensorLimit) {
  EXPECT_EQ(checked_bytes(kMaxTensorElements, 4, "t"), kMaxTensorBytes);
  EXPECT_THROW(checked_bytes(kMaxTensorElements, 8, "t"), ShapeError);
  EXPECT_THROW(checked_bytes(kMaxTensorElements + 1, 1, "t"), ShapeError);
  EXPECT_THROW(checked_bytes(-1, 4, "t"), ShapeError);
  EXPECT_THROW(checked_bytes(1, kMax, "t"), ShapeError);
}

TEST(CheckedArithmetic, ConvWindowMatchesPyTorchsRule) {
  ConvWindow w = conv_window(28, 3, 1, 1, 1, 1, "height");
  EXPECT_EQ(w.extent, 3);
  EXPECT_EQ(w.padded, 30);
  EXPECT_EQ(w.out, 28);
  EXPECT_EQ(conv_window(9, 5, 2, 1, 2, 2, "height").out, 5);
  EXPECT_EQ(conv_window(10, 3, 1, 2, 0, 0, "width").out, 6);  // dilated: spans 5
  EXPECT_EQ(conv_window(4, 5, 1, 1, 0, 0, "width").out, 0);   // larger than the input
  EXPECT_EQ(conv_window(1000, 1, kMax, 1, 0, 0, "width").out, 1);
  EXPECT_EQ(conv_window(kMax - 2, 1, 1, 1, 1, 1, "width").out, kMax);
}

TEST(CheckedArithmetic, ConvWindowRefusesBadAttributesNamingThem) {
  std::string msg = shape_error([] { conv_window(28, 3, 0, 1, 0, 0, "height"); });
  EXPECT_TRUE(has(msg, "stride must be at least 1 but is 0 along the height")) << msg;
  msg = shape_error([] { conv_window(28, 3, 1, 0, 0, 0, "width"); });
  EXPECT_TRUE(has(msg, "dilation") && has(msg, "width")) << msg;
  msg = shape_error([] { conv_window(28, 3, 1, kMin, 0, 0, "width"); });
  EXPECT_TRUE(has(msg, "dilation must be at least 1")) << msg;
  msg = shape_error([] { conv_window(28, 0, 1, 1, 0, 0, "height"); });
  EXPECT_TRUE(has(msg, "kernel")) << msg;
  msg = shape_error([] { conv_window(28, 3, kMin, 1, 0, 0, "height"); });
  EXPECT_TRUE(has(msg, "stride")) << msg;
  msg = shape_error([] { conv_window(28, 3, 1, 1, -1, 0, "height"); });
  EXPECT_TRUE(has(msg, "padding")) << msg;
  msg = shape_error([] { conv_window(28, 3, 1, int64_t{1} << 62, 0, 0, "height"); });
  EXPECT_TRUE(has(msg, "dilated kernel along the height") && has(msg, "overflows")) << msg;
  msg = shape_error([] { conv_window(kMax, 3, 1, 1, 1, 0, "width"); });
  EXPECT_TRUE(has(msg, "padded input along the width")) << msg;
}

TEST(CheckedArithmetic, SamePaddingRefusesAZeroStride) {
  int64_t before = 0, after = 0;
  same_padding(9, 5, 2, 1, before, after, "height");
  EXPECT_EQ(before, 2);
  EXPECT_EQ(after, 2);
  same_padding(8, 3, kMax, 1, before, after, "width");  // one window: the kernel's overhang
  EXPECT_EQ(before + after, 0);
  const std::string msg = shape_error([&] { same_padding(9, 3, 0, 1, before, after, "width"); });
  EXPECT_TRUE(has(msg, "stride") && has(msg, "width")) << msg;
  EXPECT_THROW(same_padding(9, 3, 1, int64_t{1} << 62, before, after), ShapeError);
}

TEST(CheckedArithmetic, ShapeNumelAndTensorRefuseBeforeAllocating) {
  EXPECT_EQ((Shape{2, 3}).numel(), 6);
  EXPECT_THROW((Shape{kMax, 2}).numel(), ShapeError);
  // A shape may be larger than a tensor (a memory estimate); a tensor may not.
  EXPECT_EQ((Shape{int64_t{1} << 20, int64_t{1} << 20}).numel(), int64_t{1} << 40);
  std::string msg = shape_error([] { Tensor t(Shape{int64_t{1} << 20, int64_t{1} << 20}); });
  EXPECT_TRUE(has(msg, "1048576x1048576") && has(msg, "2^34")) << msg;
  msg = shape_error([] { Tensor t(Shape{2, -3}); });
  EXPECT_TRUE(has(msg, "negative")) << msg;
  EXPECT_THROW(Tensor(Shape{kMax, kMax}), ShapeError);
  EXPECT_EQ(Tensor(Shape{0, kMax}).numel(), 0);
}

Attrs conv(Ints stride, Ints dilation = {1, 1}, std::string mode = "explicit") {
  return desc("Conv2D").with_defaults(attrs({{"filters", int64_t{4}},
                                             {"stride", stride},
                                             {"dilation", dilation},
                                             {"padding_mode", mode}}));
}

TEST(ShapeRuleLimits, ConvWithZeroStrideOrHugeDilationIsAShapeError) {
  const auto& d = desc("Conv2D");
  const std::vector<Shape> in = {Shape{3, 32, 32}};
  for (const char* mode : {"explicit", "same", "valid"}) {
    std::string msg = shape_error([&] { d.infer(in, conv({0, 1}, {1, 1}, mode)); });
    EXPECT_TRUE(has(msg, "stride must be at least 1 but is 0 along the height")) << msg;
    msg = shape_error([&] { d.infer(in, conv({1, kMin}, {1, 1}, mode)); });
    EXPECT_TRUE(has(msg, "stride") && has(msg, "width")) << msg;
    msg = shape_error([&] { d.infer(in, conv({1, 1}, {int64_t{1} << 62, 1}, mode)); });
    EXPECT_TRUE(has(msg, "dilat")) << msg;
    msg = shape_error([&] { d.infer(in, conv({1, 1}, {1, 0}, mode)); });
    EXPECT_TRUE(has(msg, "dilation")) << msg;
  }
  // The cost and the kernel choice go through the same geometry.
  EXPECT_THROW(d.cost(in, Shape{4, 32, 32}, conv({0, 0})), ShapeError);
  EXPECT_THROW(conv_cpu_kernel(in, conv({1, 1}, {0, 1})), ShapeError);
  EXPECT_THROW(d.infer(in, desc("Conv2D").with_defaults(attrs({{"groups", int64_t{0}}}))),
               ShapeError);
}

TEST(ShapeRuleLimits, PoolingWithZeroStrideOrBadPaddingIsAShapeError) {
  for (const char* type : {"MaxPool2D", "AvgPool2D"}) {
    const auto& d = desc(type);
    const std::vector<Shape> in = {Shape{3, 32, 32}};
    std::string msg = shape_error([&] {
      d.infer(in, d.with_defaults(attrs({{"stride", Ints{2, 0}}})));
    });
    EXPECT_TRUE(has(msg, "stride must be at least 1 but is 0 along the width")) << msg;
    msg = shape_error([&] { d.infer(in, d.with_defaults(attrs({{"padding", Ints{-1, 0}}}))); });
    EXPECT_TRUE(has(msg, "padding")) << msg;
    msg = shape_error([&] { d.infer(in, d.with_defaults(attrs({{"kernel", Ints{0, 2}}}))); });
    EXPECT_TRUE(has(msg, "kernel")) << msg;
    EXPECT_THROW(d.infer(in, d.with_defaults(attrs(
                                 {{"kernel", Ints{kMax, 2}}, {"padding", Ints{kMax / 2, 0}}}))),
                 ShapeError);
  }
  const auto& mp = desc("MaxPool2D");
  EXPECT_THROW(mp.infer({Shape{1, 8, 8}},
                        mp.with_defaults(attrs({{"stride", Ints{0, 0}}, {"ceil_mode", true}}))),
               ShapeError);
}

TEST(ShapeRuleLimits, SizesThatMultiplyPast64BitsAreRefused) {
  constexpr int64_t k40 = int64_t{1} << 40;
  const auto& in = desc("Input");
  std::string msg = shape_error([&] {
    in.infer({}, in.with_defaults(attrs({{"shape", Ints{1000000, 1000000, 1000000, 1000000}}})));
  });
  EXPECT_TRUE(has(msg, "64-bit")) << msg;
  const auto& r = desc("Reshape");
  EXPECT_THROW(
      r.infer({Shape{784}},
              r.with_defaults(attrs({{"shape", Ints{1000000, 1000000, 1000000, 1000000}}}))),
      ShapeError);
  // Attributes beyond their ranges, as a model's reach a rule.
  const auto& dense = desc("Dense");
  msg = shape_error([&] {
    dense.infer({Shape{k40}}, dense.with_defaults(attrs({{"units", k40}})));
  });
  EXPECT_TRUE(has(msg, "the weight")) << msg;
  const auto& emb = desc("Embedding");
  msg = shape_error([&] {
    emb.infer({Shape{16}}, emb.with_defaults(attrs({{"vocab_size", k40}, {"dim", k40}})));
  });
  EXPECT_TRUE(has(msg, "embedding table")) << msg;
  const auto& conv2d = desc("Conv2D");
  msg = shape_error([&] {
    conv2d.infer({Shape{k40, 64, 64}},
                 conv2d.with_defaults(attrs({{"filters", k40}, {"kernel", Ints{64, 64}}})));
  });
  EXPECT_TRUE(has(msg, "weight")) << msg;
  const auto& lstm = desc("LSTM");
  msg = shape_error([&] {
    lstm.infer({Shape{16, k40}}, lstm.with_defaults(attrs({{"hidden_size", k40}})));
  });
  EXPECT_TRUE(has(msg, "hidden_size")) << msg;
}

TEST(ShapeRuleLimits, ANetworkLargerThanATensorIsStillSized) {
  // So that the memory checks can say what it would take; its tensors are
  // refused when made.
  const auto& conv2d = desc("Conv2D");
  const Shape out = conv2d.infer({Shape{1, 100000, 100000}},
                                 conv2d.with_defaults(attrs({{"filters", int64_t{32}}})));
  EXPECT_EQ(out, (Shape{32, 99998, 99998}));
  EXPECT_THROW(Tensor t(out), ShapeError);
}

TEST(ShapeRuleLimits, GraphReportsAnOversizedInputInsteadOfOverflowing) {
  register_builtin_layers();
  Graph g;
  NodeId in =
      g.add_node("Input", "input", attrs({{"shape", Ints{1000000, 1000000, 1000000, 1000000}}}));
  NodeId f = g.add_node("Flatten");
  g.connect(in, f);
  const auto shapes = g.infer_shapes();
  EXPECT_FALSE(shapes.at(in).ok());
  EXPECT_TRUE(has(shapes.at(in).error, "64-bit")) << shapes.at(in).error;
  EXPECT_FALSE(shapes.at(f).ok());
  EXPECT_THROW(g.validate(), GraphError);
}

}  // namespace
}  // namespace dc
