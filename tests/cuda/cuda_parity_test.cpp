// Every CUDA op against the engine's CPU layer, forward and backward. Each
// graph is Input -> pre (a layer with weights) -> op, so the gradient the op
// passes to its input shows up in pre's weight gradient and is compared too.
// Skips, with the reason, where no CUDA device or plugin is available.
#include <deepcanvas/device.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/rng.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cuda_test_util.h"

namespace dc {
namespace {

struct Case {
  std::string name;
  Shape input;      // per sample
  std::string pre;  // "Conv2D" (1x1, keeps channels), "Dense", "TimeDistributedDense" or ""
  std::string type;
  Attrs attrs;
  int extra_inputs = 0;  // Add/Concat: more branches from pre
  // A bias feeding a training-mode BatchNorm has an exactly zero gradient
  // (the normalisation removes any constant shift), so both backends return
  // rounding noise for it that no relative tolerance can compare.
  bool pre_bias = true;
  int64_t batch = 6;
  float offset = 0;  // added to the random input
  // A layer after op ("ReLU", "ReLU6"): both plans fold it into a
  // BatchNorm, Add or Conv2D (relu_fusions).
  std::string post = "";
};

using test::A;
using test::pair;

Graph build(const Case& c) {
  register_builtin_layers();
  Graph g;
  NodeId in = g.add_node("Input", "input", A({{"shape", c.input.dims()}}));
  NodeId src = in;
  if (c.pre == "Conv2D") {
    src = g.add_node("Conv2D", "pre",
                     A({{"filters", c.input[0]}, {"kernel", pair(1, 1)}, {"bias", c.pre_bias}}));
    g.connect(in, src);
  } else if (c.pre == "TimeDistributedDense") {  // a sequence's features, step by step
    src =
        g.add_node("TimeDistributedDense", "pre", A({{"units", c.input[1]}, {"bias", c.pre_bias}}));
    g.connect(in, src);
  } else if (c.pre == "Dense") {
    src = g.add_node("Dense", "pre", A({{"units", c.input[0]}, {"bias", c.pre_bias}}));
    g.connect(in, src);
  }
  NodeId op = g.add_node(c.type, "op", c.attrs);
  g.connect(src, op, 0);
  for (int k = 0; k < c.extra_inputs; ++k) {
    NodeId b = g.add_node("Tanh", "branch" + std::to_string(k));
    g.connect(src, b);
    g.connect(b, op, k + 1);
  }
  if (!c.post.empty()) g.connect(op, g.add_node(c.post, "post", A({})));
  return g;
}

using test::rel_err;

Tensor random(const Shape& s, uint64_t seed) {
  return test::uniform_tensor(s, seed, -1.f, 1.f);
}

void check_case(const Case& c, bool training = true) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  SCOPED_TRACE(c.name);
  const int64_t N = c.batch;
  Graph g = build(c);
  Plan host(g, N);
  host.init_params(7);
  DevicePlanOptions o;
  o.max_batch = N;
  auto dev = be->create_plan(g, host, o);
  dev->upload_params();

  Tensor x = random(c.input.with_batch(N), 11);
  for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] += c.offset;
  Tensor dout = random(host.output_shape().with_batch(N), 13);
  Rng rng(5);
  RunContext ctx{training, &rng};
  Tensor cpu_out = host.forward(x, ctx).clone();
  host.zero_grad();
  host.backward(dout, ctx);
  std::vector<std::pair<std::string, Tensor>> cpu_grads, cpu_state;
  for (auto& p : host.params())
    if (p.param->trainable) cpu_grads.emplace_back(p.name, p.param->grad.clone());
  for (auto& [k, t] : host.state()) cpu_state.emplace_back(k, t.clone());

  Tensor gpu_out(host.output_shape().with_batch(N));
  dev->zero_grad();
  dev->forward(x, gpu_out, training, 1);
  dev->backward(dout);
  dev->download_grads();
  dev->download_params();
  EXPECT_LE(rel_err(gpu_out, cpu_out), 1e-4) << "forward output";
  size_t k = 0;
  for (auto& p : host.params())
    if (p.param->trainable) {
      EXPECT_LE(rel_err(p.param->grad, cpu_grads[k].second), 1e-4) << "gradient of " << p.name;
      ++k;
    }
  auto st = host.state();
  for (size_t i = 0; i < st.size(); ++i)
    EXPECT_LE(rel_err(st[i].second, cpu_state[i].second), 1e-4) << "state " << st[i].first;
}

TEST(CudaParity, Conv2DExplicitPadding) {
  check_case({"conv",
              {3, 9, 8},
              "",
              "Conv2D",
              A({{"filters", int64_t(5)}, {"kernel", pair(3, 3)}, {"padding", pair(1, 1)}})});
}
TEST(CudaParity, Conv2DStrideDilationGroupsNoBias) {
  check_case({"conv2",
              {4, 11, 10},
              "Conv2D",
              "Conv2D",
              A({{"filters", int64_t(6)},
                 {"kernel", pair(3, 2)},
                 {"stride", pair(2, 1)},
                 {"dilation", pair(1, 2)},
                 {"groups", int64_t(2)},
                 {"bias", false}})});
}
TEST(CudaParity, Conv2DSame) {
  check_case({"conv same",
              {2, 7, 7},
              "Conv2D",
              "Conv2D",
              A({{"filters", int64_t(3)},
                 {"kernel", pair(5, 5)},
                 {"padding_mode", std::string("same")}})});
}
TEST(CudaParity, Dense) {
  check_case({"dense", {17}, "Dense", "Dense", A({{"units", int64_t(9)}})});
}
TEST(CudaParity, MaxPool) {
  check_case({"maxpool", {3, 8, 9}, "Conv2D", "MaxPool2D", A({})});
}
TEST(CudaParity, MaxPoolOverlappingPadded) {
  check_case({"maxpool3",
              {2, 9, 9},
              "Conv2D",
              "MaxPool2D",
              A({{"kernel", pair(3, 3)}, {"stride", pair(2, 2)}, {"padding", pair(1, 1)}})});
}
// ceil_mode (SqueezeNet's): the last window is clipped at the edge; the
// kernel skips taps outside the input and takes the plan's output size.
TEST(CudaParity, MaxPoolCeilMode) {
  check_case({"maxpool ceil",
              {2, 8, 9},
              "Conv2D",
              "MaxPool2D",
              A({{"kernel", pair(3, 3)}, {"stride", pair(2, 2)}, {"ceil_mode", true}})});
}
TEST(CudaParity, AvgPool) {
  check_case({"avgpool",
              {2, 9, 8},
              "Conv2D",
              "AvgPool2D",
              A({{"kernel", pair(3, 3)}, {"stride", pair(2, 2)}, {"padding", pair(1, 1)}})});
}
TEST(CudaParity, GlobalAvgPool) {
  check_case({"gap", {4, 5, 6}, "Conv2D", "GlobalAvgPool2D", A({})});
}
TEST(CudaParity, BatchNorm2DTraining) {
  check_case({"bn2d", {3, 5, 4}, "Conv2D", "BatchNorm2D", A({}), 0, false});
}
TEST(CudaParity, BatchNorm2DEval) {
  check_case({"bn2d eval", {3, 5, 4}, "Conv2D", "BatchNorm2D", A({}), 0, false}, false);
}
TEST(CudaParity, BatchNorm1D) {
  check_case({"bn1d", {7}, "Dense", "BatchNorm1D", A({}), 0, false});
}
// Sizes where the per-channel sums split over several blocks: 4-wide loads
// (28x28 planes), single loads (7x7), one value per channel and sample
// (BatchNorm1D), and a convolution's bias gradient; training and the
// inference form.
TEST(CudaParity, BatchNormSplitOverBlocks) {
  for (bool training : {true, false}) {
    check_case({"bn2d 28x28", {16, 28, 28}, "Conv2D", "BatchNorm2D", A({}), 0, false, 40},
               training);
    check_case({"bn2d 7x7", {5, 7, 7}, "Conv2D", "BatchNorm2D", A({}), 0, false, 300}, training);
    check_case({"bn1d", {7}, "Dense", "BatchNorm1D", A({}), 0, false, 20000}, training);
  }
  // Values around 1000 with a spread of 1: a variance taken as
  // E[x²] − E[x]² would lose all its digits.
  check_case({"bn2d far from 0", {4, 12, 12}, "", "BatchNorm2D", A({}), 0, false, 64, 1000.f});
  check_case({"conv bias",
              {8, 16, 16},
              "",
              "Conv2D",
              A({{"filters", int64_t(8)}, {"kernel", pair(3, 3)}, {"padding", pair(1, 1)}}),
              0,
              true,
              40});
}
TEST(CudaParity, Activations) {
  for (const char* t : {"ReLU", "ReLU6", "Sigmoid", "Tanh", "GELU"})
    check_case({t, {13}, "Dense", t, A({})});
  check_case({"leaky", {13}, "Dense", "LeakyReLU", A({{"slope", 0.2}})});
}
TEST(CudaParity, Softmax) {
  check_case({"softmax", {11}, "Dense", "Softmax", A({})});
}
TEST(CudaParity, FlattenReshape) {
  check_case({"flatten", {2, 3, 4}, "Conv2D", "Flatten", A({})});
  check_case({"reshape", {12}, "Dense", "Reshape", A({{"shape", std::vector<int64_t>{3, 4}}})});
}
TEST(CudaParity, AddAndConcat) {
  check_case({"add", {2, 4, 5}, "Conv2D", "Add", A({{"inputs", int64_t(3)}}), 2});
  check_case({"concat", {2, 4, 5}, "Conv2D", "Concat", A({{"inputs", int64_t(2)}}), 1});
}
// LayerNorm: features after a Dense (the input gradient reaches its
// weights), without affine, a sequence's steps, rows of 100 (more than a
// warp's lanes, not a multiple of 32), and enough rows (19,200) that the
// weight gradients are summed over many parts.
TEST(CudaParity, LayerNorm) {
  check_case({"ln", {9}, "Dense", "LayerNorm", A({})});
  check_case({"ln plain", {9}, "Dense", "LayerNorm", A({{"affine", false}})});
  check_case({"ln steps", {5, 6}, "", "LayerNorm", A({{"eps", 1e-3}})});
  check_case({"ln wide", {100}, "Dense", "LayerNorm", A({}), 0, true, 7});
  check_case({"ln many rows", {64, 32}, "", "LayerNorm", A({}), 0, true, 300});
}
// MultiHeadAttention (no dropout: its masks come from another generator on
// each side): self-attention, causal without biases over four heads, and
// cross-attention to a second branch; the input gradients reach the
// TimeDistributedDense before it.
TEST(CudaParity, MultiHeadAttention) {
  const char* mha = "MultiHeadAttention";
  check_case({"mha", {5, 8}, "TimeDistributedDense", mha, A({{"heads", int64_t(2)}})});
  check_case({"mha causal",
              {7, 8},
              "TimeDistributedDense",
              mha,
              A({{"heads", int64_t(4)}, {"causal", true}, {"bias", false}})});
  check_case({"mha cross",
              {6, 6},
              "TimeDistributedDense",
              mha,
              A({{"heads", int64_t(3)}, {"mode", std::string("cross")}}),
              1});
  check_case({"mha one head, long", {40, 16}, "", mha, A({{"heads", int64_t(1)}}), 0, true, 3});
}
// The token layers: patches to tokens after a Conv2D, learned and
// sinusoidal positions, a class token, mean and first-token pooling.
TEST(CudaParity, TokenLayers) {
  check_case({"image to tokens", {4, 3, 5}, "Conv2D", "ImageToTokens", A({})});
  check_case({"learned positions", {5, 6}, "TimeDistributedDense", "PositionalEmbedding", A({})});
  check_case({"sinusoids",
              {5, 6},
              "TimeDistributedDense",
              "PositionalEmbedding",
              A({{"kind", std::string("sinusoidal")}})});
  check_case({"class token", {5, 6}, "TimeDistributedDense", "ClassToken", A({})});
  check_case({"mean pooling", {5, 6}, "TimeDistributedDense", "TokenPooling", A({})});
  check_case({"first token",
              {5, 6},
              "TimeDistributedDense",
              "TokenPooling",
              A({{"mode", std::string("first")}})});
}
// A ReLU folded into the BatchNorm or Add before it: the clamp in forward,
// the mask in backward (rebuilt from x for BatchNorm, in both its training
// and its inference form; from the clamped output for Add), 4-wide and
// single loads, and an Add of three inputs (one two-destination pass and a
// one-destination pass).
TEST(CudaParity, ReluFoldedIntoBatchNormAndAdd) {
  for (bool training : {true, false}) {
    Case bn{"bn2d+relu", {3, 5, 4}, "Conv2D", "BatchNorm2D", A({}), 0, false};
    bn.post = "ReLU";
    check_case(bn, training);
    Case wide{"bn2d 28x28+relu", {16, 28, 28}, "Conv2D", "BatchNorm2D", A({}), 0, false, 40};
    wide.post = "ReLU";
    check_case(wide, training);
    Case odd{"bn2d 7x7+relu6", {5, 7, 7}, "Conv2D", "BatchNorm2D", A({}), 0, false, 30};
    odd.post = "ReLU6";
    check_case(odd, training);
    Case one{"bn1d+relu", {7}, "Dense", "BatchNorm1D", A({}), 0, false, 50};
    one.post = "ReLU";
    check_case(one, training);
  }
  Case add3{"add3+relu", {2, 4, 5}, "Conv2D", "Add", A({{"inputs", int64_t(3)}}), 2};
  add3.post = "ReLU";
  check_case(add3);
  Case add2{"add2+relu6", {4, 8, 8}, "Conv2D", "Add", A({{"inputs", int64_t(2)}}), 1};
  add2.post = "ReLU6";
  add2.offset = 4.f;  // some sums above 6, where ReLU6 stops the gradient
  check_case(add2);
}
// A ReLU folded into the Conv2D before it (the clamp in the bias pass or
// the depthwise kernel, the mask in place on the convolution's own
// gradient): cuDNN's float32 path, a 1×1 one, and the depthwise kernels,
// with inputs shifted so that some outputs pass ReLU6's cap of 6.
TEST(CudaParity, ReluFoldedIntoConv2D) {
  Case conv{"conv3x3+relu6",
            {4, 9, 8},
            "Conv2D",
            "Conv2D",
            A({{"filters", int64_t(6)}, {"kernel", pair(3, 3)}, {"padding", pair(1, 1)}})};
  conv.post = "ReLU6";
  conv.offset = 2.f;
  check_case(conv);
  Case pw{"conv1x1+relu",
          {8, 9, 10},
          "Conv2D",
          "Conv2D",
          A({{"filters", int64_t(16)}, {"kernel", pair(1, 1)}})};
  pw.post = "ReLU";
  check_case(pw);
  Case dw{"depthwise+relu6",
          {6, 10, 9},
          "Conv2D",
          "Conv2D",
          A({{"filters", int64_t(6)},
             {"kernel", pair(3, 3)},
             {"padding", pair(1, 1)},
             {"groups", int64_t(6)}})};
  dw.post = "ReLU6";
  dw.offset = 3.f;
  check_case(dw);
}
TEST(CudaParity, DropoutIsIdentityInEvaluation) {
  check_case({"dropout eval", {10}, "Dense", "Dropout", A({{"rate", 0.3}})}, false);
}

// The mobile CNNs' activations, over inputs that reach past ±3 (where
// HardSwish and HardSigmoid bend).
TEST(CudaParity, MobileActivations) {
  for (const char* t : {"SiLU", "HardSwish", "HardSigmoid"}) {
    check_case({t, {13}, "Dense", t, A({})});
    // Inputs in [2, 4] into 13-wide dot products: outputs well past ±3.
    Case wide{std::string(t) + " wide", {13}, "Dense", t, A({})};
    wide.offset = 3.f;
    check_case(wide);
  }
}
TEST(CudaParity, ChannelShuffleAndSlice) {
  check_case({"shuffle", {6, 3, 4}, "Conv2D", "ChannelShuffle", A({{"groups", int64_t(3)}})});
  check_case({"shuffle 2", {8, 2, 2}, "Conv2D", "ChannelShuffle", A({{"groups", int64_t(2)}})});
  check_case({"slice",
              {6, 3, 4},
              "Conv2D",
              "ChannelSlice",
              A({{"start", int64_t(1)}, {"count", int64_t(4)}})});
}
// Squeeze-and-excitation: the values from a 1×1 convolution, the gate from
// them through GlobalAvgPool2D → Dense → Sigmoid, so both gradients reach
// the convolution's weights; a gate of [C] and of [C, 1, 1] (a Reshape).
TEST(CudaParity, ChannelScaleSqueezeExcitation) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  for (bool reshaped : {false, true}) {
    SCOPED_TRACE(reshaped ? "gate C×1×1" : "gate C");
    register_builtin_layers();
    Graph g;
    const int64_t C = 6, N = 5;
    NodeId in = g.add_node("Input", "input", A({{"shape", std::vector<int64_t>{C, 7, 9}}}));
    NodeId conv = g.add_node("Conv2D", "pre", A({{"filters", C}, {"kernel", pair(1, 1)}}));
    NodeId pool = g.add_node("GlobalAvgPool2D", "pool", A({}));
    NodeId fc = g.add_node("Dense", "fc", A({{"units", C}}));
    NodeId sig = g.add_node("Sigmoid", "sig", A({}));
    NodeId op = g.add_node("ChannelScale", "op", A({}));
    g.connect(in, conv);
    g.connect(conv, pool);
    g.connect(pool, fc);
    g.connect(fc, sig);
    g.connect(conv, op, 0);
    if (reshaped) {
      NodeId r = g.add_node("Reshape", "gate", A({{"shape", std::vector<int64_t>{C, 1, 1}}}));
      g.connect(sig, r);
      g.connect(r, op, 1);
    } else {
      g.connect(sig, op, 1);
    }
    Plan host(g, N);
    host.init_params(7);
    DevicePlanOptions o;
    o.max_batch = N;
    auto dev = be->create_plan(g, host, o);
    dev->upload_params();
    Tensor x = random(Shape{N, C, 7, 9}, 11);
    Tensor dout = random(host.output_shape().with_batch(N), 13);
    Rng rng(5);
    RunContext ctx{true, &rng};
    Tensor cpu_out = host.forward(x, ctx).clone();
    host.zero_grad();
    host.backward(dout, ctx);
    std::vector<Tensor> cpu_grads;
    for (auto& p : host.params())
      if (p.param->trainable) cpu_grads.push_back(p.param->grad.clone());
    Tensor gpu_out(host.output_shape().with_batch(N));
    dev->zero_grad();
    dev->forward(x, gpu_out, true, 1);
    dev->backward(dout);
    dev->download_grads();
    EXPECT_LE(rel_err(gpu_out, cpu_out), 1e-4) << "forward output";
    size_t k = 0;
    for (auto& p : host.params())
      if (p.param->trainable) {
        EXPECT_LE(rel_err(p.param->grad, cpu_grads[k++]), 1e-4) << "gradient of " << p.name;
      }
  }
}

}  // namespace
}  // namespace dc
