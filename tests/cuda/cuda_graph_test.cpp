// CUDA graph replay of the training step against the same steps run
// eagerly (DC_CUDA_GRAPHS=0): weights, optimizer state and loss sums agree
// over two epochs of full and partial batches, so a replay reads each
// step's own indices, learning rate and bias corrections. The two plans may
// pick different cuDNN algorithms, hence a tolerance instead of equality.
// The graph runs must report replayed steps (graph_steps) and the eager
// ones none, so the comparison fails if graphs silently turn off. Dropout
// reads its step seed from device memory, so it keeps graphs on and draws
// the same masks as the eager steps. Skips without a GPU.
#include <deepcanvas/device.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/rng.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda_test_util.h"

namespace dc {
namespace {

using test::A;

using test::rel_err;

Graph small_cnn(bool dropout = false) {
  register_builtin_layers();
  Graph g;
  NodeId in = g.add_node("Input", "input", A({{"shape", std::vector<int64_t>{1, 12, 12}}}));
  NodeId c = g.add_node("Conv2D", "conv", A({{"filters", int64_t(4)}, {"bias", false}}));
  NodeId b = g.add_node("BatchNorm2D", "bn");
  NodeId r = g.add_node("ReLU", "relu");
  NodeId p = g.add_node("MaxPool2D", "pool");
  NodeId f = g.add_node("Flatten", "flat");
  NodeId d = g.add_node("Dense", "fc", A({{"units", int64_t(10)}}));
  g.connect(in, c);
  g.connect(c, b);
  g.connect(b, r);
  g.connect(r, p);
  g.connect(p, f);
  if (dropout) {
    // Two layers: each must draw its own mask from the same step seed.
    NodeId d1 = g.add_node("Dropout", "drop1", A({{"rate", 0.3}}));
    NodeId h = g.add_node("Dense", "hidden", A({{"units", int64_t(16)}}));
    NodeId d2 = g.add_node("Dropout", "drop2", A({{"rate", 0.5}}));
    g.connect(f, d1);
    g.connect(d1, h);
    g.connect(h, d2);
    g.connect(d2, d);
  } else {
    g.connect(f, d);
  }
  return g;
}

// Embedding -> LSTM -> Dense on token windows: the recurrent path in a graph.
Graph small_lstm() {
  register_builtin_layers();
  Graph g;
  NodeId in = g.add_node("SequenceInput", "input",
                         A({{"steps", int64_t(12)}, {"kind", std::string("tokens")}}));
  NodeId e = g.add_node("Embedding", "emb", A({{"vocab_size", int64_t(20)}, {"dim", int64_t(8)}}));
  NodeId l = g.add_node("LSTM", "lstm", A({{"hidden_size", int64_t(16)}}));
  NodeId d = g.add_node("Dense", "fc", A({{"units", int64_t(10)}}));
  g.connect(in, e);
  g.connect(e, l);
  g.connect(l, d);
  return g;
}

// A 3×3 convolution, then two 1×1 ones on its 10×10 planes: in bf16 those
// run as cuBLAS GEMMs on the float32 planes (deepcanvas/cuda_pointwise.h),
// with the weight gradient's batch sum through the ones made at the first
// prepare, which a replay must keep reading.
Graph pointwise_cnn() {
  register_builtin_layers();
  Graph g;
  NodeId in = g.add_node("Input", "input", A({{"shape", std::vector<int64_t>{1, 12, 12}}}));
  NodeId c = g.add_node("Conv2D", "conv", A({{"filters", int64_t(8)}}));
  NodeId p1 =
      g.add_node("Conv2D", "pw1", A({{"filters", int64_t(16)}, {"kernel", test::pair(1, 1)}}));
  NodeId r = g.add_node("ReLU", "relu");
  NodeId p2 =
      g.add_node("Conv2D", "pw2", A({{"filters", int64_t(8)}, {"kernel", test::pair(1, 1)}}));
  NodeId p = g.add_node("MaxPool2D", "pool");
  NodeId f = g.add_node("Flatten", "flat");
  NodeId d = g.add_node("Dense", "fc", A({{"units", int64_t(10)}}));
  g.connect(in, c);
  g.connect(c, p1);
  g.connect(p1, r);
  g.connect(r, p2);
  g.connect(p2, p);
  g.connect(p, f);
  g.connect(f, d);
  return g;
}

enum class Net { Cnn, CnnDropout, Lstm, Pointwise };

struct Run {
  std::vector<Tensor> state, moments;
  double loss = 0;
  int64_t graph_steps = 0;
};

Run train(bool graphs, const std::string& precision, Net net) {
  const bool lstm = net == Net::Lstm;
  if (!graphs) setenv("DC_CUDA_GRAPHS", "0", 1);
  DeviceBackend* be = test::gpu_or_skip();
  Graph g = lstm                    ? small_lstm()
            : net == Net::Pointwise ? pointwise_cnn()
                                    : small_cnn(net == Net::CnnDropout);
  const int64_t B = 16, S = 100;
  Plan host(g, B);
  host.init_params(5);
  DevicePlanOptions o;
  o.max_batch = B;
  o.precision = *enum_from_name<Precision>(precision);
  auto dev = be->create_plan(g, host, o);
  unsetenv("DC_CUDA_GRAPHS");
  dev->upload_params();
  Dataset ds;
  ds.sample_shape = lstm ? Shape{12} : Shape{1, 12, 12};
  Rng r(2);
  if (lstm) {
    ds.tokens = true;
    for (int64_t i = 0; i < S * 12; ++i) ds.values.push_back(float(r.below(20)));
  } else {
    for (int64_t i = 0; i < S * 144; ++i) ds.pixels.push_back(uint8_t(r.below(256)));
  }
  for (int64_t i = 0; i < S; ++i) ds.labels.push_back(int32_t(r.below(10)));
  ds.num_classes = 10;
  ds.mean = lstm ? 0.f : 0.5f;
  ds.stddev = lstm ? 1.f : 0.3f;
  int h = dev->add_dataset(ds);
  Run out;
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<int64_t> order(S);
    for (int64_t i = 0; i < S; ++i) order[size_t(i)] = (i * 37 + epoch * 11) % S;
    for (int64_t b0 = 0; b0 < S; b0 += B) {
      const int64_t n = std::min(B, S - b0);
      // A schedule, so a replay that kept the captured rate would show.
      const double lr = 1e-2 / double(1 + b0 / B + epoch * 7);
      dev->train_step(h, order.data() + b0, n, lr, uint64_t(b0));
    }
    const DeviceStepStats st = dev->take_stats();
    out.loss += st.loss_sum;
    out.graph_steps += st.graph_steps;
  }
  dev->download_params();
  for (auto& [k, t] : host.state()) out.state.push_back(t.clone());
  for (auto& [k, t] : dev->optimizer_state()) out.moments.push_back(t);
  return out;
}

void compare(const std::string& precision, Net net = Net::Cnn) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  SCOPED_TRACE(precision);
  // fp16 rounds every convolution output: a different cuDNN algorithm may
  // flip roundings. A replay with stale arguments differs by far more.
  const double tol = precision == "fp32" ? 1e-4 : 2e-2;
  Run eager = train(false, precision, net);
  testing::internal::CaptureStderr();
  Run graph = train(true, precision, net);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.find("capture failed"), std::string::npos) << err;
  EXPECT_EQ(eager.graph_steps, 0);
  // 2 epochs of 100 samples in batches of 16: 6 full batches each, of which
  // the first two run eagerly (lazy allocations) before the capture.
  EXPECT_EQ(graph.graph_steps, 2 * 6 - 2);
  EXPECT_NEAR(graph.loss, eager.loss, tol * std::fabs(eager.loss));
  ASSERT_EQ(graph.state.size(), eager.state.size());
  for (size_t i = 0; i < eager.state.size(); ++i)
    EXPECT_LE(rel_err(graph.state[i], eager.state[i]), tol) << "state " << i;
  ASSERT_EQ(graph.moments.size(), eager.moments.size());
  for (size_t i = 0; i < eager.moments.size(); ++i)
    EXPECT_LE(rel_err(graph.moments[i], eager.moments[i]), tol) << "optimizer state " << i;
}

TEST(CudaGraph, ReplayedStepsMatchEagerSteps) {
  compare("fp32");
}
TEST(CudaGraph, ReplayedFp16StepsWithLossScalingMatchEagerSteps) {
  compare("fp16");
}
TEST(CudaGraph, ReplayedLstmStepsMatchEagerSteps) {
  compare("fp32", Net::Lstm);
}
TEST(CudaGraph, DropoutKeepsGraphsOnAndDrawsTheEagerMasks) {
  compare("fp32", Net::CnnDropout);
}
TEST(CudaGraph, ReplayedBf16PointwiseGemmStepsMatchEagerSteps) {
  compare("bf16", Net::Pointwise);
}

}  // namespace
}  // namespace dc
