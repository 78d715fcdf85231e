// Frozen layers on the GPU against the CPU plan: the same steps from the
// same weights must give the same weights, frozen parameters and a frozen
// BatchNorm's running statistics must not move, and the optimizer state
// covers the trainable parameters only. Cases: a frozen convolutional
// prefix (no backward at all there), a frozen layer between trainable ones
// (the gradient passes through, no weight gradient), a frozen recurrent
// layer behind a trainable Embedding, and the fused training step with its
// CUDA graph, in float32 and bf16. Skips without a GPU.
#include <deepcanvas/data.h>
#include <deepcanvas/device.h>
#include <deepcanvas/enum_names.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/loss.h>
#include <deepcanvas/optim.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/rng.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "cuda_test_util.h"

namespace dc {
namespace {

using test::A;
using test::pair;
using test::rel_err;

constexpr int64_t kB = 8, kClasses = 4;

// in -> conv1 -> bn1 -> relu1 -> conv2 -> bn2 -> relu2 -> gap -> fc1 -> fc2;
// `frozen` names the nodes that do not train.
Graph cnn(const std::vector<std::string>& frozen) {
  register_builtin_layers();
  Graph g;
  NodeId prev = g.add_node("Input", "in", A({{"shape", std::vector<int64_t>{3, 8, 8}}}));
  auto add = [&](const char* type, const char* name, Attrs a = {}) {
    NodeId id = g.add_node(type, name, std::move(a));
    g.connect(prev, id);
    prev = id;
  };
  add("Conv2D", "conv1", A({{"filters", int64_t(6)}, {"kernel", pair(3, 3)}}));
  add("BatchNorm2D", "bn1");
  add("ReLU", "relu1");
  add("Conv2D", "conv2", A({{"filters", int64_t(5)}, {"kernel", pair(3, 3)}, {"bias", false}}));
  add("BatchNorm2D", "bn2");
  add("ReLU", "relu2");
  add("GlobalAvgPool2D", "gap");
  add("Dense", "fc1", A({{"units", int64_t(7)}}));
  add("Dense", "fc2", A({{"units", kClasses}}));
  for (const std::string& name : frozen) g.set_trainable(g.find_by_name(name)->id, false);
  return g;
}

// Token ids -> Embedding (trains) -> LSTM (frozen: 2 layers, bidirectional,
// learned initial states) -> Dense (trains).
Graph recurrent() {
  register_builtin_layers();
  Graph g;
  NodeId in = g.add_node(
      "SequenceInput", "in",
      A({{"steps", int64_t(6)}, {"features", int64_t(10)}, {"kind", std::string("tokens")}}));
  NodeId e = g.add_node("Embedding", "emb", A({{"vocab_size", int64_t(10)}, {"dim", int64_t(5)}}));
  NodeId l = g.add_node("LSTM", "lstm",
                        A({{"hidden_size", int64_t(6)},
                           {"num_layers", int64_t(2)},
                           {"bidirectional", true},
                           {"initial_state", std::string("learned")}}));
  NodeId d = g.add_node("Dense", "fc", A({{"units", kClasses}}));
  g.connect(in, e);
  g.connect(e, l);
  g.connect(l, d);
  g.set_trainable(l, false);
  return g;
}

Tensor input_for(const Graph& g, uint64_t seed) {
  Plan p(g, kB);
  Shape s = p.input_shape().with_batch(kB);
  Tensor t = test::uniform_tensor(s, seed, -1.f, 1.f);
  if (s.rank() == 2)  // token ids 0..9
    for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = float(int((t.f32()[i] + 1.f) * 4.99f));
  return t;
}

// Seeded weights, and running statistics and learned initial states away
// from their zero/one defaults, so that a device reading a frozen layer's
// from the wrong place (or not at all) shows.
void init(Plan& p) {
  p.init_params(5);
  Rng r(17);
  for (NamedParam& np : p.params()) {
    const std::string& n = np.name;
    const bool stats = n.find("running_") != std::string::npos;
    const bool state = n.find(".h0_") != std::string::npos || n.find(".c0_") != std::string::npos;
    if (!stats && !state) continue;
    Tensor& t = np.param->value;
    for (int64_t i = 0; i < t.numel(); ++i)
      t.f32()[i] = n.find("running_var") != std::string::npos ? r.uniform(0.5f, 2.f)
                                                              : r.uniform(-0.5f, 0.5f);
  }
}

std::map<std::string, Tensor> state_of(Plan& p) {
  std::map<std::string, Tensor> m;
  for (auto& [k, t] : p.state()) m[k] = t.clone();
  return m;
}

// Three Adam steps on the CPU plan and, through forward/loss/backward/step,
// on the device; compares every parameter and buffer, and checks that what
// is frozen did not move.
void check_steps(const Graph& g, const std::vector<std::string>& frozen_params) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  OptimizerConfig oc;
  oc.type = OptimizerType::Adam;
  oc.weight_decay = 0.01;
  Plan host(g, kB);
  init(host);
  const std::map<std::string, Tensor> before = state_of(host);
  DevicePlanOptions o;
  o.max_batch = kB;
  o.optimizer = oc;
  auto dev = be->create_plan(g, host, o);
  dev->upload_params();
  auto opt = make_optimizer(oc);
  auto loss = make_loss(LossType::SoftmaxCrossEntropy);
  std::vector<int32_t> labels(kB);
  for (int64_t i = 0; i < kB; ++i) labels[size_t(i)] = int32_t(i % kClasses);
  for (int s = 0; s < 3; ++s) {
    Tensor x = input_for(g, uint64_t(40 + s));
    const Tensor& out = test::cpu_step(host, x, labels.data(), *loss, *opt, 0.01);

    Tensor gout(out.shape()), gd(out.shape());
    dev->zero_grad();
    dev->forward(x, gout, true, 0);
    EXPECT_LE(rel_err(gout, out), 1e-4) << "forward, step " << s;
    dev->loss(labels.data(), nullptr, &gd);
    dev->backward(gd);
    dev->step(0.01);
  }
  const std::map<std::string, Tensor> cpu = state_of(host);
  dev->download_params();
  const std::map<std::string, Tensor> gpu = state_of(host);
  for (const auto& [k, t] : cpu) EXPECT_LE(rel_err(gpu.at(k), t), 1e-4) << k;
  for (const std::string& k : frozen_params) {
    ASSERT_TRUE(before.count(k)) << k;
    EXPECT_EQ(rel_err(gpu.at(k), before.at(k)), 0.0) << k << " moved on the GPU";
    EXPECT_EQ(rel_err(cpu.at(k), before.at(k)), 0.0) << k << " moved on the CPU";
  }
  // The control: something that trains did move.
  double moved = 0;
  for (const auto& [k, t] : gpu) moved = std::max(moved, rel_err(t, before.at(k)));
  EXPECT_GT(moved, 1e-4) << "nothing trained";
  test::expect_same_optimizer_state(*opt, *dev);
}

TEST(CudaFrozen, FrozenPrefixWithBatchNormKeepsItsWeightsAndRunningStatistics) {
  check_steps(cnn({"in", "conv1", "bn1", "relu1"}),
              {"conv1.weight", "conv1.bias", "bn1.weight", "bn1.bias", "bn1.running_mean",
               "bn1.running_var"});
}

// bn1 is frozen too: in front of a training-mode BatchNorm conv1's bias
// would have an exactly zero gradient, whose rounding noise Adam scales up
// to full-size steps that no tolerance can compare (as in the parity tests).
// A frozen bn1 is the inference form, through which the bias trains. (The
// frozen conv2-bn2-fc1 middle is still stepped, with SGD, which does not
// amplify that noise, in FusedStepsAndGraphReplaysMatchTheCpu.)
TEST(CudaFrozen, FrozenLayersBetweenTrainableOnesPassTheGradientOn) {
  check_steps(cnn({"bn1", "conv2", "fc1"}),
              {"bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var", "conv2.weight",
               "fc1.weight", "fc1.bias"});
}

TEST(CudaFrozen, FrozenLstmBehindATrainableEmbedding) {
  check_steps(recurrent(), {"lstm.weight_ih_l0", "lstm.weight_hh_l1_reverse", "lstm.bias_ih_l0",
                            "lstm.h0_l0", "lstm.c0_l1_reverse"});
}

// The fused step (gather on the device, CUDA graph replays after two eager
// steps) against the CPU's steps on the same batches.
Dataset images() {
  Dataset ds;
  ds.sample_shape = Shape{3, 8, 8};
  Rng r(7);
  for (int64_t i = 0; i < 32 * 192; ++i) ds.pixels.push_back(uint8_t(r.below(256)));
  for (int64_t i = 0; i < 32; ++i) ds.labels.push_back(int32_t(r.below(kClasses)));
  ds.num_classes = int(kClasses);
  // A pretrained base's per-channel statistics (which the device gathers
  // with, as the CPU's gather does).
  ds.channel_mean = {0.485f, 0.456f, 0.406f};
  ds.channel_std = {0.229f, 0.224f, 0.225f};
  return ds;
}

std::vector<int64_t> batch(int step) {
  std::vector<int64_t> idx(kB);
  for (int64_t i = 0; i < kB; ++i) idx[size_t(i)] = (step * 5 + i * 3) % 32;
  return idx;
}

std::map<std::string, Tensor> train(DeviceBackend* be, const Graph& g, Precision prec) {
  Plan host(g, kB);
  init(host);
  OptimizerConfig oc;
  oc.type = OptimizerType::Sgd;
  oc.momentum = 0.9;
  const Dataset ds = images();
  if (!be) {
    auto opt = make_optimizer(oc);
    auto loss = make_loss(LossType::SoftmaxCrossEntropy);
    for (int s = 0; s < 6; ++s) {
      std::vector<int64_t> idx = batch(s);
      Tensor x(host.input_shape().with_batch(kB));
      std::vector<int32_t> labels(kB);
      ds.gather(idx.data(), kB, x.f32(), labels.data());
      test::cpu_step(host, x, labels.data(), *loss, *opt, 0.05);
    }
    return state_of(host);
  }
  DevicePlanOptions o;
  o.max_batch = kB;
  o.optimizer = oc;
  o.precision = prec;
  auto dev = be->create_plan(g, host, o);
  dev->upload_params();
  const int h = dev->add_dataset(ds);
  for (int s = 0; s < 6; ++s) {
    std::vector<int64_t> idx = batch(s);
    dev->train_step(h, idx.data(), kB, 0.05, uint64_t(s));
  }
  EXPECT_TRUE(dev->take_stats().finite);
  dev->download_params();
  return state_of(host);
}

TEST(CudaFrozen, FusedStepsAndGraphReplaysMatchTheCpu) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  const Graph g = cnn({"in", "conv1", "bn1", "relu1"});
  Plan fresh(g, kB);
  init(fresh);
  const std::map<std::string, Tensor> before = state_of(fresh);
  const std::map<std::string, Tensor> cpu = train(nullptr, g, Precision::Fp32);
  const std::map<std::string, Tensor> gpu = train(be, g, Precision::Fp32);
  for (const auto& [k, t] : cpu) EXPECT_LE(rel_err(gpu.at(k), t), 1e-4) << k;
  for (const char* k : {"conv1.weight", "bn1.running_mean", "bn1.running_var"})
    EXPECT_EQ(rel_err(gpu.at(k), before.at(k)), 0.0) << k;
  EXPECT_GT(rel_err(gpu.at("conv2.weight"), before.at("conv2.weight")), 1e-4);
  // bf16: the frozen convolution reads its 16-bit weight copy; the frozen
  // parameters stay exactly as they were and the rest stays near float32.
  const std::map<std::string, Tensor> low = train(be, g, Precision::Bf16);
  for (const char* k : {"conv1.weight", "bn1.weight", "bn1.running_var"})
    EXPECT_EQ(rel_err(low.at(k), before.at(k)), 0.0) << k;
  for (const char* k : {"conv2.weight", "fc2.weight"})
    EXPECT_LE(rel_err(low.at(k), cpu.at(k)), 5e-2) << k;
  // A frozen middle (the 16-bit backward through a frozen convolution and
  // Dense, weight gradients skipped) in each precision, and fp16's loss
  // scaler with frozen parameters outside its range.
  const Graph mid = cnn({"conv2", "bn2", "fc1"});
  Plan fresh_mid(mid, kB);
  init(fresh_mid);
  const std::map<std::string, Tensor> mid_before = state_of(fresh_mid);
  const std::map<std::string, Tensor> mid_cpu = train(nullptr, mid, Precision::Fp32);
  for (Precision p : {Precision::Fp32, Precision::Bf16, Precision::Fp16}) {
    SCOPED_TRACE(enum_name(p));
    const std::map<std::string, Tensor> got = train(be, mid, p);
    const double tol = p == Precision::Fp32 ? 1e-4 : 5e-2;
    for (const char* k : {"conv1.weight", "bn1.weight", "fc2.weight"})
      EXPECT_LE(rel_err(got.at(k), mid_cpu.at(k)), tol) << k;
    for (const char* k : {"conv2.weight", "bn2.running_mean", "fc1.weight"})
      EXPECT_EQ(rel_err(got.at(k), mid_before.at(k)), 0.0) << k;
  }
}

}  // namespace
}  // namespace dc
