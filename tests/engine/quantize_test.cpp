// Post-training quantization without ONNX: QuantizeLinear's arithmetic by
// hand values, BatchNorm folding against the unfolded plan, the calibration
// methods on known distributions, the simulated int8 forward against a
// hand computation, and the refusals (one class, NaN).
#include <deepcanvas/errors.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/project.h>
#include <deepcanvas/quantize.h>
#include <deepcanvas/rng.h>
#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"

namespace dc {
namespace {

using test::attrs;
using test::Ints;

TEST(Quantize, RoundsHalfToEvenAndSaturates) {
  EXPECT_EQ(quantize_value(0.5f, 1.f), 0);
  EXPECT_EQ(quantize_value(1.5f, 1.f), 2);
  EXPECT_EQ(quantize_value(2.5f, 1.f), 2);
  EXPECT_EQ(quantize_value(-2.5f, 1.f), -2);
  EXPECT_EQ(quantize_value(-3.5f, 1.f), -4);
  EXPECT_EQ(quantize_value(0.74f, 0.5f), 1);  // 1.48
  EXPECT_EQ(quantize_value(0.75f, 0.5f), 2);  // 1.5: even
  EXPECT_EQ(quantize_value(1.25f, 0.5f), 2);  // 2.5: even
  EXPECT_EQ(quantize_value(200.f, 1.f), 127);
  EXPECT_EQ(quantize_value(-200.f, 1.f), -128);
  EXPECT_EQ(quantize_value(-200.f, 1.f, 0, -127, 127), -127);
  EXPECT_EQ(quantize_value(3.f, 1.f, 126), 127);  // zero point added before saturation
  EXPECT_EQ(quantize_value(NAN, 1.f), 0);
  EXPECT_FLOAT_EQ(dequantize_value(-3, 0.25f), -0.75f);
  float x[4] = {0.3f, -0.3f, 30.f, -30.f};
  fake_quantize(x, 4, 0.2f);  // 1.5 -> 2, -1.5 -> -2, saturated to 127 / -128
  EXPECT_FLOAT_EQ(x[0], 0.4f);
  EXPECT_FLOAT_EQ(x[1], -0.4f);
  EXPECT_FLOAT_EQ(x[2], 127 * 0.2f);
  EXPECT_FLOAT_EQ(x[3], -128 * 0.2f);
  EXPECT_FLOAT_EQ(symmetric_scale(127.f), 1.f);
  EXPECT_GT(symmetric_scale(0.f), 0.f);
}

TEST(Quantize, WeightsPerOutputChannel) {
  Tensor w = Tensor::from(Shape{2, 3}, {1.f, -0.5f, 0.25f, 0.01f, 0.02f, -0.04f});
  ChannelQuant c = quantize_per_channel(w);
  ASSERT_EQ(c.scale.size(), 2u);
  EXPECT_FLOAT_EQ(c.scale[0], 1.f / 127);
  EXPECT_FLOAT_EQ(c.scale[1], 0.04f / 127);
  EXPECT_EQ(c.q[0], 127);
  EXPECT_EQ(c.q[1], -64);  // -63.5 rounds to even
  EXPECT_EQ(c.q[2], 32);   // 31.75
  EXPECT_EQ(c.q[3], 32);   // 31.75
  EXPECT_EQ(c.q[5], -127);
}

TEST(Quantize, CalibrationMethodsOnKnownDistributions) {
  Rng rng(3);
  // Uniform on [-1, 1]: every method keeps (nearly) the whole range.
  std::vector<float> u(200000);
  for (float& v : u) v = rng.uniform(-1.f, 1.f);
  ActivationStats su;
  su.add_range(u.data(), int64_t(u.size()));
  su.add_histogram(u.data(), int64_t(u.size()));
  EXPECT_NEAR(calibrated_amax(su, CalibrationMethod::MinMax), 1.0, 1e-4);
  EXPECT_NEAR(calibrated_amax(su, CalibrationMethod::Percentile, 99.0), 0.99, 2e-3);
  EXPECT_GT(calibrated_amax(su, CalibrationMethod::Entropy), 0.9);
  // A unit Gaussian with a few huge outliers: minmax takes the outlier,
  // the percentile and the entropy threshold stay near the bulk.
  std::vector<float> g(200000);
  for (size_t i = 0; i < g.size(); i += 2) {
    const float r = std::sqrt(-2.f * std::log(std::max(rng.uniform(0.f, 1.f), 1e-12f)));
    const float t = rng.uniform(0.f, 6.2831853f);
    g[i] = r * std::cos(t);
    g[i + 1] = r * std::sin(t);
  }
  g[7] = 100.f;
  g[8] = -80.f;
  ActivationStats sg;
  sg.add_range(g.data(), int64_t(g.size()));
  sg.add_histogram(g.data(), int64_t(g.size()));
  EXPECT_FLOAT_EQ(float(calibrated_amax(sg, CalibrationMethod::MinMax)), 100.f);
  const double p = calibrated_amax(sg, CalibrationMethod::Percentile, 99.9);
  EXPECT_GT(p, 3.0);  // |x| of a unit Gaussian: 99.9 % lie below 3.29
  EXPECT_LT(p, 3.6);
  const double e = calibrated_amax(sg, CalibrationMethod::Entropy);
  EXPECT_GT(e, 2.0);
  EXPECT_LT(e, 20.0);
  EXPECT_EQ(parse_calibration("entropy"), CalibrationMethod::Entropy);
  EXPECT_FALSE(parse_calibration("kl").has_value());
}

// in -> conv1 -> bn1 -> relu -> flatten -> fc -> bn2 (the output), with
// BatchNorm statistics far from the identity.
Graph bn_net(bool conv_bias) {
  register_builtin_layers();
  Graph g;
  NodeId prev = g.add_node("Input", "in", attrs({{"shape", Ints{2, 5, 5}}}));
  auto add = [&](const char* type, const char* name, Attrs a = {}) {
    NodeId id = g.add_node(type, name, std::move(a));
    g.connect(prev, id);
    prev = id;
  };
  add("Conv2D", "conv1",
      attrs({{"filters", int64_t(3)}, {"kernel", Ints{3, 3}}, {"bias", conv_bias}}));
  add("BatchNorm2D", "bn1");
  add("ReLU", "relu");
  add("Flatten", "flatten");
  add("Dense", "fc", attrs({{"units", int64_t(4)}}));
  add("BatchNorm1D", "bn2");
  return g;
}

void randomise_bn(Plan& plan, uint64_t seed) {
  Rng rng(seed);
  std::vector<std::string> bns;
  for (const PlanStep& s : plan.steps())
    if (s.type.rfind("BatchNorm", 0) == 0) bns.push_back(s.name + ".");
  for (NamedParam& p : plan.params()) {
    bool bn = false;
    for (const std::string& b : bns) bn = bn || p.name.rfind(b, 0) == 0;
    if (!bn) continue;
    float* v = p.param->value.f32();
    for (int64_t i = 0; i < p.param->value.numel(); ++i)
      v[i] = p.param->name == "running_var" ? rng.uniform(0.2f, 3.f) : rng.uniform(-1.5f, 1.5f);
  }
}

Tensor random_batch(const Shape& s, int64_t n, uint64_t seed) {
  Rng rng(seed);
  Tensor x(s.with_batch(n));
  for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = rng.uniform(-2.f, 2.f);
  return x;
}

TEST(Quantize, BatchNormFoldingKeepsTheOutputs) {
  for (bool bias : {false, true}) {
    Graph g = bn_net(bias);
    Plan plan(g, 8, Plan::Use::Inference);
    plan.init_params(5);
    randomise_bn(plan, 6);
    QuantNetwork net = fold_batch_norms(plan.steps(), plan.state());
    ASSERT_EQ(net.folded.size(), 2u);
    EXPECT_EQ(net.folded[0], "bn1 into conv1");
    EXPECT_EQ(net.steps.size(), plan.steps().size() - 2);
    for (const PlanStep& s : net.steps) EXPECT_NE(s.type.rfind("BatchNorm", 0), 0u) << s.name;
    EXPECT_TRUE(net.weights.count("conv1.bias"));
    EXPECT_FALSE(net.weights.count("bn1.running_mean"));
    Tensor x = random_batch(plan.input_shape(), 8, 7);
    RunContext ctx{false, nullptr};
    const Tensor& want = plan.forward(x, ctx);
    QuantRunner run(net, 8);
    const Tensor& got = run.forward(x);
    ASSERT_EQ(got.numel(), want.numel());
    for (int64_t i = 0; i < got.numel(); ++i)
      EXPECT_NEAR(got.f32()[i], want.f32()[i], 1e-5 * std::max(1.f, std::fabs(want.f32()[i])));
  }
}

TEST(Quantize, FoldingKeepsTheVggAndResNetTemplates) {
  for (const char* name : {"vgg_small", "resnet_small"}) {
    SCOPED_TRACE(name);
    Project p =
        load_project(std::string(DC_SOURCE_DIR) + "/resources/templates/" + name + ".dcproj");
    Plan plan(p.graph, 2, Plan::Use::Inference);
    plan.init_params(3);
    randomise_bn(plan, 4);
    QuantNetwork net = fold_batch_norms(plan.steps(), plan.state());
    int bns = 0;
    for (const PlanStep& s : plan.steps()) bns += s.type.rfind("BatchNorm", 0) == 0;
    EXPECT_GT(bns, 0);
    EXPECT_EQ(int(net.folded.size()), bns);
    Tensor x = random_batch(plan.input_shape(), 2, 8);
    RunContext ctx{false, nullptr};
    const Tensor& want = plan.forward(x, ctx);
    QuantRunner run(net, 2);
    const Tensor& got = run.forward(x);
    for (int64_t i = 0; i < got.numel(); ++i)
      EXPECT_NEAR(got.f32()[i], want.f32()[i], 1e-5 * std::max(1.f, std::fabs(want.f32()[i])));
  }
}

TEST(Quantize, BatchNormIsNotFoldedWhenTheConvolutionFeedsAnotherLayer) {
  register_builtin_layers();
  Graph g;
  const NodeId in = g.add_node("Input", "in", attrs({{"shape", Ints{4}}}));
  const NodeId fc = g.add_node("Dense", "fc", attrs({{"units", int64_t(4)}}));
  const NodeId bn = g.add_node("BatchNorm1D", "bn");
  const NodeId add = g.add_node("Add", "add");
  g.connect(in, fc);
  g.connect(fc, bn);
  g.connect(bn, add, 0);
  g.connect(fc, add, 1);
  Plan plan(g, 2, Plan::Use::Inference);
  plan.init_params(1);
  QuantNetwork net = fold_batch_norms(plan.steps(), plan.state());
  EXPECT_TRUE(net.folded.empty());
  EXPECT_EQ(net.steps.size(), plan.steps().size());
}

TEST(Quantize, SimulationIsTheQdqArithmetic) {
  // A single Dense layer: the simulated output is the float product of the
  // fake-quantized input and the per-channel dequantized weight.
  register_builtin_layers();
  Graph g;
  const NodeId in = g.add_node("Input", "in", attrs({{"shape", Ints{6}}}));
  const NodeId fc = g.add_node("Dense", "fc", attrs({{"units", int64_t(3)}}));
  g.connect(in, fc);
  Plan plan(g, 4, Plan::Use::Inference);
  plan.init_params(2);
  QuantNetwork net = fold_batch_norms(plan.steps(), plan.state());
  Dataset d = test::toy_data(Shape{6}, 40, 3, 4);
  QuantizeOptions o;
  o.method = CalibrationMethod::MinMax;
  QuantizedNetwork q = calibrate(net, d, calibration_indices(d, 40, 1), o);
  ASSERT_EQ(q.ops.size(), 1u);
  EXPECT_TRUE(q.left_in_float.empty());
  float amax = 0;
  for (float v : d.values) amax = std::max(amax, std::fabs(v));
  EXPECT_FLOAT_EQ(q.ops[0].input_scale, amax / 127);
  QuantRunner run(q.net, 4);
  run.set_quantized(&q);
  Tensor x = random_batch(Shape{6}, 4, 9);
  const Tensor& y = run.forward(x);
  const Tensor& w = q.net.weights.at("fc.weight");
  const Tensor& b = q.net.weights.at("fc.bias");
  for (int64_t n = 0; n < 4; ++n)
    for (int64_t u = 0; u < 3; ++u) {
      double acc = b.f32()[u];
      for (int64_t f = 0; f < 6; ++f) {
        const float xq = dequantize_value(quantize_value(x.f32()[n * 6 + f], q.ops[0].input_scale),
                                          q.ops[0].input_scale);
        const float wq = dequantize_value(q.ops[0].weight.q[size_t(u * 6 + f)],
                                          q.ops[0].weight.scale[size_t(u)]);
        acc += double(xq) * double(wq);
        EXPECT_NEAR(wq, w.f32()[u * 6 + f], q.ops[0].weight.scale[size_t(u)] / 2 + 1e-7);
      }
      EXPECT_NEAR(y.f32()[n * 3 + u], acc, 1e-5);
    }
  // The float weights come back with set_quantized(nullptr).
  run.set_quantized(nullptr);
  RunContext ctx{false, nullptr};
  const Tensor& want = plan.forward(x, ctx);
  const Tensor& got = run.forward(x);
  for (int64_t i = 0; i < got.numel(); ++i) EXPECT_FLOAT_EQ(got.f32()[i], want.f32()[i]);
  const QuantAccuracy acc = evaluate_quantized(q, d, {}, 8);
  EXPECT_EQ(acc.samples, 40);
  EXPECT_GE(acc.agreement, 0.8);
}

TEST(Quantize, LayersWithoutAnInt8FormAreNamed) {
  register_builtin_layers();
  Graph g;
  const NodeId in = g.add_node("Input", "in", attrs({{"shape", Ints{5, 4}}}));
  const NodeId lstm = g.add_node("LSTM", "lstm1",
                                 attrs({{"hidden_size", int64_t(3)}, {"return_sequences", false}}));
  const NodeId fc = g.add_node("Dense", "fc", attrs({{"units", int64_t(2)}}));
  g.connect(in, lstm);
  g.connect(lstm, fc);
  Plan plan(g, 4, Plan::Use::Inference);
  plan.init_params(3);
  QuantNetwork net = fold_batch_norms(plan.steps(), plan.state());
  Dataset d = test::toy_data(Shape{5, 4}, 16, 2, 5);
  QuantizedNetwork q = calibrate(net, d, calibration_indices(d, 16, 1), QuantizeOptions{});
  ASSERT_EQ(q.left_in_float.size(), 1u);
  EXPECT_EQ(q.left_in_float[0], "lstm1 (LSTM)");
  ASSERT_EQ(q.ops.size(), 1u);
  EXPECT_EQ(q.net.steps[size_t(q.ops[0].step)].name, "fc");
}

TEST(Quantize, RefusesOneClassAndNaNActivations) {
  Dataset one = test::toy_data(Shape{6}, 30, 1, 4);
  one.num_classes = 3;
  one.class_names = {"cat", "dog", "bird"};
  const std::string m = test::error_of([&] { calibration_indices(one, 20, 1); });
  EXPECT_NE(m.find("all of class 'cat', one of 3 classes"), std::string::npos) << m;

  Graph g = bn_net(true);
  Plan plan(g, 4, Plan::Use::Inference);
  plan.init_params(5);
  for (NamedParam& p : plan.params())
    if (p.name == "fc.weight") p.param->value.f32()[3] = NAN;
  QuantNetwork net = fold_batch_norms(plan.steps(), plan.state());
  Dataset d = test::toy_data(Shape{2, 5, 5}, 8, 2, 4);
  const std::string n =
      test::error_of([&] { calibrate(net, d, calibration_indices(d, 8, 1), QuantizeOptions{}); });
  // bn2 is folded into fc: the Dense is where the NaN appears.
  EXPECT_NE(n.find("Dense 'fc' produced NaN or infinite values"), std::string::npos) << n;
  const GateAdvice advice = quantization_gate_advice(CalibrationMethod::Percentile, 256);
  EXPECT_EQ(advice.other_methods, (std::vector<std::string>{"entropy", "minmax"}));
  EXPECT_EQ(advice.more_samples, 512);
  EXPECT_EQ(quantization_gate_advice(CalibrationMethod::Entropy, 1000).more_samples, 2000);
}

}  // namespace
}  // namespace dc
