// A CudaPlan owns a stream, cuDNN and cuBLAS handles, pinned host memory,
// events and device buffers. Building one that fails (out of memory, what
// the GUI retries with a smaller batch) or that is built and dropped must
// give all of them back: many rounds may not grow free device memory, the
// process's open file descriptors or its resident memory.
#include <deepcanvas/backend.h>
#include <deepcanvas/device.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/plan.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cuda_test_util.h"

namespace dc {
namespace {

using test::A;

Graph conv_graph() {
  register_builtin_layers();
  Graph g;
  NodeId i = g.add_node("Input", "input", A({{"shape", std::vector<int64_t>{1, 28, 28}}}));
  NodeId c = g.add_node("Conv2D", "conv", A({{"filters", int64_t(8)}}));
  NodeId r = g.add_node("ReLU", "relu");
  NodeId f = g.add_node("Flatten", "flatten");
  NodeId d = g.add_node("Dense", "out", A({{"units", int64_t(10)}}));
  g.connect(i, c);
  g.connect(c, r);
  g.connect(r, f);
  g.connect(f, d);
  return g;
}

int64_t open_fds() {
  int64_t n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd");
       it != std::filesystem::directory_iterator(); ++it)
    ++n;
  return n;
}

int64_t resident_bytes() {
  std::ifstream f("/proc/self/statm");
  int64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * 4096;
}

int64_t free_device_bytes(DeviceBackend* be) {
  return be->devices().at(0).free_bytes;
}

void build_and_fail(DeviceBackend* be, const Graph& g, Plan& host) {
  DevicePlanOptions o;
  o.max_batch = int64_t(1) << 26;  // 2^26 samples of 8x26x26 floats: beyond any GPU
  EXPECT_THROW(be->create_plan(g, host, o), DeviceError);
}

void build_and_drop(DeviceBackend* be, const Graph& g, Plan& host) {
  DevicePlanOptions o;
  o.max_batch = 4096;  // 1 MiB of pinned indices per plan
  auto dev = be->create_plan(g, host, o);
  dev->upload_params();
}

TEST(CudaPlanLifetime, FailedAndDroppedPlansReleaseEverything) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  Graph g = conv_graph();
  Plan host(g, 1);
  host.init_params(1);
  // The first rounds load libraries and kernels once per process.
  build_and_fail(be, g, host);
  build_and_drop(be, g, host);
  const int64_t fds0 = open_fds(), rss0 = resident_bytes(), free0 = free_device_bytes(be);
  constexpr int kRounds = 100;
  for (int k = 0; k < kRounds; ++k) {
    build_and_fail(be, g, host);
    build_and_drop(be, g, host);
  }
  // The margins allow for allocator and driver noise but not for a leak of
  // a third of a MiB per round (a plan's pinned indices alone are 1 MiB;
  // cuDNN and cuBLAS handles keep device memory) or of one descriptor in
  // every 25 rounds.
  const int64_t margin = int64_t(32) << 20;
  EXPECT_LE(open_fds(), fds0 + 4);
  EXPECT_LT(resident_bytes() - rss0, margin);
  EXPECT_GT(free_device_bytes(be), free0 - margin);
}

}  // namespace
}  // namespace dc
