#pragma once
// What the CUDA tests share: finding the backend (null, with the reason, when
// this machine has no driver, GPU or plugin, so every test can GTEST_SKIP
// cleanly), the CPU-vs-CUDA error measure, random inputs and attribute literals.
#include <deepcanvas/attrs.h>
#include <deepcanvas/backend.h>
#include <deepcanvas/device.h>
#include <deepcanvas/loss.h>
#include <deepcanvas/optim.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/project.h>
#include <deepcanvas/rng.h>
#include <deepcanvas/tensor.h>
#include <deepcanvas/trainer.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dc::test {

// Sets an environment variable the plugin reads (DC_CUDA_CONV, DC_CUDA_NHWC,
// DC_CUDA_RNN_ALGO, ...) for a scope, unset again even when a check fails
// fatally.
struct ScopedEnv {
  const char* name;
  ScopedEnv(const char* n, const char* v) : name(n) { setenv(n, v, 1); }
  ~ScopedEnv() { unsetenv(name); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
};

// ||a - b|| / ||b|| over all elements (NaN anywhere: infinite), the measure
// every CPU-vs-CUDA comparison uses.
inline double rel_err(const Tensor& a, const Tensor& b) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double d = double(a.f32()[i]) - double(b.f32()[i]);
    if (std::isnan(d)) return INFINITY;
    num += d * d;
    den += double(b.f32()[i]) * double(b.f32()[i]);
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

// A tensor of uniform values in [lo, hi), reproducible from the seed.
inline Tensor uniform_tensor(const Shape& s, uint64_t seed, float lo, float hi) {
  Tensor t(s);
  Rng r(seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = r.uniform(lo, hi);
  return t;
}

// Trains project p for two epochs (seed 1) on the bundled Fashion-MNIST
// subset on `device` and returns the test accuracy, for CPU-vs-CUDA runs.
inline double subset_accuracy(const Project& p, const std::string& device) {
  TrainTest tt =
      load_fashion_mnist(std::string(DC_SOURCE_DIR) + "/sample_data/fashion-mnist-subset");
  TrainConfig c = p.training;
  c.epochs = 2;
  c.device = parse_device(device);
  c.seed = 1;
  Trainer t(p.graph, c, std::make_shared<Dataset>(std::move(tt.train)),
            std::make_shared<Dataset>(std::move(tt.test)));
  t.start();
  t.wait();
  EXPECT_TRUE(t.result().ok) << device << ": " << t.result().error;
  return t.result().test_accuracy;
}

// One CPU training step of host on batch x, the reference the device's
// steps are compared with: forward, the loss's gradient for labels,
// backward and opt's update at rate lr. Returns the output (valid until
// the next forward).
inline const Tensor& cpu_step(Plan& host, const Tensor& x, const int32_t* labels, Loss& loss,
                              Optimizer& opt, double lr) {
  RunContext ctx{true, nullptr};
  const Tensor& out = host.forward(x, ctx);
  Tensor d(out.shape());
  loss.compute(out, Targets{labels, nullptr}, d);
  host.zero_grad();
  host.backward(d, ctx);
  opt.step(host.trainable(), lr);
  return out;
}

// The device's optimizer state (moments by name) against the CPU
// optimizer's, to 1e-4.
inline void expect_same_optimizer_state(Optimizer& cpu, DevicePlan& dev) {
  auto cs = cpu.state();
  auto gs = dev.optimizer_state();
  ASSERT_EQ(cs.size(), gs.size());
  for (size_t i = 0; i < cs.size(); ++i) {
    EXPECT_EQ(cs[i].first, gs[i].first);
    EXPECT_LE(rel_err(gs[i].second, cs[i].second), 1e-4) << cs[i].first;
  }
}

// Attribute literals: A({{"units", int64_t(8)}}), pair(3, 3).
inline Attrs A(std::initializer_list<std::pair<const char*, AttrValue>> kv) {
  Attrs a;
  for (auto& [k, v] : kv) a.set(k, v);
  return a;
}
inline AttrValue pair(int64_t a, int64_t b) {
  return AttrValue(std::vector<int64_t>{a, b});
}

inline std::string& skip_reason() {
  static std::string why;
  return why;
}

inline DeviceBackend* gpu_or_skip() {
  std::string why;
  DeviceBackend* b = cuda_backend(&why);
  if (!b) skip_reason() = "no usable CUDA device: " + why;
  // On the GPU machine (run-on-gpu.sh sets it) a plugin that fails to load
  // must fail the tests, not skip them into a green summary.
  const char* required = std::getenv("DC_REQUIRE_CUDA");
  if (!b && required && std::string(required) == "1")
    ADD_FAILURE() << "DC_REQUIRE_CUDA=1 but " << skip_reason();
  return b;
}

}  // namespace dc::test
