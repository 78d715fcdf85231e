// Losses, optimizers, Dropout and a whole training run on CUDA against the
// CPU. Skips, with the reason, where no CUDA device or plugin is available.
#include <deepcanvas/device.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/loss.h>
#include <deepcanvas/optim.h>
#include <deepcanvas/project.h>
#include <deepcanvas/rng.h>
#include <deepcanvas/trainer.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "cuda_test_util.h"

namespace dc {
namespace {

using test::A;

Graph dense_graph(int64_t in, int64_t out) {
  register_builtin_layers();
  Graph g;
  NodeId i = g.add_node("Input", "input", A({{"shape", std::vector<int64_t>{in}}}));
  // No bias before the BatchNorm: its gradient is exactly zero, so
  // optimizer states built from it would compare rounding noise.
  NodeId h = g.add_node("Dense", "hidden", A({{"units", int64_t(8)}, {"bias", false}}));
  NodeId b = g.add_node("BatchNorm1D", "bn");
  NodeId r = g.add_node("ReLU", "relu");
  NodeId d = g.add_node("Dense", "out", A({{"units", out}}));
  g.connect(i, h);
  g.connect(h, b);
  g.connect(b, r);
  g.connect(r, d);
  return g;
}

Tensor random(const Shape& s, uint64_t seed) {
  return test::uniform_tensor(s, seed, -2.f, 2.f);
}

using test::rel_err;

void check_loss(const std::string& name, float smoothing, int64_t C, bool values) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  SCOPED_TRACE(name);
  const int64_t N = 9;
  Graph g = dense_graph(5, C);
  Plan host(g, N);
  host.init_params(3);
  DevicePlanOptions o;
  o.max_batch = N;
  o.loss = *enum_from_name<LossType>(name);
  o.label_smoothing = smoothing;
  auto dev = be->create_plan(g, host, o);
  dev->upload_params();
  Tensor x = random(Shape{N, 5}, 1);
  std::vector<int32_t> labels(N);
  for (int64_t i = 0; i < N; ++i) labels[i] = int32_t((i * 7) % std::max<int64_t>(C, 2));
  Tensor target = random(Shape{N, C}, 2);
  RunContext ctx{false, nullptr};
  Tensor out = host.forward(x, ctx).clone();
  Tensor cpu_d(out.shape()), gpu_d(out.shape()), gpu_out(out.shape());
  auto loss = make_loss(*enum_from_name<LossType>(name), smoothing);
  float cl = loss->compute(out, Targets{labels.data(), values ? &target : nullptr}, cpu_d);
  dev->forward(x, gpu_out, false, 0);
  float gl = dev->loss(labels.data(), values ? &target : nullptr, &gpu_d);
  EXPECT_NEAR(gl, cl, 1e-4 * std::max(1.0f, std::fabs(cl)));
  EXPECT_LE(rel_err(gpu_d, cpu_d), 1e-4);
}

TEST(CudaLoss, SoftmaxCrossEntropy) {
  check_loss("softmax_cross_entropy", 0.0f, 10, false);
  check_loss("softmax_cross_entropy", 0.1f, 10, false);
  check_loss("softmax_cross_entropy", 0.0f, 40, false);
}
TEST(CudaLoss, BinaryCrossEntropyAndMse) {
  check_loss("binary_cross_entropy", 0.0f, 4, false);
  check_loss("binary_cross_entropy", 0.0f, 1, false);
  check_loss("mse", 0.0f, 3, true);
  check_loss("mse", 0.0f, 3, false);
}

void check_optimizer(OptimizerConfig oc) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  SCOPED_TRACE(oc.type);
  const int64_t N = 8;
  Graph g = dense_graph(6, 3);
  Plan host(g, N);
  host.init_params(9);
  DevicePlanOptions o;
  o.max_batch = N;
  o.optimizer = oc;
  auto dev = be->create_plan(g, host, o);
  dev->upload_params();
  auto opt = make_optimizer(oc);
  std::vector<int32_t> labels(N);
  for (int64_t i = 0; i < N; ++i) labels[i] = int32_t(i % 3);
  auto loss = make_loss(LossType::SoftmaxCrossEntropy);
  for (int s = 0; s < 3; ++s) {
    Tensor x = random(Shape{N, 6}, 100 + s);
    const Tensor& out = test::cpu_step(host, x, labels.data(), *loss, *opt, 0.05);

    Tensor gout(out.shape()), gd(out.shape());
    dev->zero_grad();
    dev->forward(x, gout, true, 0);
    dev->loss(labels.data(), nullptr, &gd);
    dev->backward(gd);
    dev->step(0.05);
  }
  std::vector<Tensor> cpu;
  for (auto& [k, t] : host.state()) cpu.push_back(t.clone());
  dev->download_params();
  auto st = host.state();
  for (size_t i = 0; i < st.size(); ++i)
    EXPECT_LE(rel_err(st[i].second, cpu[i]), 1e-4) << st[i].first;
  test::expect_same_optimizer_state(*opt, *dev);
}

TEST(CudaOptimizer, SgdMomentumNesterovWeightDecay) {
  OptimizerConfig c;
  c.type = OptimizerType::Sgd;
  c.momentum = 0.9;
  c.nesterov = true;
  c.weight_decay = 0.01;
  check_optimizer(c);
}
TEST(CudaOptimizer, Adam) {
  OptimizerConfig c;
  c.type = OptimizerType::Adam;
  c.weight_decay = 0.01;
  check_optimizer(c);
}
TEST(CudaOptimizer, AdamW) {
  OptimizerConfig c;
  c.type = OptimizerType::AdamW;
  c.weight_decay = 0.05;
  check_optimizer(c);
}

TEST(CudaDropout, DropsAboutRateAndScalesSurvivors) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  register_builtin_layers();
  Graph g;
  NodeId i = g.add_node("Input", "input", A({{"shape", std::vector<int64_t>{4096}}}));
  NodeId d = g.add_node("Dropout", "drop", A({{"rate", 0.25}}));
  g.connect(i, d);
  Plan host(g, 4);
  DevicePlanOptions o;
  o.max_batch = 4;
  auto dev = be->create_plan(g, host, o);
  Tensor x(Shape{4, 4096});
  x.fill(1.f);
  Tensor y(Shape{4, 4096});
  dev->forward(x, y, true, 77);
  int64_t zeros = 0;
  for (int64_t k = 0; k < y.numel(); ++k) {
    if (y.f32()[k] == 0.f)
      ++zeros;
    else
      EXPECT_NEAR(y.f32()[k], 1.f / 0.75f, 1e-6);
  }
  double frac = double(zeros) / double(y.numel());
  EXPECT_GT(frac, 0.22);
  EXPECT_LT(frac, 0.28);
  Tensor y2(Shape{4, 4096});
  dev->forward(x, y2, true, 78);
  EXPECT_NE(0, std::memcmp(y.f32(), y2.f32(), y.bytes())) << "masks must change with the step";
}

TEST(CudaDevice, ListsTheGpu) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  auto gpus = be->devices();
  ASSERT_FALSE(gpus.empty());
  EXPECT_FALSE(gpus[0].name.empty());
  EXPECT_GT(gpus[0].multiprocessors, 0);
  EXPECT_GT(gpus[0].total_bytes, 0);
  EXPECT_GE(gpus[0].cc_major, 5);
}

TEST(CudaDevice, UnknownIndexIsAClearError) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  try {
    require_device(parse_device("cuda:99"));
    FAIL() << "cuda:99 was accepted";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
}

TEST(CudaDevice, OutOfMemoryNamesTheBatchSize) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  Graph g = dense_graph(1 << 16, 10);
  Plan host(g, 1);
  DevicePlanOptions o;
  o.max_batch = int64_t(1) << 24;  // 2^24 * 65536 floats: far beyond any GPU
  try {
    be->create_plan(g, host, o);
    FAIL() << "an impossible batch was accepted";
  } catch (const DeviceError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("out of GPU memory"), std::string::npos) << m;
    EXPECT_NE(m.find(std::to_string(o.max_batch)), std::string::npos) << m;
    EXPECT_NE(m.find("free"), std::string::npos) << m;
  }
}

// The bundled Fashion-MNIST subset, the sample project, two epochs: the CUDA
// run must reach the CPU run's test accuracy (within run-to-run noise).
TEST(CudaTraining, ReachesTheCpuAccuracyOnTheSampleSubset) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  register_builtin_layers();
  Project p = load_project(std::string(DC_SOURCE_DIR) + "/sample_data/sample_project.dcproj");
  double cpu = test::subset_accuracy(p, "cpu");
  double gpu = test::subset_accuracy(p, "cuda:0");
  std::printf("[ sample subset ] CPU test accuracy %.4f, CUDA %.4f\n", cpu, gpu);
  EXPECT_GT(gpu, 0.70);
  EXPECT_GE(gpu, cpu - 0.02);
}

// Networks that score every step of a token window (the character LSTM
// and Transformer templates) train on a device through the host-batch
// path: batches gathered on the host, the scores and their gradient on
// the host each step. No other CUDA test runs that path, so a template is
// trained on both sides with the same seed and data. Dropout is set to 0
// (the device draws its masks from other streams than the CPU) and the
// last epoch is kept (not the best, which could differ), so the losses
// differ only by rounding: cuDNN's LSTM and attention round differently
// from the CPU's.
void check_every_step_template(const std::string& name) {
  SCOPED_TRACE(name);
  register_builtin_layers();
  Project p = load_project(std::string(DC_SOURCE_DIR) + "/resources/templates/" + name + ".dcproj");
  ProjectData data = load_project_dataset(p);
  auto train = std::make_shared<Dataset>(std::move(data.data.train));
  auto test = std::make_shared<Dataset>(std::move(data.data.test));
  ASSERT_TRUE(train->tokens);
  for (auto& [id, n] : p.graph.nodes())
    if (n.type == "Dropout") p.graph.node(id).attrs.set("rate", 0.0);
  auto run = [&](const std::string& device) {
    TrainConfig c = p.training;
    c.restore_best = false;
    c.epochs = 2;
    c.steps_per_epoch_limit = 40;
    c.device = parse_device(device);
    c.precision = Precision::Fp32;
    c.seed = 3;
    Trainer t(p.graph, c, train, test);
    t.start();
    t.wait();
    EXPECT_TRUE(t.result().ok) << device << ": " << t.result().error;
    return t.result();
  };
  const TrainResult cpu = run("cpu"), gpu = run("cuda:0");
  std::printf("[ every step ] %s: train loss CPU %.4f CUDA %.4f, test loss CPU %.4f CUDA %.4f\n",
              name.c_str(), cpu.final_train_loss, gpu.final_train_loss, cpu.test_loss,
              gpu.test_loss);
  ASSERT_TRUE(std::isfinite(gpu.final_train_loss) && std::isfinite(gpu.test_loss));
  // Learnt something: below a uniform guess over the characters.
  EXPECT_LT(gpu.test_loss, std::log(double(train->num_classes)) - 0.3);
  EXPECT_NEAR(gpu.final_train_loss, cpu.final_train_loss, 0.05 * cpu.final_train_loss);
  EXPECT_NEAR(gpu.test_loss, cpu.test_loss, 0.05 * cpu.test_loss);
}

TEST(CudaTraining, EveryStepTokenTemplatesTrainAsOnTheCpu) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  check_every_step_template("char_lstm");
  check_every_step_template("char_transformer");
}

}  // namespace
}  // namespace dc
