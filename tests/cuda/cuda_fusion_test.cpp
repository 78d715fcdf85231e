// The CUDA plan's folded ReLUs (relu_fusions): a network of
// Conv2D -> BatchNorm2D -> ReLU and Add -> ReLU blocks trains to the same
// values with the fold as without it (DC_CUDA_FUSE=0), and the fold really
// happened: each folded ReLU's activation and gradient buffers are gone
// from the plan's allocation. Skips where no CUDA device is available.
#include <deepcanvas/device.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/plan.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "cuda_test_util.h"

namespace dc {
namespace {

using test::A;
using test::pair;

// 16x32x32 feature maps: each one is 4 MiB at batch 64, so the allocator's
// 2 MiB rounding cannot hide a buffer.
// The convolutions are depthwise and without bias so that nothing in the
// comparison depends on timing: cuDNN's algorithms are chosen by timing
// them, so their workspace (which the allocator counts, and whose freed
// blocks later buffers may reuse at up to twice their size) and their
// rounding differed between the two plans; and a bias feeding a BatchNorm
// has a gradient of rounding noise around zero, which no relative
// tolerance holds (a lent H200 showed both: "gradient 1" off by 1.25 and
// 4 MiB more allocated with the fold, in one run of two). The depthwise
// kernels need no workspace and sum in a fixed order.
Graph residual_block() {
  register_builtin_layers();
  Graph g;
  NodeId in = g.add_node("Input", "input", A({{"shape", std::vector<int64_t>{16, 32, 32}}}));
  auto conv = [&](const std::string& name, NodeId from) {
    NodeId c = g.add_node("Conv2D", name,
                          A({{"filters", int64_t(16)},
                             {"kernel", pair(3, 3)},
                             {"padding", pair(1, 1)},
                             {"groups", int64_t(16)},
                             {"bias", false}}));
    g.connect(from, c);
    return c;
  };
  auto then = [&](const std::string& type, const std::string& name, NodeId from) {
    NodeId n = g.add_node(type, name, A({}));
    g.connect(from, n);
    return n;
  };
  NodeId c1 = conv("c1", in);
  NodeId r1 = then("ReLU", "r1", then("BatchNorm2D", "bn1", c1));
  NodeId c2 = conv("c2", r1);
  NodeId b2 = then("BatchNorm2D", "bn2", c2);
  NodeId add = g.add_node("Add", "add", A({{"inputs", int64_t(2)}}));
  g.connect(b2, add, 0);
  g.connect(r1, add, 1);
  NodeId r2 = then("ReLU", "r2", add);
  NodeId gap = then("GlobalAvgPool2D", "gap", r2);
  NodeId fc = g.add_node("Dense", "fc", A({{"units", int64_t(10)}}));
  g.connect(gap, fc);
  return g;
}

struct Outcome {
  Tensor out;
  std::vector<Tensor> grads;
  int64_t allocated = 0;
};

Outcome run(DeviceBackend* be, const Graph& g, bool fuse) {
  test::ScopedEnv env("DC_CUDA_FUSE", fuse ? "1" : "0");
  const int64_t N = 64;
  Plan host(g, N);
  host.init_params(3);
  DevicePlanOptions o;
  o.max_batch = N;
  auto dev = be->create_plan(g, host, o);
  dev->upload_params();
  Outcome r;
  r.allocated = dev->memory().allocated;
  Tensor x = test::uniform_tensor(Shape{16, 32, 32}.with_batch(N), 21, -1.f, 1.f);
  Tensor dout = test::uniform_tensor(host.output_shape().with_batch(N), 22, -1.f, 1.f);
  r.out = Tensor(host.output_shape().with_batch(N));
  dev->zero_grad();
  dev->forward(x, r.out, true, 1);
  dev->backward(dout);
  dev->download_grads();
  for (auto& p : host.params())
    if (p.param->trainable) r.grads.push_back(p.param->grad.clone());
  return r;
}

TEST(CudaFusion, FoldedReluTrainsAlikeAndFreesItsBuffers) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  const Graph g = residual_block();
  // The rule itself: both ReLUs fold (r1 feeds two layers, but its producer
  // bn1 feeds only r1).
  int folds = 0;
  for (int f : relu_fusions(lower_graph(g))) folds += f >= 0;
  ASSERT_EQ(folds, 2);
  const Outcome plain = run(be, g, false), fused = run(be, g, true);
  EXPECT_LE(test::rel_err(fused.out, plain.out), 1e-6) << "forward output";
  ASSERT_EQ(fused.grads.size(), plain.grads.size());
  for (size_t k = 0; k < plain.grads.size(); ++k)
    EXPECT_LE(test::rel_err(fused.grads[k], plain.grads[k]), 1e-5) << "gradient " << k;
  // Two ReLU outputs and their gradients: 4 buffers of 4 MiB.
  const int64_t saved = plain.allocated - fused.allocated;
  EXPECT_GE(saved, int64_t(14) << 20)
      << "plain " << plain.allocated << ", fused " << fused.allocated;
  EXPECT_LE(saved, int64_t(18) << 20);
}

}  // namespace
}  // namespace dc
