// MultiHeadAttention: finite-difference gradients for self- and
// cross-attention, causal or not, with and without biases; the causal mask
// hides later steps; dropout acts only in training; shape errors say what
// to change. The token layers around it: gradients and shapes.
// (Agreement with PyTorch for all of them: torch_reference_cnn_test.cpp.)
#include <deepcanvas/errors.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/rng.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gradcheck.h"
#include "test_util.h"

namespace dc {
namespace {

using test::attrs;
using test::desc;

TEST(MultiHeadAttention, GradientsMatchFiniteDifferences) {
  test::check_layer_gradients("MultiHeadAttention", attrs({{"heads", int64_t(2)}}), {Shape{4, 6}},
                              2);
  test::check_layer_gradients("MultiHeadAttention",
                              attrs({{"heads", int64_t(3)}, {"causal", true}, {"bias", false}}),
                              {Shape{5, 6}}, 2);
  test::check_layer_gradients("MultiHeadAttention",
                              attrs({{"heads", int64_t(2)}, {"mode", std::string("cross")}}),
                              {Shape{3, 4}, Shape{5, 4}}, 2);
}

// Runs a layer on x (and kv) and returns the output.
Tensor run(Layer& l, const std::vector<const Tensor*>& in, const Shape& out, bool training,
           uint64_t seed) {
  Tensor y(out.with_batch(in[0]->dim(0)));
  Rng rng(seed);
  RunContext ctx{training, &rng};
  l.forward(in, y, ctx);
  return y;
}

TEST(MultiHeadAttention, CausalStepsDoNotSeeLaterSteps) {
  const LayerDescriptor& d = desc("MultiHeadAttention");
  const Attrs a = d.with_defaults(attrs({{"heads", int64_t(2)}, {"causal", true}}));
  const Shape s{6, 4};
  auto l = d.create(a, {s}, d.infer({s}, a));
  Rng init(3);
  l->init(init);
  Tensor x(s.with_batch(1));
  Rng r(4);
  for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = r.uniform(-1, 1);
  const Tensor before = run(*l, {&x}, s, false, 1);
  // Change the last two steps: the first four outputs must not move.
  for (int64_t i = 4 * 4; i < x.numel(); ++i) x.f32()[i] += 1.f;
  const Tensor after = run(*l, {&x}, s, false, 1);
  for (int64_t i = 0; i < 4 * 4; ++i) EXPECT_EQ(before.f32()[i], after.f32()[i]) << i;
  bool moved = false;
  for (int64_t i = 4 * 4; i < x.numel(); ++i) moved |= before.f32()[i] != after.f32()[i];
  EXPECT_TRUE(moved);
}

TEST(MultiHeadAttention, DropoutActsOnlyInTraining) {
  const LayerDescriptor& d = desc("MultiHeadAttention");
  const Attrs a = d.with_defaults(attrs({{"heads", int64_t(2)}, {"dropout", 0.5}}));
  const Shape s{8, 4};
  auto l = d.create(a, {s}, d.infer({s}, a));
  Rng init(3);
  l->init(init);
  Tensor x(s.with_batch(2));
  Rng r(5);
  for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = r.uniform(-1, 1);
  const Tensor e1 = run(*l, {&x}, s, false, 1), e2 = run(*l, {&x}, s, false, 2);
  const Tensor t1 = run(*l, {&x}, s, true, 1), t1b = run(*l, {&x}, s, true, 1);
  const Tensor t2 = run(*l, {&x}, s, true, 2);
  double eval_diff = 0, train_same = 0, train_diff = 0, train_eval = 0;
  for (int64_t i = 0; i < e1.numel(); ++i) {
    eval_diff += std::abs(e1.f32()[i] - e2.f32()[i]);
    train_same += std::abs(t1.f32()[i] - t1b.f32()[i]);
    train_diff += std::abs(t1.f32()[i] - t2.f32()[i]);
    train_eval += std::abs(t1.f32()[i] - e1.f32()[i]);
  }
  EXPECT_EQ(eval_diff, 0.0);   // evaluation ignores the seed
  EXPECT_EQ(train_same, 0.0);  // the same seed, the same mask
  EXPECT_GT(train_diff, 0.0);  // another seed, another mask
  EXPECT_GT(train_eval, 0.0);
}

std::string shape_error(const Attrs& at, const std::vector<Shape>& in) {
  const LayerDescriptor& d = desc("MultiHeadAttention");
  try {
    d.infer(in, d.with_defaults(at));
  } catch (const ShapeError& e) {
    return e.what();
  }
  return "";
}

TEST(MultiHeadAttention, ShapesAndErrorsSayWhatToChange) {
  const LayerDescriptor& d = desc("MultiHeadAttention");
  EXPECT_EQ(d.infer({Shape{7, 8}}, d.with_defaults(attrs({{"heads", int64_t(2)}}))), (Shape{7, 8}));
  const Attrs cross = attrs({{"heads", int64_t(2)}, {"mode", std::string("cross")}});
  EXPECT_EQ(d.infer({Shape{3, 8}, Shape{9, 8}}, d.with_defaults(cross)), (Shape{3, 8}));
  EXPECT_EQ(d.num_inputs(d.with_defaults(cross)), 2);
  std::string m = shape_error(attrs({{"heads", int64_t(3)}}), {Shape{5, 8}});
  EXPECT_NE(m.find("do not split into 3 heads"), std::string::npos) << m;
  m = shape_error(cross, {Shape{3, 8}, Shape{9, 6}});
  EXPECT_NE(m.find("must match"), std::string::npos) << m;
  m = shape_error({}, {Shape{1, 28, 28}});
  EXPECT_NE(m.find("expects a sequence"), std::string::npos) << m;
  // Parameters and MACs: four E×E projections with biases.
  const Cost c =
      d.cost({Shape{5, 8}}, Shape{5, 8}, d.with_defaults(attrs({{"heads", int64_t(2)}})));
  EXPECT_EQ(c.params, 4 * 8 * 8 + 4 * 8);
  EXPECT_EQ(c.macs, 2 * 5 * 64 + 2 * 5 * 64 + 2 * 5 * 5 * 8);
}

TEST(TokenLayers, GradientsMatchFiniteDifferences) {
  test::check_layer_gradients("ImageToTokens", {}, {Shape{3, 2, 4}}, 2);
  test::check_layer_gradients("PositionalEmbedding", {}, {Shape{5, 4}}, 3);
  test::check_layer_gradients("PositionalEmbedding", attrs({{"kind", std::string("sinusoidal")}}),
                              {Shape{5, 4}}, 2);
  test::check_layer_gradients("ClassToken", {}, {Shape{4, 3}}, 3);
  test::check_layer_gradients("TokenPooling", {}, {Shape{4, 3}}, 2);
  test::check_layer_gradients("TokenPooling", attrs({{"mode", std::string("first")}}),
                              {Shape{4, 3}}, 2);
}

TEST(TokenLayers, ShapesMakeAVisionTransformerStem) {
  auto infer = [](const char* type, const Shape& in, const Attrs& at = {}) {
    const LayerDescriptor& d = desc(type);
    return d.infer({in}, d.with_defaults(at));
  };
  // A 28×28 image through a 7×7 patch Conv2D of 32 filters: 4×4 patches.
  EXPECT_EQ(infer("ImageToTokens", Shape{32, 4, 4}), (Shape{16, 32}));
  EXPECT_EQ(infer("ClassToken", Shape{16, 32}), (Shape{17, 32}));
  EXPECT_EQ(infer("PositionalEmbedding", Shape{17, 32}), (Shape{17, 32}));
  EXPECT_EQ(infer("TokenPooling", Shape{17, 32}, attrs({{"mode", std::string("first")}})),
            (Shape{32}));
  // Learned positions are parameters; sinusoids are not.
  const LayerDescriptor& pe = desc("PositionalEmbedding");
  EXPECT_EQ(pe.cost({Shape{17, 32}}, Shape{17, 32}, pe.with_defaults({})).params, 17 * 32);
  EXPECT_EQ(pe.cost({Shape{17, 32}}, Shape{17, 32},
                    pe.with_defaults(attrs({{"kind", std::string("sinusoidal")}})))
                .params,
            0);
  try {
    infer("TokenPooling", Shape{1, 28, 28});
    ADD_FAILURE() << "an image is not a sequence";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("expects a sequence of tokens"), std::string::npos);
  }
}

}  // namespace
}  // namespace dc
