// Conv2D: gradients by finite differences, forward values against a direct
// seven-loop convolution written here, shape rules, cost and initialisation.
#include <deepcanvas/errors.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/parallel.h>
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
using test::Ints;

const LayerDescriptor& conv() {
  register_builtin_layers();
  return LayerRegistry::instance().get("Conv2D");
}

// Dense convolutions have two CPU paths: oneDNN's kernels (the default
// where oneDNN is built in) and im2col + GEMM. Runs fn once on each path
// this build has, layers created inside fn taking that path.
template <class F>
void on_each_path(F fn) {
  const bool saved = cpu_conv_onednn();
  for (bool onednn : {true, false}) {
    set_cpu_conv_onednn(onednn);
    if (cpu_conv_onednn() != onednn) continue;  // oneDNN is not built in
    SCOPED_TRACE(onednn ? "oneDNN" : "im2col");
    fn();
  }
  set_cpu_conv_onednn(saved);
}

Param* find_param(Layer& l, const std::string& name) {
  for (Param* p : l.params())
    if (p->name == name) return p;
  return nullptr;
}

// One test configuration: attributes plus the padding the test itself
// expects them to mean (top, bottom, left, right).
struct Case {
  std::string label;
  Attrs a;
  Shape in;  // C, H, W
  int64_t pt, pb, pl, pr;
};

// Direct convolution, independent of im2col: out[n][o][y][x] = b[o] +
// sum over c in o's group, ki, kj of w * x at (y*s - pad + ki*d, ...).
Tensor naive_conv(const Tensor& x, const Tensor& w, const Tensor* b, const Ints& stride,
                  const Ints& dil, int64_t groups, int64_t pt, int64_t pb, int64_t pl, int64_t pr) {
  int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  int64_t OC = w.dim(0), Cg = w.dim(1), KH = w.dim(2), KW = w.dim(3);
  int64_t OH = (H + pt + pb - dil[0] * (KH - 1) - 1) / stride[0] + 1;
  int64_t OW = (W + pl + pr - dil[1] * (KW - 1) - 1) / stride[1] + 1;
  EXPECT_EQ(C, Cg * groups);
  Tensor y(Shape{N, OC, OH, OW});
  int64_t OCg = OC / groups;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < OC; ++o)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          double s = b ? b->f32()[o] : 0.0;
          int64_t g = o / OCg;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t ki = 0; ki < KH; ++ki)
              for (int64_t kj = 0; kj < KW; ++kj) {
                int64_t iy = oy * stride[0] - pt + ki * dil[0];
                int64_t ix = ox * stride[1] - pl + kj * dil[1];
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                s += double(w.f32()[((o * Cg + c) * KH + ki) * KW + kj]) *
                     x.f32()[((n * C + g * Cg + c) * H + iy) * W + ix];
              }
          y.f32()[((n * OC + o) * OH + oy) * OW + ox] = float(s);
        }
  return y;
}

std::vector<Case> cases() {
  return {
      {"plain", attrs({{"filters", int64_t(4)}}), Shape{3, 7, 6}, 0, 0, 0, 0},
      {"stride2", attrs({{"filters", int64_t(3)}, {"stride", Ints{2, 2}}}), Shape{2, 9, 8}, 0, 0, 0,
       0},
      {"padding", attrs({{"filters", int64_t(5)}, {"padding", Ints{1, 2}}}), Shape{2, 5, 5}, 1, 1,
       2, 2},
      {"same3", attrs({{"filters", int64_t(4)}, {"padding_mode", std::string("same")}}),
       Shape{2, 6, 5}, 1, 1, 1, 1},
      // An even kernel needs 3 pixels of padding: 1 before, 2 after.
      {"same4x2",
       attrs({{"filters", int64_t(2)},
              {"kernel", Ints{4, 2}},
              {"padding_mode", std::string("same")}}),
       Shape{2, 6, 5}, 1, 2, 0, 1},
      // Stride 2, SAME: out = ceil(8/2) = 4, total = 3*2 + 3 - 8 = 1 -> (0, 1);
      // width 7: out 4, total = 3*2 + 3 - 7 = 2 -> (1, 1).
      {"same_stride2",
       attrs({{"filters", int64_t(3)},
              {"stride", Ints{2, 2}},
              {"padding_mode", std::string("same")}}),
       Shape{2, 8, 7}, 0, 1, 1, 1},
      {"valid_ignores_padding",
       attrs({{"filters", int64_t(3)},
              {"padding", Ints{2, 2}},
              {"padding_mode", std::string("valid")}}),
       Shape{2, 6, 6}, 0, 0, 0, 0},
      {"dilation2",
       attrs({{"filters", int64_t(3)}, {"dilation", Ints{2, 2}}, {"padding", Ints{1, 1}}}),
       Shape{2, 8, 7}, 1, 1, 1, 1},
      {"groups2", attrs({{"filters", int64_t(6)}, {"groups", int64_t(2)}, {"padding", Ints{1, 1}}}),
       Shape{4, 5, 6}, 1, 1, 1, 1},
      {"depthwise",
       attrs({{"filters", int64_t(3)}, {"groups", int64_t(3)}, {"padding", Ints{1, 1}}}),
       Shape{3, 6, 5}, 1, 1, 1, 1},
      // Depthwise layers run a direct kernel, not im2col: EfficientNet's
      // 5x5 stride-2 SAME form (H 9: out 5, total 4 -> (2, 2); W 8: out 4,
      // total 3 -> (1, 2)), a channel multiplier of 2, dilation without a
      // bias, and a rectangular kernel with a column stride.
      {"depthwise_same5_stride2",
       attrs({{"filters", int64_t(4)},
              {"groups", int64_t(4)},
              {"kernel", Ints{5, 5}},
              {"stride", Ints{2, 2}},
              {"padding_mode", std::string("same")}}),
       Shape{4, 9, 8}, 2, 2, 1, 2},
      {"depthwise_multiplier2",
       attrs({{"filters", int64_t(6)}, {"groups", int64_t(3)}, {"padding", Ints{1, 1}}}),
       Shape{3, 5, 6}, 1, 1, 1, 1},
      {"depthwise_dilation_no_bias",
       attrs({{"filters", int64_t(2)},
              {"groups", int64_t(2)},
              {"dilation", Ints{2, 2}},
              {"padding", Ints{2, 2}},
              {"bias", false}}),
       Shape{2, 7, 7}, 2, 2, 2, 2},
      {"depthwise_rect_stride",
       attrs({{"filters", int64_t(3)},
              {"groups", int64_t(3)},
              {"kernel", Ints{2, 3}},
              {"stride", Ints{1, 2}},
              {"padding", Ints{0, 1}}}),
       Shape{3, 5, 9}, 0, 0, 1, 1},
      // Stride 2 with dilation 2: every tap reads the even phase, so the odd
      // input pixels get no gradient.
      {"depthwise_stride2_dilation2",
       attrs({{"filters", int64_t(2)},
              {"groups", int64_t(2)},
              {"stride", Ints{2, 2}},
              {"dilation", Ints{2, 2}},
              {"padding", Ints{1, 2}}}),
       Shape{2, 9, 8}, 1, 1, 2, 2},
      // A padding wider than the input's reach leaves whole rows of padding.
      {"depthwise_wide_padding",
       attrs({{"filters", int64_t(2)}, {"groups", int64_t(2)}, {"padding", Ints{3, 3}}}),
       Shape{2, 2, 3}, 3, 3, 3, 3},
      {"no_bias", attrs({{"filters", int64_t(4)}, {"bias", false}}), Shape{2, 5, 5}, 0, 0, 0, 0},
      // Channels in blocks of 16, 3×3 stride 1: oneDNN's Winograd kernels
      // where the CPU has them (Conv2D.WinogradWhereItApplies).
      {"winograd16", attrs({{"filters", int64_t(16)}, {"padding", Ints{1, 1}}}), Shape{16, 6, 6}, 1,
       1, 1, 1},
      {"pointwise", attrs({{"filters", int64_t(5)}, {"kernel", Ints{1, 1}}}), Shape{3, 4, 5}, 0, 0,
       0, 0},
      {"pointwise_groups",
       attrs({{"filters", int64_t(4)}, {"kernel", Ints{1, 1}}, {"groups", int64_t(2)}}),
       Shape{4, 3, 3}, 0, 0, 0, 0},
      {"rect_stride",
       attrs({{"filters", int64_t(2)},
              {"kernel", Ints{2, 3}},
              {"stride", Ints{1, 3}},
              {"padding", Ints{0, 1}}}),
       Shape{2, 5, 9}, 0, 0, 1, 1},
  };
}

TEST(Conv2D, ForwardMatchesDirectConvolution) {
  on_each_path([&] {
    for (const Case& cs : cases()) {
      SCOPED_TRACE(cs.label);
      Attrs a = conv().with_defaults(cs.a);
      Shape out = conv().infer({cs.in}, a);
      auto layer = conv().create(a, {cs.in}, out);
      Rng rng(7);
      layer->init(rng);
      Param* b = find_param(*layer, "bias");
      if (b)  // the default init is tiny; make the bias visible
        for (int64_t i = 0; i < b->value.numel(); ++i) b->value.f32()[i] = rng.uniform(-1, 1);
      const int64_t N = 3;  // odd: uneven split over threads
      Tensor x(cs.in.with_batch(N));
      for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = rng.uniform(-1, 1);
      Tensor y(out.with_batch(N));
      RunContext ctx;
      layer->forward({&x}, y, ctx);
      Tensor ref = naive_conv(x, find_param(*layer, "weight")->value, b ? &b->value : nullptr,
                              a.ints("stride"), a.ints("dilation"), a.i("groups"), cs.pt, cs.pb,
                              cs.pl, cs.pr);
      ASSERT_EQ(ref.shape(), y.shape());
      for (int64_t i = 0; i < y.numel(); ++i)
        ASSERT_NEAR(y.f32()[i], ref.f32()[i], 1e-5f) << "at " << i;
    }
  });
}

TEST(Conv2D, HandComputedExample) {
  // x = 1..9 as 3x3, w = [[1, 0], [0, -1]], bias 0.5: every output is
  // x[i][j] - x[i+1][j+1] + 0.5 = -4 + 0.5.
  Attrs a = conv().with_defaults(attrs({{"filters", int64_t(1)}, {"kernel", Ints{2, 2}}}));
  auto layer = conv().create(a, {Shape{1, 3, 3}}, Shape{1, 2, 2});
  find_param(*layer, "weight")->value.copy_from(Tensor::from(Shape{1, 1, 2, 2}, {1, 0, 0, -1}));
  find_param(*layer, "bias")->value.fill(0.5f);
  Tensor x = Tensor::from(Shape{1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor y(Shape{1, 1, 2, 2});
  RunContext ctx;
  layer->forward({&x}, y, ctx);
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(y.f32()[i], -3.5f);
}

TEST(Conv2D, GradientsMatchFiniteDifferences) {
  on_each_path([&] {
    for (const Case& cs : cases()) {
      SCOPED_TRACE(cs.label);
      test::check_layer_gradients("Conv2D", cs.a, {cs.in}, 3);
    }
  });
}

TEST(Conv2D, BackwardAccumulates) {
  on_each_path([&] {
    Attrs a = conv().with_defaults(attrs({{"filters", int64_t(3)}, {"padding", Ints{1, 1}}}));
    Shape in{2, 5, 5};
    Shape out = conv().infer({in}, a);
    auto layer = conv().create(a, {in}, out);
    Rng rng(3);
    layer->init(rng);
    Tensor x(in.with_batch(4)), y(out.with_batch(4)), dy(out.with_batch(4));
    for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = rng.uniform(-1, 1);
    for (int64_t i = 0; i < dy.numel(); ++i) dy.f32()[i] = rng.uniform(-1, 1);
    RunContext ctx;
    layer->forward({&x}, y, ctx);
    Tensor dx(x.shape());
    layer->backward({&x}, y, dy, {&dx}, ctx);
    Tensor dx1 = dx.clone();
    Tensor gw1 = find_param(*layer, "weight")->grad.clone();
    Tensor gb1 = find_param(*layer, "bias")->grad.clone();
    layer->backward({&x}, y, dy, {&dx}, ctx);
    for (int64_t i = 0; i < dx.numel(); ++i) EXPECT_NEAR(dx.f32()[i], 2 * dx1.f32()[i], 1e-5f);
    for (int64_t i = 0; i < gw1.numel(); ++i)
      EXPECT_NEAR(find_param(*layer, "weight")->grad.f32()[i], 2 * gw1.f32()[i], 1e-4f);
    for (int64_t i = 0; i < gb1.numel(); ++i)
      EXPECT_NEAR(find_param(*layer, "bias")->grad.f32()[i], 2 * gb1.f32()[i], 1e-4f);
    // No input gradient requested (the network input): parameters only.
    Tensor gw2 = find_param(*layer, "weight")->grad.clone();
    layer->backward({&x}, y, dy, {nullptr}, ctx);
    for (int64_t i = 0; i < gw1.numel(); ++i)
      EXPECT_NEAR(find_param(*layer, "weight")->grad.f32()[i], gw2.f32()[i] + gw1.f32()[i], 1e-4f);
  });
}

TEST(Conv2D, RepeatsExactlyForAThreadCount) {
  on_each_path([&] {
    // The product's two-conv CNN second layer, small batch: weight gradients
    // come from per-thread partial sums and must reduce in a fixed order.
    Attrs a = conv().with_defaults(attrs({{"filters", int64_t(8)}, {"padding", Ints{1, 1}}}));
    Shape in{4, 6, 6};
    auto run = [&]() {
      auto layer = conv().create(a, {in}, Shape{8, 6, 6});
      Rng rng(11);
      layer->init(rng);
      Tensor x(in.with_batch(7)), y(Shape{7, 8, 6, 6}), dy(y.shape()), dx(x.shape());
      for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = rng.uniform(-1, 1);
      for (int64_t i = 0; i < dy.numel(); ++i) dy.f32()[i] = rng.uniform(-1, 1);
      RunContext ctx;
      layer->forward({&x}, y, ctx);
      layer->backward({&x}, y, dy, {&dx}, ctx);
      return find_param(*layer, "weight")->grad.clone();
    };
    Tensor g1 = run(), g2 = run();
    for (int64_t i = 0; i < g1.numel(); ++i) ASSERT_EQ(g1.f32()[i], g2.f32()[i]);
  });
}

// Forward and backward of one layer on fixed data (the same x, weights and
// dy for the same attributes), returning the output, the input gradient and
// the weight and bias gradients. `fuse`: the cap of a fused ReLU (infinity:
// ReLU), none when NaN. `mask`: dy is multiplied by 0 < mask < mask_cap.
struct Pass {
  Tensor y, dx, gw, gb;
  Tensor y_inference;  // the same forward with RunContext::training false
};
constexpr float kNoFusion = std::numeric_limits<float>::quiet_NaN();
constexpr float kRelu = std::numeric_limits<float>::infinity();
// frozen: the layer's gradients released, as a frozen layer's plan does.
Pass run_pass(const Attrs& a, const Shape& in, int64_t n, float fuse, const Tensor* mask = nullptr,
              float mask_cap = kRelu, bool frozen = false) {
  Attrs full = conv().with_defaults(a);
  Shape out = conv().infer({in}, full);
  auto layer = conv().create(full, {in}, out);
  if (!std::isnan(fuse)) {
    EXPECT_TRUE(layer->fuse_relu(fuse));
  }
  Rng rng(19);
  layer->init(rng);
  find_param(*layer, "bias")->value.fill(0.05f);  // some outputs on each side of 0
  Tensor x(in.with_batch(n)), dy(out.with_batch(n));
  for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = rng.uniform(-1, 1);
  for (int64_t i = 0; i < dy.numel(); ++i) {
    const bool pass = !mask || (mask->f32()[i] > 0 && mask->f32()[i] < mask_cap);
    dy.f32()[i] = rng.uniform(-1, 1) * (pass ? 1.f : 0.f);
  }
  Pass p{Tensor(out.with_batch(n)), Tensor(x.shape()), {}, {}, Tensor(out.with_batch(n))};
  if (frozen)
    for (Param* q : layer->params()) q->grad = Tensor();
  RunContext ctx;
  ctx.training = false;
  layer->forward({&x}, p.y_inference, ctx);
  ctx.training = true;
  layer->forward({&x}, p.y, ctx);
  ctx.fresh_din = 1;
  layer->backward({&x}, p.y, dy, {&p.dx}, ctx);
  if (frozen) return p;
  p.gw = find_param(*layer, "weight")->grad.clone();
  p.gb = find_param(*layer, "bias")->grad.clone();
  return p;
}

// A forward that keeps nothing (inference; a frozen layer, whose 1×1
// convolutions then run as a GEMM in place) computes what a training
// forward does, and a frozen layer's input gradient is the trainable one's.
TEST(Conv2D, InferenceAndFrozenForwardsMatchTraining) {
  const std::vector<std::pair<Attrs, Shape>> geometries{
      {attrs({{"filters", int64_t(24)}, {"kernel", Ints{1, 1}}}), Shape{16, 6, 5}},
      {attrs({{"filters", int64_t(16)}, {"groups", int64_t(16)}, {"padding", Ints{1, 1}}}),
       Shape{16, 7, 6}},
      {attrs({{"filters", int64_t(8)}, {"padding", Ints{1, 1}}}), Shape{3, 6, 6}},
  };
  on_each_path([&] {
    for (const auto& [a, in] : geometries) {
      SCOPED_TRACE(a.i("filters"));
      const Pass trained = run_pass(a, in, 3, kRelu);
      const Pass frozen = run_pass(a, in, 3, kRelu, nullptr, kRelu, /*frozen=*/true);
      for (const Pass* p : {&trained, &frozen}) {
        for (int64_t i = 0; i < trained.y.numel(); ++i) {
          ASSERT_NEAR(p->y.f32()[i], trained.y.f32()[i], 1e-5f) << i;
          ASSERT_NEAR(p->y_inference.f32()[i], trained.y.f32()[i], 1e-5f) << i;
        }
      }
      for (int64_t i = 0; i < trained.dx.numel(); ++i)
        ASSERT_NEAR(frozen.dx.f32()[i], trained.dx.f32()[i], 1e-5f) << i;
    }
  });
}

TEST(Conv2D, FusedReluEqualsAReluAfterTheConvolution) {
  on_each_path([&] {
    // Both kernels (im2col and depthwise) fuse a following ReLU or ReLU6: the
    // output is max(conv, 0), capped, and the backward masks the output
    // gradient by 0 < out (< cap), as the ReLU and ReLU6 layers' backward
    // would. A cap of 0.3 stands in for ReLU6's 6 so that these small outputs
    // reach it.
    for (const Attrs& a :
         {attrs({{"filters", int64_t(4)}, {"padding", Ints{1, 1}}}),
          attrs({{"filters", int64_t(6)}, {"groups", int64_t(3)}, {"padding", Ints{1, 1}}}),
          attrs({{"filters", int64_t(3)},
                 {"groups", int64_t(3)},
                 {"kernel", Ints{5, 5}},
                 {"stride", Ints{2, 2}},
                 {"padding_mode", std::string("same")}})})
      for (float cap : {kRelu, 0.3f}) {
        SCOPED_TRACE(cap);
        const Shape in{3, 7, 6};
        Pass plain = run_pass(a, in, 3, kNoFusion);
        Pass fused = run_pass(a, in, 3, cap);
        Pass reference = run_pass(a, in, 3, kNoFusion, &plain.y, cap);
        bool some_negative = false, some_capped = false;
        for (int64_t i = 0; i < plain.y.numel(); ++i) {
          ASSERT_EQ(fused.y.f32()[i], std::min(std::max(plain.y.f32()[i], 0.f), cap)) << "at " << i;
          some_negative = some_negative || plain.y.f32()[i] < 0;
          some_capped = some_capped || plain.y.f32()[i] > cap;
        }
        EXPECT_TRUE(some_negative);  // the mask is exercised
        EXPECT_EQ(some_capped, cap < 1);
        for (int64_t i = 0; i < fused.dx.numel(); ++i)
          ASSERT_NEAR(fused.dx.f32()[i], reference.dx.f32()[i], 1e-5f) << "dx at " << i;
        for (int64_t i = 0; i < fused.gw.numel(); ++i)
          ASSERT_NEAR(fused.gw.f32()[i], reference.gw.f32()[i], 1e-4f) << "dw at " << i;
        for (int64_t i = 0; i < fused.gb.numel(); ++i)
          ASSERT_NEAR(fused.gb.f32()[i], reference.gb.f32()[i], 1e-4f) << "db at " << i;
      }
  });
}

TEST(Conv2D, DepthwiseResultsDoNotDependOnTheThreadCount) {
  // Our depthwise kernel sums each channel's weight gradient over the batch
  // in sample order on one thread, so any thread count gives the same bits.
  // (oneDNN's, the default where it is built in, split the batch by
  // threads: they repeat for a given thread count, as RunsRepeat checks.)
  const bool saved_path = cpu_conv_onednn();
  set_cpu_conv_onednn(false);
  Attrs a = attrs({{"filters", int64_t(8)},
                   {"groups", int64_t(8)},
                   {"kernel", Ints{3, 3}},
                   {"padding_mode", std::string("same")}});
  const int saved = num_threads();
  set_num_threads(1);
  Pass one = run_pass(a, Shape{8, 9, 9}, 5, kRelu);
  set_num_threads(2);
  Pass two = run_pass(a, Shape{8, 9, 9}, 5, kRelu);
  set_num_threads(saved);
  set_cpu_conv_onednn(saved_path);
  for (int64_t i = 0; i < one.y.numel(); ++i) ASSERT_EQ(one.y.f32()[i], two.y.f32()[i]);
  for (int64_t i = 0; i < one.dx.numel(); ++i) ASSERT_EQ(one.dx.f32()[i], two.dx.f32()[i]);
  for (int64_t i = 0; i < one.gw.numel(); ++i) ASSERT_EQ(one.gw.f32()[i], two.gw.f32()[i]);
  for (int64_t i = 0; i < one.gb.numel(); ++i) ASSERT_EQ(one.gb.f32()[i], two.gb.f32()[i]);
}

TEST(Conv2D, EachGeometryRunsOnItsKernel) {
  auto kernel = [](const Attrs& a, const Shape& in) {
    return conv_cpu_kernel({in}, conv().with_defaults(a));
  };
  const Attrs grouped = attrs({{"filters", int64_t(4)}, {"groups", int64_t(2)}});
  const Attrs depthwise = attrs({{"filters", int64_t(4)}, {"groups", int64_t(4)}});
  const Attrs multiplier = attrs({{"filters", int64_t(8)}, {"groups", int64_t(4)}});
  const Attrs pointwise = attrs({{"kernel", Ints{1, 1}}});
  on_each_path([&] {
    const bool onednn = cpu_conv_onednn();
    // One group (a grey image's single channel too): oneDNN's kernels
    // where they run, else columns; 1x1 without them is a GEMM in place.
    const ConvKernel dense = onednn ? ConvKernel::OneDnn : ConvKernel::Im2col;
    EXPECT_EQ(kernel(attrs({}), Shape{3, 8, 8}), dense);
    EXPECT_EQ(kernel(attrs({}), Shape{1, 8, 8}), dense);
    EXPECT_EQ(kernel(pointwise, Shape{3, 8, 8}),
              onednn ? ConvKernel::OneDnn : ConvKernel::Pointwise);
    // From 100 output pixels a 1x1 convolution is a GEMM in place on every
    // path: oneDNN's reorders would cost more than its kernel saves.
    EXPECT_EQ(kernel(pointwise, Shape{3, 10, 10}), ConvKernel::Pointwise);
    // Grouped and depthwise convolutions on oneDNN's kernels too; without
    // them grouped ones unfold and depthwise ones have their own kernel.
    EXPECT_EQ(kernel(grouped, Shape{4, 8, 8}), onednn ? ConvKernel::OneDnn : ConvKernel::Im2col);
    EXPECT_EQ(kernel(depthwise, Shape{4, 8, 8}),
              onednn ? ConvKernel::OneDnn : ConvKernel::Depthwise);
    EXPECT_EQ(kernel(multiplier, Shape{4, 8, 8}),
              onednn ? ConvKernel::OneDnn : ConvKernel::Depthwise);
  });
}

// oneDNN's primitives are built per batch size and kept: a layer that
// meets several (the epoch's short last batch, the inference panel's one
// image) computes each right, and again after switching back.
TEST(Conv2D, BatchSizesChangeBetweenCalls) {
  on_each_path([&] {
    Attrs a = conv().with_defaults(attrs({{"filters", int64_t(16)}, {"padding", Ints{1, 1}}}));
    const Shape in{8, 6, 5};
    Shape out = conv().infer({in}, a);
    auto layer = conv().create(a, {in}, out);
    Rng rng(5);
    layer->init(rng);
    const Tensor& w = find_param(*layer, "weight")->value;
    const Tensor& b = find_param(*layer, "bias")->value;
    for (int64_t n : {4, 1, 7, 4}) {
      SCOPED_TRACE(n);
      Tensor x(in.with_batch(n)), y(out.with_batch(n));
      for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = rng.uniform(-1, 1);
      RunContext ctx;
      layer->forward({&x}, y, ctx);
      Tensor ref = naive_conv(x, w, &b, Ints{1, 1}, Ints{1, 1}, 1, 1, 1, 1, 1);
      for (int64_t i = 0; i < y.numel(); ++i) ASSERT_NEAR(y.f32()[i], ref.f32()[i], 1e-5f);
    }
  });
}

TEST(Conv2D, WinogradWhereItApplies) {
  if (!cpu_conv_onednn()) GTEST_SKIP() << "this build has no oneDNN";
  auto wino = [](const Attrs& a, const Shape& in) {
    return conv_onednn_winograd({in}, conv().with_defaults(a));
  };
  const Attrs same3 = attrs({{"filters", int64_t(16)}, {"padding", Ints{1, 1}}});
  if (!wino(same3, Shape{16, 6, 6}))
    GTEST_SKIP() << "oneDNN has no Winograd kernels for this CPU (they need AVX-512)";
  EXPECT_TRUE(wino(attrs({{"filters", int64_t(32)}}), Shape{64, 9, 9}));
  // Channels not in blocks of 16 (a grey image's first layer), other
  // kernels, strides and dilations: the direct kernels.
  EXPECT_FALSE(wino(same3, Shape{1, 6, 6}));
  EXPECT_FALSE(wino(attrs({{"filters", int64_t(24)}}), Shape{16, 6, 6}));
  EXPECT_FALSE(wino(attrs({{"filters", int64_t(16)}, {"kernel", Ints{5, 5}}}), Shape{16, 9, 9}));
  EXPECT_FALSE(wino(attrs({{"filters", int64_t(16)}, {"stride", Ints{2, 2}}}), Shape{16, 9, 9}));
  EXPECT_FALSE(wino(attrs({{"filters", int64_t(16)}, {"dilation", Ints{2, 2}}}), Shape{16, 9, 9}));
}

TEST(Conv2D, ParametersAndPyTorchInit) {
  Attrs a = conv().with_defaults(attrs({{"filters", int64_t(64)}, {"groups", int64_t(2)}}));
  Shape in{32, 14, 14};
  Shape out = conv().infer({in}, a);
  EXPECT_EQ(out, (Shape{64, 12, 12}));
  auto layer = conv().create(a, {in}, out);
  Param* w = find_param(*layer, "weight");
  Param* b = find_param(*layer, "bias");
  ASSERT_TRUE(w && b);
  EXPECT_EQ(w->value.shape(), (Shape{64, 16, 3, 3}));
  EXPECT_EQ(b->value.shape(), (Shape{64}));
  EXPECT_TRUE(w->grad.defined());
  Rng rng(5);
  layer->init(rng);
  const float bound = 1.0f / std::sqrt(16.0f * 9.0f);  // fan_in = C/groups * kh * kw
  float wmax = 0, wsum = 0;
  for (int64_t i = 0; i < w->value.numel(); ++i) {
    float v = w->value.f32()[i];
    EXPECT_LE(std::fabs(v), bound);
    wmax = std::max(wmax, std::fabs(v));
    wsum += v;
  }
  EXPECT_GT(wmax, 0.95f * bound);  // uniform over the whole range, not a narrower one
  EXPECT_LT(std::fabs(wsum / float(w->value.numel())), 0.05f * bound);
  float bmax = 0;
  for (int64_t i = 0; i < b->value.numel(); ++i) {
    EXPECT_LE(std::fabs(b->value.f32()[i]), bound);
    bmax = std::max(bmax, std::fabs(b->value.f32()[i]));
  }
  EXPECT_GT(bmax, 0.5f * bound);

  auto nobias = conv().create(conv().with_defaults(attrs({{"bias", false}})), {Shape{1, 5, 5}},
                              Shape{32, 3, 3});
  EXPECT_EQ(nobias->params().size(), 1u);
  EXPECT_EQ(find_param(*nobias, "bias"), nullptr);
}

TEST(Conv2D, CostCountsParametersAndMacs) {
  Attrs a = conv().with_defaults(attrs({{"filters", int64_t(64)}, {"padding", Ints{1, 1}}}));
  Shape in{32, 14, 14};
  Shape out = conv().infer({in}, a);
  Cost c = conv().cost({in}, out, a);
  EXPECT_EQ(c.params, 64 * 32 * 9 + 64);
  EXPECT_EQ(c.macs, int64_t(64) * 14 * 14 * 32 * 9);
  Attrs g = conv().with_defaults(
      attrs({{"filters", int64_t(8)}, {"groups", int64_t(4)}, {"bias", false}}));
  Shape gout = conv().infer({Shape{8, 5, 5}}, g);
  Cost gc = conv().cost({Shape{8, 5, 5}}, gout, g);
  EXPECT_EQ(gc.params, 8 * 2 * 9);
  EXPECT_EQ(gc.macs, int64_t(8) * 3 * 3 * 2 * 9);
}

std::string shape_error(const Attrs& a, const Shape& in) {
  try {
    conv().infer({in}, conv().with_defaults(a));
  } catch (const ShapeError& e) {
    return e.what();
  }
  return "";
}

TEST(Conv2D, ShapeErrorsSayWhatToChange) {
  std::string m = shape_error({}, Shape{784});
  EXPECT_NE(m.find("expects a 3-D input (channels×height×width) but got 784"), std::string::npos)
      << m;
  EXPECT_NE(m.find("Flatten"), std::string::npos) << m;
  m = shape_error({}, Shape{28, 28});
  EXPECT_NE(m.find("1×28×28"), std::string::npos) << m;

  m = shape_error(attrs({{"groups", int64_t(2)}}), Shape{3, 8, 8});
  EXPECT_NE(m.find("3 channels, which is not divisible by groups = 2"), std::string::npos) << m;
  m = shape_error(attrs({{"groups", int64_t(2)}, {"filters", int64_t(5)}}), Shape{4, 8, 8});
  EXPECT_NE(m.find("filters = 5 is not divisible by groups = 2"), std::string::npos) << m;

  m = shape_error(attrs({{"kernel", Ints{5, 5}}}), Shape{1, 4, 4});
  EXPECT_NE(m.find("5×5 kernel"), std::string::npos) << m;
  EXPECT_NE(m.find("4×4 input"), std::string::npos) << m;
  EXPECT_NE(m.find("output would be empty"), std::string::npos) << m;
  m = shape_error(attrs({{"dilation", Ints{3, 3}}}), Shape{1, 6, 6});
  EXPECT_NE(m.find("dilation 3×3 spans 7×7"), std::string::npos) << m;
  // Padding rescues it.
  EXPECT_EQ(shape_error(attrs({{"kernel", Ints{5, 5}}, {"padding", Ints{1, 1}}}), Shape{1, 4, 4}),
            "");
  EXPECT_EQ(shape_error(attrs({{"kernel", Ints{5, 5}}, {"padding_mode", std::string("same")}}),
                        Shape{1, 4, 4}),
            "");
}

TEST(Conv2D, SameKeepsSizeAtStrideOne) {
  for (int64_t k : {1, 2, 3, 4, 5, 7})
    for (int64_t d : {1, 2}) {
      Attrs a = conv().with_defaults(attrs({{"kernel", Ints{k, k}},
                                            {"dilation", Ints{d, d}},
                                            {"padding_mode", std::string("same")}}));
      EXPECT_EQ(conv().infer({Shape{2, 9, 10}}, a), (Shape{32, 9, 10})) << k << " " << d;
    }
}

TEST(Conv2D, AttributeSchema) {
  const LayerDescriptor& d = conv();
  EXPECT_EQ(d.category, "Convolution");
  EXPECT_EQ(d.num_inputs(Attrs{}), 1);
  const AttrSpec* pm = d.find_attr("padding_mode");
  ASSERT_NE(pm, nullptr);
  EXPECT_EQ(pm->choices, (std::vector<std::string>{"explicit", "same", "valid"}));
  EXPECT_EQ(std::get<std::string>(pm->def), "explicit");
  EXPECT_EQ(std::get<int64_t>(d.find_attr("filters")->def), 32);
  EXPECT_NE(validate_attr(*d.find_attr("filters"), AttrValue(int64_t(0))), "");
  EXPECT_NE(validate_attr(*d.find_attr("kernel"), AttrValue(Ints{3, 65})), "");
  EXPECT_EQ(validate_attr(*d.find_attr("padding"), AttrValue(Ints{0, 64})), "");
  EXPECT_EQ(std::get<bool>(d.find_attr("bias")->def), true);
}

}  // namespace
}  // namespace dc
