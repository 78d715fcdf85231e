// int8 CPU inference (oneDNN): single ops against the integer arithmetic
// worked out by hand in double, whole networks against QuantRunner's
// simulated int8 (the sample CNN trained briefly, a Dense-only network, one
// with an LSTM left in float), batches of 1 and of N, the int8 model file's
// round trip and its refusals.
#include <deepcanvas/data.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/int8_inference.h>
#include <deepcanvas/io.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/project.h>
#include <deepcanvas/quantize.h>
#include <deepcanvas/rng.h>
#include <deepcanvas/trainer.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>

#include "test_util.h"

namespace dc {
namespace {

using test::attrs;
using test::Ints;

#define SKIP_WITHOUT_ONEDNN()                                                            \
  if (!int8_inference_available())                                                       \
  GTEST_SKIP() << "int8 inference needs oneDNN and this build has none (the refusal is " \
                  "checked by Int8.WithoutOneDnnTheRunnerSaysSo)"

// Where oneDNN's int8 kernels halve the weights (no VNNI: avx2 and
// avx512_core, int8_exact_on_this_cpu) the results are not the simulated
// arithmetic, and the comparisons with it cannot hold; the run says so.
#define SKIP_UNLESS_EXACT()                                                                  \
  SKIP_WITHOUT_ONEDNN();                                                                     \
  if (!int8_exact_on_this_cpu())                                                             \
  GTEST_SKIP() << "oneDNN runs int8 here with " << int8_cpu_isa()                            \
               << ", which halves the weights (no VNNI): the results are not the simulated " \
                  "arithmetic, so it is not compared"

TEST(Int8, QuantizeS8IsQuantizeValue) {
  Rng rng(11);
  const float scales[] = {0.0173f, 1.f, 0.5f, 3.0e-3f, 7.77f};
  for (float s : scales) {
    for (int k = -140; k <= 140; ++k) {
      // Exact halves, and the floats either side of them.
      const float h = (float(k) + 0.5f) * s;
      for (float x : {h, std::nextafter(h, 1e30f), std::nextafter(h, -1e30f), float(k) * s})
        ASSERT_EQ(int32_t(quantize_s8_value(x, s)), quantize_value(x, s)) << x << " / " << s;
    }
    for (int i = 0; i < 20000; ++i) {
      const float x = rng.uniform(-300.f, 300.f) * s;
      ASSERT_EQ(int32_t(quantize_s8_value(x, s)), quantize_value(x, s)) << x << " / " << s;
    }
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {inf, -inf, std::nanf(""), 1e30f, -1e30f, 0.f, -0.f})
    EXPECT_EQ(int32_t(quantize_s8_value(x, 0.01f)), quantize_value(x, 0.01f)) << x;
  std::vector<float> v(1000);
  for (float& x : v) x = rng.uniform(-2.f, 2.f);
  std::vector<int8_t> q(v.size());
  quantize_s8(v.data(), q.data(), int64_t(v.size()), 0.01f);
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(int32_t(q[i]), quantize_value(v[i], 0.01f));
}

TEST(Int8, WithoutOneDnnTheRunnerSaysSo) {
  if (int8_inference_available()) {
    EXPECT_NE(int8_cpu_isa(), "none");
    // The note names the ISA exactly where the kernels are not exact.
    EXPECT_EQ(int8_cpu_note().find(int8_cpu_isa()) == std::string::npos, int8_exact_on_this_cpu())
        << int8_cpu_note();
    return;
  }
  QuantizedNetwork q;
  const std::string m = test::error_of([&] { Int8Runner r(q, 1); });
  EXPECT_NE(m.find("int8 inference needs oneDNN"), std::string::npos) << m;
}

Tensor random_batch(const Shape& s, int64_t n, uint64_t seed, float lo = -2.f, float hi = 2.f) {
  Rng rng(seed);
  Tensor x(s.with_batch(n));
  for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = rng.uniform(lo, hi);
  return x;
}

// A network of `g` with seeded weights, calibrated (minmax) on toy data.
struct Calibrated {
  std::unique_ptr<Plan> plan;
  QuantizedNetwork q;
};

Calibrated calibrated(const Graph& g, uint64_t seed, int64_t samples = 48) {
  Calibrated c;
  c.plan = std::make_unique<Plan>(g, 8, Plan::Use::Inference);
  c.plan->init_params(seed);
  QuantNetwork net = fold_batch_norms(c.plan->steps(), c.plan->state());
  Dataset d = test::toy_data(c.plan->input_shape(), samples, 3, seed + 1);
  QuantizeOptions o;
  o.method = CalibrationMethod::MinMax;
  o.batch = 16;
  c.q = calibrate(net, d, calibration_indices(d, samples, 1), o);
  return c;
}

// One quantized Conv2D, computed by hand: the int32 sum of the quantized
// input and weight, times the two scales, plus the bias, in double.
Tensor conv_by_hand(const QuantizedNetwork& q, const Tensor& x) {
  const QuantOp& op = q.ops.at(0);
  const PlanStep& s = q.net.steps[size_t(op.step)];
  const Attrs& a = s.attrs;
  const int64_t N = x.dim(0), C = s.in_shapes[0][0], H = s.in_shapes[0][1], W = s.in_shapes[0][2];
  const int64_t OC = s.out_shape[0], OH = s.out_shape[1], OW = s.out_shape[2];
  const int64_t KH = a.ints("kernel")[0], KW = a.ints("kernel")[1], SH = a.ints("stride")[0],
                SW = a.ints("stride")[1], DH = a.ints("dilation")[0], DW = a.ints("dilation")[1],
                G = a.i("groups");
  const int64_t PT = a.ints("padding")[0], PL = a.ints("padding")[1];
  const int64_t Cg = C / G, OCg = OC / G;
  const Tensor& b = q.net.weights.at(s.name + ".bias");
  Tensor y(s.out_shape.with_batch(N));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oc = 0; oc < OC; ++oc)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          int64_t acc = 0;
          const int64_t g = oc / OCg;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = oh * SH - PT + kh * DH, iw = ow * SW - PL + kw * DW;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                const float xv = x.f32()[((n * C + g * Cg + c) * H + ih) * W + iw];
                acc += int64_t(quantize_value(xv, op.input_scale)) *
                       op.weight.q[size_t(((oc * Cg + c) * KH + kh) * KW + kw)];
              }
          y.f32()[((n * OC + oc) * OH + oh) * OW + ow] =
              float(double(acc) * double(op.input_scale) * double(op.weight.scale[size_t(oc)]) +
                    double(b.f32()[oc]));
        }
  return y;
}

Graph one_conv(int64_t C, int64_t filters, Ints kernel, Ints stride, Ints pad, Ints dil,
               int64_t groups, Ints in_hw) {
  register_builtin_layers();
  Graph g;
  const NodeId in = g.add_node("Input", "in", attrs({{"shape", Ints{C, in_hw[0], in_hw[1]}}}));
  const NodeId conv = g.add_node("Conv2D", "conv",
                                 attrs({{"filters", filters},
                                        {"kernel", kernel},
                                        {"stride", stride},
                                        {"padding", pad},
                                        {"dilation", dil},
                                        {"groups", groups}}));
  g.connect(in, conv);
  return g;
}

TEST(Int8, ConvolutionIsTheIntegerArithmetic) {
  SKIP_UNLESS_EXACT();
  struct Case {
    const char* what;
    Graph g;
  };
  const Case cases[] = {
      {"3x3 padded", one_conv(3, 16, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, {9, 7})},
      {"strided, unpadded, odd sizes", one_conv(5, 8, {3, 2}, {2, 3}, {0, 0}, {1, 1}, 1, {11, 10})},
      {"dilated", one_conv(4, 12, {3, 3}, {1, 1}, {2, 2}, {2, 2}, 1, {8, 8})},
      {"grouped", one_conv(8, 12, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 4, {6, 6})},
      {"depthwise", one_conv(16, 16, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 16, {10, 10})},
      {"pointwise", one_conv(24, 40, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, {5, 5})},
  };
  uint64_t seed = 20;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Calibrated cal = calibrated(c.g, ++seed);
    ASSERT_EQ(cal.q.ops.size(), 1u);
    Int8Runner run(cal.q, 5);
    QuantRunner sim(cal.q.net, 5);
    sim.set_quantized(&cal.q);
    for (int64_t n : {int64_t(1), int64_t(5)}) {
      // Beyond the calibrated range too, so saturation is exercised.
      const Tensor x =
          random_batch(cal.plan->input_shape(), n, seed * 7 + uint64_t(n), -1.3f, 1.3f);
      const Tensor want = conv_by_hand(cal.q, x);
      const Tensor& got = run.forward(x);
      ASSERT_EQ(got.numel(), want.numel());
      const Tensor& simulated = sim.forward(x);
      const Tensor& b = cal.q.net.weights.at("conv.bias");
      const int64_t per = want.numel() / n / b.numel();
      for (int64_t i = 0; i < want.numel(); ++i) {
        const float bias = std::fabs(b.f32()[(i / per) % b.numel()]);
        // s * (acc + b / s): three float roundings of numbers no larger
        // than |y| + |b|.
        ASSERT_NEAR(got.f32()[i], want.f32()[i], 1e-6 * (std::fabs(want.f32()[i]) + bias) + 1e-9)
            << "batch " << n << ", element " << i;
        // The simulation sums float products: K roundings.
        ASSERT_NEAR(simulated.f32()[i], got.f32()[i], 1e-5 * (1 + std::fabs(got.f32()[i])));
      }
    }
    EXPECT_EQ(run.kernels().size(), 1u);
  }
}

// The largest difference and whether every argmax agrees, int8 against the
// simulation, over rows of k outputs.
struct Agreement {
  double max_diff = 0;
  int64_t argmax_differs = 0, close = 0, values = 0;
};
Agreement compare(const Tensor& a, const Tensor& b, int64_t k, double tight) {
  Agreement r;
  for (int64_t n = 0; n < a.numel() / k; ++n) {
    const float* p = a.f32() + n * k;
    const float* q = b.f32() + n * k;
    r.argmax_differs += std::max_element(p, p + k) - p != std::max_element(q, q + k) - q;
    for (int64_t i = 0; i < k; ++i) {
      const double d = std::fabs(double(p[i]) - double(q[i]));
      r.max_diff = std::max(r.max_diff, d);
      r.close += d <= tight * (1 + std::fabs(q[i]));
      ++r.values;
    }
  }
  return r;
}

TEST(Int8, DenseOnlyNetworkMatchesTheSimulation) {
  SKIP_UNLESS_EXACT();
  register_builtin_layers();
  Graph g;
  NodeId prev = g.add_node("Input", "in", attrs({{"shape", Ints{40}}}));
  auto add = [&](const char* type, const char* name, Attrs a = {}) {
    const NodeId id = g.add_node(type, name, std::move(a));
    g.connect(prev, id);
    prev = id;
  };
  add("Dense", "fc1", attrs({{"units", int64_t(32)}}));
  add("ReLU", "relu1");
  add("Dense", "fc2", attrs({{"units", int64_t(24)}}));
  add("ReLU6", "relu2");
  add("Dense", "fc3", attrs({{"units", int64_t(6)}}));
  Calibrated cal = calibrated(g, 3, 64);
  ASSERT_EQ(cal.q.ops.size(), 3u);
  Int8Runner run(cal.q, 16);
  EXPECT_EQ(run.fused_relus(), (std::vector<std::string>{"relu1", "relu2"}));
  QuantRunner sim(cal.q.net, 16);
  sim.set_quantized(&cal.q);
  for (int64_t n : {int64_t(1), int64_t(16), int64_t(3)}) {
    const Tensor x = random_batch(Shape{40}, n, 100 + uint64_t(n), -1.f, 1.f);
    Tensor want = sim.forward(x).clone();
    const Tensor& got = run.forward(x);
    const Agreement a = compare(got, want, 6, 1e-5);
    EXPECT_EQ(a.argmax_differs, 0) << "batch " << n;
    // An input that lands within float rounding of a rounding boundary may
    // quantize one step apart in the two; with 40 and 32 inputs that is
    // rare, and its effect is one input step times one weight.
    EXPECT_GE(a.close, a.values * 95 / 100) << "batch " << n << ", max diff " << a.max_diff;
    EXPECT_LT(a.max_diff, 0.05) << "batch " << n;
  }
  EXPECT_EQ(run.kernels().size(), 3u);
}

TEST(Int8, ALayerLeftInFloatRunsInFloat) {
  SKIP_UNLESS_EXACT();
  register_builtin_layers();
  Graph g;
  const NodeId in = g.add_node("Input", "in", attrs({{"shape", Ints{5, 4}}}));
  const NodeId lstm = g.add_node("LSTM", "lstm1",
                                 attrs({{"hidden_size", int64_t(8)}, {"return_sequences", false}}));
  const NodeId fc = g.add_node("Dense", "fc", attrs({{"units", int64_t(3)}}));
  g.connect(in, lstm);
  g.connect(lstm, fc);
  Calibrated cal = calibrated(g, 4, 32);
  ASSERT_EQ(cal.q.left_in_float, (std::vector<std::string>{"lstm1 (LSTM)"}));
  Int8Runner run(cal.q, 6);
  QuantRunner sim(cal.q.net, 6);
  sim.set_quantized(&cal.q);
  const Tensor x = random_batch(Shape{5, 4}, 6, 8, -1.f, 1.f);
  // The LSTM's output is the same float in both; the Dense's input
  // quantization then agrees and only the products' rounding differs.
  Tensor lstm_sim, lstm_int8;
  Tensor want = sim.forward(x,
                            [&](int step, const Tensor& t) {
                              if (step == 1) lstm_sim = t.clone();
                            })
                    .clone();
  const Tensor& got = run.forward(x, [&](int step, const Tensor& t) {
    if (step == 1) lstm_int8 = t.clone();
  });
  for (int64_t i = 0; i < lstm_sim.numel(); ++i) ASSERT_EQ(lstm_sim.f32()[i], lstm_int8.f32()[i]);
  for (int64_t i = 0; i < got.numel(); ++i)
    EXPECT_NEAR(got.f32()[i], want.f32()[i], 1e-5 * (1 + std::fabs(want.f32()[i])));
}

// The sample CNN (conv-ReLU-pool twice, Dense-ReLU-Dense) trained for a
// few dozen steps on the bundled Fashion-MNIST subset, calibrated on 128
// training images.
struct SampleCnn {
  Project project;
  std::unique_ptr<Plan> plan;
  TrainTest data;
  QuantizedNetwork q;
};

const SampleCnn& sample_cnn() {
  static const std::unique_ptr<SampleCnn> s = [] {
    register_builtin_layers();
    auto r = std::make_unique<SampleCnn>();
    r->project = load_project(std::string(DC_SOURCE_DIR) + "/sample_data/sample_project.dcproj");
    r->data = load_fashion_mnist(std::string(DC_SOURCE_DIR) + "/sample_data/fashion-mnist-subset");
    TrainConfig c = r->project.training;
    c.epochs = 1;
    c.threads = 2;
    c.steps_per_epoch_limit = 40;
    c.device = DeviceSpec{};
    Trainer t(r->project.graph, c, std::make_shared<Dataset>(r->data.train),
              std::make_shared<Dataset>(r->data.test));
    t.start();
    for (;;) {
      auto e = t.events().pop(std::chrono::milliseconds(60000));
      if (!e) break;
      if (e->kind == TrainEvent::Kind::Finished || e->kind == TrainEvent::Kind::Failed ||
          e->kind == TrainEvent::Kind::Cancelled) {
        EXPECT_EQ(e->kind, TrainEvent::Kind::Finished) << e->message;
        break;
      }
    }
    t.wait();
    r->plan = std::make_unique<Plan>(r->project.graph, 64, Plan::Use::Inference);
    r->plan->load_state(t.plan().state(), "trained");
    // The trainer normalises with the training set's statistics; the
    // datasets here use them too.
    for (Dataset* d : {&r->data.train, &r->data.test}) {
      d->mean = t.train_data().mean;
      d->stddev = t.train_data().stddev;
    }
    QuantNetwork net = fold_batch_norms(r->plan->steps(), r->plan->state());
    QuantizeOptions o;
    r->q = calibrate(net, r->data.train, calibration_indices(r->data.train, 128, 1), o);
    return r;
  }();
  return *s;
}

TEST(Int8, SampleCnnMatchesTheSimulationAtBatchOneAndN) {
  SKIP_UNLESS_EXACT();
  const SampleCnn& s = sample_cnn();
  ASSERT_EQ(s.q.ops.size(), 4u);  // conv1, conv2, fc1, fc2
  const Dataset& test = s.data.test;
  const int64_t images = std::min<int64_t>(320, test.size());
  const Shape& in = s.plan->input_shape();
  Tensor x(in.with_batch(images));
  std::vector<int32_t> labels(static_cast<size_t>(images));
  std::vector<int64_t> idx(static_cast<size_t>(images));
  for (int64_t i = 0; i < images; ++i) idx[size_t(i)] = i;
  ASSERT_EQ(test.gather(idx.data(), images, x.f32(), labels.data(), 0), images);
  const int64_t k = s.plan->output_shape().numel();
  QuantRunner sim(s.q.net, 64);
  sim.set_quantized(&s.q);
  Int8Runner run(s.q, 64);
  EXPECT_EQ(run.fused_relus().size(), 3u);
  Tensor want(Shape{k}.with_batch(images)), got(Shape{k}.with_batch(images)),
      got1(Shape{k}.with_batch(images));
  for (int64_t at = 0; at < images; at += 64) {
    const int64_t n = std::min<int64_t>(64, images - at);
    const Tensor xb = x.narrow_batch(at + n).clone();  // rows [0, at + n)
    Tensor part(in.with_batch(n));
    std::memcpy(part.f32(), xb.f32() + at * in.numel(), size_t(n * in.numel()) * sizeof(float));
    std::memcpy(want.f32() + at * k, sim.forward(part).f32(), size_t(n * k) * sizeof(float));
    std::memcpy(got.f32() + at * k, run.forward(part).f32(), size_t(n * k) * sizeof(float));
  }
  for (int64_t i = 0; i < images; ++i) {
    Tensor one(in.with_batch(1));
    std::memcpy(one.f32(), x.f32() + i * in.numel(), size_t(in.numel()) * sizeof(float));
    std::memcpy(got1.f32() + i * k, run.forward(one).f32(), size_t(k) * sizeof(float));
  }
  for (const Tensor* t : {&got, &got1}) {
    const Agreement a = compare(*t, want, k, 1e-5);
    std::printf(
        "int8 against the simulation at batch %s: max |diff| %.3g, %lld of %lld within "
        "1e-5\n",
        t == &got ? "64" : "1", a.max_diff, (long long)a.close, (long long)a.values);
    EXPECT_EQ(a.argmax_differs, 0);
    EXPECT_GE(a.close, a.values * 99 / 100) << "max diff " << a.max_diff;
    EXPECT_LT(a.max_diff, 0.05);
  }
  // Batch 1 and batch 64 run different primitives; the integer sums are the
  // same, so only the float rounding of the scale may differ.
  const Agreement b = compare(got1, got, k, 1e-5);
  EXPECT_EQ(b.argmax_differs, 0);
  EXPECT_GE(b.close, b.values * 99 / 100) << "max diff " << b.max_diff;
  for (const std::string& kern : run.kernels()) EXPECT_FALSE(kern.empty());
}

TEST(Int8, ModelFileRoundTripsAndRefusesWhatDoesNotFit) {
  const SampleCnn& s = sample_cnn();
  test::TmpDir dir;
  const std::string path = (dir.dir / "m.int8.json").string();
  Int8ModelInfo info;
  info.calibration_samples = 128;
  info.checkpoint = "trained.safetensors";
  save_int8_model(path, s.q, info);
  const QuantizedNetwork back = load_int8_model(path, *s.plan);
  ASSERT_EQ(back.ops.size(), s.q.ops.size());
  for (size_t i = 0; i < back.ops.size(); ++i) {
    EXPECT_EQ(back.ops[i].step, s.q.ops[i].step);
    EXPECT_EQ(back.ops[i].input_step, s.q.ops[i].input_step);
    EXPECT_EQ(back.ops[i].input_scale, s.q.ops[i].input_scale);  // bit for bit
    EXPECT_EQ(back.ops[i].weight.q, s.q.ops[i].weight.q);
    EXPECT_EQ(back.ops[i].weight.scale, s.q.ops[i].weight.scale);
  }
  EXPECT_EQ(back.method, s.q.method);
  EXPECT_EQ(int8_model_path_for("out/m.onnx"), "out/m.int8.json");
  if (int8_inference_available()) {
    Int8Runner a(s.q, 4), b(back, 4);
    const Tensor x = random_batch(s.plan->input_shape(), 4, 5);
    Tensor ya = a.forward(x).clone();
    const Tensor& yb = b.forward(x);
    for (int64_t i = 0; i < ya.numel(); ++i) ASSERT_EQ(ya.f32()[i], yb.f32()[i]);
  }

  const std::string text = read_file(path);
  const QuantNetwork net = fold_batch_norms(s.plan->steps(), s.plan->state());
  auto refused = [&](const std::string& t) {
    return test::error_of([&] { parse_int8_model(t, net, "m.int8.json"); });
  };
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) t.replace(at, from.size(), to);
    return t;
  };
  std::string m = refused("{ not json");
  EXPECT_NE(m.find("m.int8.json is not an int8 model file (not JSON"), std::string::npos) << m;
  m = refused("{\"format\": \"deepcanvas-project\"}");
  EXPECT_NE(m.find("is not an int8 model file (no \"format\": \"deepcanvas-int8\")"),
            std::string::npos)
      << m;
  m = refused(replaced("\"version\": 1", "\"version\": 2"));
  EXPECT_NE(m.find("of version 2; this DeepCanvas reads version 1"), std::string::npos) << m;
  m = refused(replaced("\"layer\": \"conv2\"", "\"layer\": \"conv9\""));
  EXPECT_NE(m.find("was written for another network: this one has no layer 'conv9'"),
            std::string::npos)
      << m;
  m = refused(replaced("\"input_scale\": ", "\"input_scale\": -"));
  EXPECT_NE(m.find("must be a positive finite number"), std::string::npos) << m;
  m = refused(replaced("\"ops\": [", "\"ops\": [], \"x\": ["));
  EXPECT_NE(m.find("it has no input scale for Conv2D 'conv1'"), std::string::npos) << m;

  // Other weights for the same network: a checkpoint the scales were not
  // calibrated with.
  Plan other(s.project.graph, 2, Plan::Use::Inference);
  other.init_params(99);
  m = test::error_of([&] { load_int8_model(path, other); });
  EXPECT_NE(m.find("was calibrated with other weights than these (layer 'conv1' differs)"),
            std::string::npos)
      << m;
}

}  // namespace
}  // namespace dc
