// MaxPool2D, AvgPool2D, GlobalAvgPool2D: gradients by finite differences,
// forward values against direct references written here, shape rules.
#include <deepcanvas/errors.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/rng.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gradcheck.h"
#include "test_util.h"

namespace dc {
namespace {

using test::attrs;
using test::desc;
using test::Ints;

struct Pooled {
  std::unique_ptr<Layer> layer;
  Tensor x, y;
};

Pooled forward(const std::string& type, const Attrs& at, const Tensor& x) {
  const LayerDescriptor& d = desc(type);
  Attrs a = d.with_defaults(at);
  Shape in = x.shape().without_batch();
  Shape out = d.infer({in}, a);
  Pooled r{d.create(a, {in}, out), x, Tensor(out.with_batch(x.dim(0)))};
  RunContext ctx;
  r.layer->forward({&r.x}, r.y, ctx);
  return r;
}

Tensor random_input(Shape s, uint64_t seed) {
  Tensor x(s);
  Rng rng(seed);
  for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = rng.uniform(-2, 2);
  return x;
}

// Pads with -inf (max) or 0 (average) and pools every full window of the
// padded plane; average divides by the whole window, padding included.
Tensor naive_pool(const Tensor& x, bool max, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                  int64_t ph, int64_t pw) {
  int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  int64_t PH = H + 2 * ph, PW = W + 2 * pw;
  int64_t OH = (PH - kh) / sh + 1, OW = (PW - kw) / sw + 1;
  Tensor y(Shape{N, C, OH, OW});
  float pad = max ? -std::numeric_limits<float>::infinity() : 0.f;
  for (int64_t p = 0; p < N * C; ++p) {
    std::vector<float> padded(static_cast<size_t>(PH * PW), pad);
    for (int64_t h = 0; h < H; ++h)
      for (int64_t w = 0; w < W; ++w) padded[(h + ph) * PW + w + pw] = x.f32()[(p * H + h) * W + w];
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double acc = max ? -INFINITY : 0.0;
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j) {
            float v = padded[(oh * sh + i) * PW + ow * sw + j];
            acc = max ? std::max<double>(acc, v) : acc + v;
          }
        y.f32()[(p * OH + oh) * OW + ow] = float(max ? acc : acc / double(kh * kw));
      }
  }
  return y;
}

struct WCase {
  Ints k, s, p;
  Shape in;
};

std::vector<WCase> window_cases() {
  return {
      {{2, 2}, {2, 2}, {0, 0}, Shape{3, 6, 6}},  // the usual halving
      {{2, 2}, {2, 2}, {0, 0}, Shape{2, 7, 5}},  // odd sizes drop the last row/column
      {{3, 3}, {2, 2}, {1, 1}, Shape{2, 7, 6}},  // padded, overlapping
      {{3, 3}, {1, 1}, {0, 0}, Shape{2, 5, 5}},  // stride 1, overlapping
      {{3, 2}, {1, 2}, {1, 1}, Shape{1, 5, 6}},  // rectangular
      {{4, 4}, {3, 3}, {2, 2}, Shape{2, 7, 7}},  // padding = half the kernel
  };
}

TEST(Pool2D, ForwardMatchesDirectReference) {
  for (bool max : {true, false})
    for (const WCase& c : window_cases()) {
      SCOPED_TRACE(std::string(max ? "max" : "avg") + " " + c.in.str(true));
      Tensor x = random_input(c.in.with_batch(3), 5);
      Pooled r = forward(max ? "MaxPool2D" : "AvgPool2D",
                         attrs({{"kernel", c.k}, {"stride", c.s}, {"padding", c.p}}), x);
      Tensor ref = naive_pool(x, max, c.k[0], c.k[1], c.s[0], c.s[1], c.p[0], c.p[1]);
      ASSERT_EQ(ref.shape(), r.y.shape());
      for (int64_t i = 0; i < ref.numel(); ++i) ASSERT_NEAR(r.y.f32()[i], ref.f32()[i], 1e-5f);
    }
}

TEST(Pool2D, HandComputedExample) {
  Tensor x = Tensor::from(Shape{1, 1, 4, 4}, {1, 5, 2, 0,    //
                                              3, 4, 8, 1,    //
                                              -1, -2, 6, 6,  //
                                              -3, -4, 7, 9});
  Pooled m = forward("MaxPool2D", {}, x);
  EXPECT_EQ(m.y.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(m.y.f32()[0], 5.f);
  EXPECT_EQ(m.y.f32()[1], 8.f);
  EXPECT_EQ(m.y.f32()[2], -1.f);
  EXPECT_EQ(m.y.f32()[3], 9.f);
  Pooled a = forward("AvgPool2D", {}, x);
  EXPECT_FLOAT_EQ(a.y.f32()[0], 13.f / 4);
  EXPECT_FLOAT_EQ(a.y.f32()[1], 11.f / 4);
  EXPECT_FLOAT_EQ(a.y.f32()[2], -10.f / 4);
  EXPECT_FLOAT_EQ(a.y.f32()[3], 28.f / 4);
  // Padding counts as zeros in the divisor (count_include_pad=True): a 3×3
  // window at the corner sees 1, 5, 3, 4 and five zeros.
  Pooled ap =
      forward("AvgPool2D",
              attrs({{"kernel", Ints{3, 3}}, {"stride", Ints{3, 3}}, {"padding", Ints{1, 1}}}), x);
  EXPECT_FLOAT_EQ(ap.y.f32()[0], 13.f / 9);

  // Backward routes each gradient to its window's maximum.
  Tensor dy = Tensor::from(Shape{1, 1, 2, 2}, {10, 20, 30, 40});
  Tensor dx(x.shape());
  RunContext ctx;
  m.layer->backward({&m.x}, m.y, dy, {&dx}, ctx);
  std::vector<float> want(16, 0.f);
  want[1] = 10;   // 5
  want[6] = 20;   // 8
  want[8] = 30;   // -1
  want[15] = 40;  // 9
  for (int i = 0; i < 16; ++i) EXPECT_EQ(dx.f32()[i], want[i]) << i;
}

TEST(Pool2D, MaxTiesGoToTheFirstMaximum) {
  Tensor x(Shape{1, 1, 2, 2});
  x.fill(3.f);
  Pooled m = forward("MaxPool2D", {}, x);
  Tensor dy = Tensor::from(Shape{1, 1, 1, 1}, {1});
  Tensor dx(x.shape());
  RunContext ctx;
  m.layer->backward({&m.x}, m.y, dy, {&dx}, ctx);
  EXPECT_EQ(dx.f32()[0], 1.f);
  EXPECT_EQ(dx.f32()[1] + dx.f32()[2] + dx.f32()[3], 0.f);
}

TEST(Pool2D, MaxPropagatesNaNOnBothPaths) {
  // 2×2/stride 2 has its own fast loop; 3×3/stride 1 takes the general one.
  for (Ints k : {Ints{2, 2}, Ints{3, 3}}) {
    Tensor x(Shape{1, 1, 4, 4});
    x.fill(1.f);
    x.f32()[5] = std::numeric_limits<float>::quiet_NaN();
    Pooled m =
        forward("MaxPool2D",
                attrs({{"kernel", k}, {"stride", Ints{k[0] == 2 ? 2 : 1, k[0] == 2 ? 2 : 1}}}), x);
    EXPECT_TRUE(std::isnan(m.y.f32()[0])) << k[0];
  }
}

TEST(Pool2D, GradientsMatchFiniteDifferences) {
  for (const WCase& c : window_cases()) {
    SCOPED_TRACE(c.in.str(true));
    Attrs a = attrs({{"kernel", c.k}, {"stride", c.s}, {"padding", c.p}});
    test::GradCheckOptions o;
    o.distinct_inputs = true;  // keep max pooling away from ties
    test::check_layer_gradients("MaxPool2D", a, {c.in}, 2, o);
    test::check_layer_gradients("AvgPool2D", a, {c.in}, 2);
  }
  test::check_layer_gradients("GlobalAvgPool2D", {}, {Shape{3, 4, 5}}, 2);
}

// ceil_mode: PyTorch's output sizes (one more window where the last would
// start inside the input), the clipped windows' maxima and their gradients,
// including the 2×2/stride-2 shape, whose unrolled loop must not serve them.
TEST(Pool2D, MaxCeilModeSizesValuesAndGradients) {
  struct C {
    Ints k, s, p;
    Shape in, out;
  };
  const std::vector<C> cases = {
      {{3, 3}, {2, 2}, {0, 0}, Shape{2, 32, 32}, Shape{2, 16, 16}},  // SqueezeNet's
      {{3, 3}, {2, 2}, {0, 0}, Shape{2, 31, 31}, Shape{2, 15, 15}},  // no change
      {{2, 2}, {2, 2}, {0, 0}, Shape{2, 7, 5}, Shape{2, 4, 3}},
      {{3, 3}, {2, 2}, {1, 1}, Shape{1, 6, 7}, Shape{1, 4, 4}},
  };
  for (const C& c : cases) {
    SCOPED_TRACE(c.in.str(true));
    Attrs a = attrs({{"kernel", c.k}, {"stride", c.s}, {"padding", c.p}, {"ceil_mode", true}});
    EXPECT_EQ(desc("MaxPool2D").infer({c.in}, desc("MaxPool2D").with_defaults(a)), c.out);
    Tensor x = random_input(c.in.with_batch(2), 9);
    Pooled r = forward("MaxPool2D", a, x);
    // Each output is the maximum of its window clipped to the input.
    const int64_t H = c.in[1], W = c.in[2], OH = c.out[1], OW = c.out[2];
    for (int64_t p = 0; p < 2 * c.in[0]; ++p)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          float m = -INFINITY;
          for (int64_t h = std::max<int64_t>(oh * c.s[0] - c.p[0], 0);
               h < std::min(oh * c.s[0] - c.p[0] + c.k[0], H); ++h)
            for (int64_t w = std::max<int64_t>(ow * c.s[1] - c.p[1], 0);
                 w < std::min(ow * c.s[1] - c.p[1] + c.k[1], W); ++w)
              m = std::max(m, x.f32()[(p * H + h) * W + w]);
          ASSERT_EQ(r.y.f32()[(p * OH + oh) * OW + ow], m);
        }
    test::GradCheckOptions o;
    o.distinct_inputs = true;
    test::check_layer_gradients("MaxPool2D", a, {c.in}, 2, o);
  }
}

TEST(Pool2D, BackwardAccumulates) {
  for (const char* type : {"MaxPool2D", "AvgPool2D", "GlobalAvgPool2D"}) {
    SCOPED_TRACE(type);
    Tensor x = random_input(Shape{2, 3, 4, 4}, 9);
    Pooled r = forward(type, {}, x);
    Tensor dy = random_input(r.y.shape(), 10);
    Tensor dx(x.shape());
    dx.fill(1.f);
    RunContext ctx;
    r.layer->backward({&r.x}, r.y, dy, {&dx}, ctx);
    // Every route is linear in dy: the total added equals sum(dy) for max and
    // for the averages (each output spreads its value over its window).
    double added = 0, want = 0;
    for (int64_t i = 0; i < dx.numel(); ++i) added += dx.f32()[i] - 1.0;
    for (int64_t i = 0; i < dy.numel(); ++i) want += dy.f32()[i];
    EXPECT_NEAR(added, want, 1e-4);
  }
}

// RunContext::fresh_din: the plan hands an unzeroed gradient buffer (here
// full of NaN) to a layer that overwrites; the result must equal
// accumulating into zeros, for windows tiling the plane exactly and not.
TEST(Pool2D, AFreshGradientIsWrittenOutright) {
  for (const char* type : {"MaxPool2D", "AvgPool2D"})
    for (const Shape& in : {Shape{3, 6, 6}, Shape{2, 7, 5}})
      for (const Ints& k : {Ints{2, 2}, Ints{3, 3}}) {
        SCOPED_TRACE(std::string(type) + " " + in.str(true) + " k" + std::to_string(k[0]));
        const Attrs a = attrs({{"kernel", k}, {"stride", Ints{2, 2}}});
        Tensor x = random_input(in.with_batch(2), 11);
        Pooled r = forward(type, a, x);
        ASSERT_TRUE(r.layer->overwrites_din());
        Tensor dy = random_input(r.y.shape(), 12);
        Tensor zeroed(x.shape()), fresh(x.shape());
        zeroed.zero();
        fresh.fill(std::numeric_limits<float>::quiet_NaN());
        RunContext acc, over;
        over.fresh_din = 1;
        r.layer->backward({&r.x}, r.y, dy, {&zeroed}, acc);
        r.layer->backward({&r.x}, r.y, dy, {&fresh}, over);
        for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(fresh.f32()[i], zeroed.f32()[i]) << i;
      }
}

TEST(GlobalAvgPool2D, AveragesEachChannel) {
  Tensor x = random_input(Shape{2, 3, 4, 5}, 4);
  Pooled r = forward("GlobalAvgPool2D", {}, x);
  ASSERT_EQ(r.y.shape(), (Shape{2, 3}));
  for (int64_t p = 0; p < 6; ++p) {
    double s = 0;
    for (int64_t i = 0; i < 20; ++i) s += x.f32()[p * 20 + i];
    EXPECT_NEAR(r.y.f32()[p], s / 20, 1e-5);
  }
  EXPECT_EQ(desc("GlobalAvgPool2D").attrs.size(), 0u);
}

std::string shape_error(const std::string& type, const Attrs& a, const Shape& in) {
  try {
    desc(type).infer({in}, desc(type).with_defaults(a));
  } catch (const ShapeError& e) {
    return e.what();
  }
  return "";
}

TEST(Pool2D, ShapeErrorsSayWhatToChange) {
  for (const char* type : {"MaxPool2D", "AvgPool2D", "GlobalAvgPool2D"}) {
    std::string m = shape_error(type, {}, Shape{784});
    EXPECT_NE(m.find("expects a 3-D input (channels×height×width) but got 784"), std::string::npos)
        << m;
    EXPECT_NE(m.find("Flatten"), std::string::npos) << m;
  }
  std::string m = shape_error("MaxPool2D", attrs({{"kernel", Ints{3, 3}}, {"padding", Ints{2, 1}}}),
                              Shape{1, 8, 8});
  EXPECT_NE(m.find("padding 2×1 is more than half the 3×3 kernel; use at most 1×1"),
            std::string::npos)
      << m;
  m = shape_error("AvgPool2D", attrs({{"kernel", Ints{4, 4}}}), Shape{8, 3, 3});
  EXPECT_NE(m.find("4×4 window is larger than the 3×3 input"), std::string::npos) << m;
  EXPECT_NE(m.find("output would be empty"), std::string::npos) << m;
  EXPECT_EQ(shape_error("MaxPool2D", {}, Shape{8, 3, 3}), "");  // 3×3 -> 1×1
  EXPECT_EQ(desc("MaxPool2D").infer({Shape{32, 28, 28}}, desc("MaxPool2D").with_defaults({})),
            (Shape{32, 14, 14}));
}

TEST(Pool2D, SchemaAndCost) {
  for (const char* type : {"MaxPool2D", "AvgPool2D"}) {
    const LayerDescriptor& d = desc(type);
    EXPECT_EQ(d.category, "Pooling");
    EXPECT_EQ(d.num_inputs(Attrs{}), 1);
    EXPECT_EQ(std::get<Ints>(d.find_attr("kernel")->def), (Ints{2, 2}));
    EXPECT_EQ(std::get<Ints>(d.find_attr("stride")->def), (Ints{2, 2}));
    EXPECT_EQ(std::get<Ints>(d.find_attr("padding")->def), (Ints{0, 0}));
    EXPECT_NE(validate_attr(*d.find_attr("padding"), AttrValue(Ints{33, 0})), "");
    Attrs a = d.with_defaults({});
    Cost c = d.cost({Shape{32, 28, 28}}, Shape{32, 14, 14}, a);
    EXPECT_EQ(c.params, 0);
    EXPECT_EQ(c.macs, int64_t(32) * 14 * 14 * 4);
  }
  EXPECT_EQ(desc("GlobalAvgPool2D").category, "Pooling");
}

// Inference keeps no argmax (the int8 path's cost); the outputs are the
// training forward's, and a backward after it still finds the maxima.
TEST(Pool, MaxPoolInferenceMatchesTrainingAndBackwardStillWorks) {
  const Tensor x = random_input(Shape{2, 3, 8, 8}, 5);
  const LayerDescriptor& d = desc("MaxPool2D");
  const Attrs a = d.with_defaults({});
  const Shape out = d.infer({x.shape().without_batch()}, a);
  auto train = d.create(a, {x.shape().without_batch()}, out);
  auto infer = d.create(a, {x.shape().without_batch()}, out);
  Tensor yt(out.with_batch(2)), yi(out.with_batch(2));
  RunContext tc, ic;
  ic.training = false;
  train->forward({&x}, yt, tc);
  infer->forward({&x}, yi, ic);
  for (int64_t i = 0; i < yt.numel(); ++i) ASSERT_EQ(yt.f32()[i], yi.f32()[i]) << i;
  Tensor dy = random_input(out.with_batch(2), 6), dxt(x.shape()), dxi(x.shape());
  tc.fresh_din = ic.fresh_din = 1;
  train->backward({&x}, yt, dy, {&dxt}, tc);
  infer->backward({&x}, yi, dy, {&dxi}, ic);
  for (int64_t i = 0; i < dxt.numel(); ++i) ASSERT_EQ(dxt.f32()[i], dxi.f32()[i]) << i;
}

}  // namespace
}  // namespace dc
