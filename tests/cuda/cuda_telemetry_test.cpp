// GPU telemetry through the Trainer's event channel: NVML readings at >= 4 Hz
// with the plugin allocator's bytes, and none after the run's final event.
// Skips, with the reason, without a CUDA device/plugin or without NVML.
#include <deepcanvas/project.h>
#include <deepcanvas/telemetry.h>
#include <deepcanvas/trainer.h>
#include <gtest/gtest.h>

#include "cuda_test_util.h"

namespace dc {
namespace {

TEST(CudaTelemetry, SamplesArriveThroughTheEventChannel) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  if (!Nvml::instance().available()) GTEST_SKIP() << "NVML unavailable: " << Nvml::instance().why();
  register_builtin_layers();
  Project p = load_project(std::string(DC_SOURCE_DIR) + "/sample_data/sample_project.dcproj");
  TrainTest tt =
      load_fashion_mnist(std::string(DC_SOURCE_DIR) + "/sample_data/fashion-mnist-subset");
  TrainConfig c = p.training;
  // Long enough for several 4 Hz readings after the first reported step
  // (on an H100 an epoch of the subset takes well under 100 ms).
  c.epochs = 40;
  c.device = parse_device("cuda:0");
  Trainer t(p.graph, c, std::make_shared<Dataset>(std::move(tt.train)),
            std::make_shared<Dataset>(std::move(tt.test)));
  t.start();
  t.wait();
  ASSERT_TRUE(t.result().ok) << t.result().error;
  int telemetry = 0, with_bytes = 0;
  bool final_seen = false, telemetry_after_final = false;
  while (auto e = t.events().pop(std::chrono::milliseconds(0))) {
    if (e->kind == TrainEvent::Kind::Finished) final_seen = true;
    if (e->kind != TrainEvent::Kind::Telemetry) continue;
    telemetry_after_final |= final_seen;
    ++telemetry;
    EXPECT_GT(e->gpu.memory_total, 0);
    EXPECT_GE(e->gpu.memory_used, 0);
    EXPECT_LE(e->gpu.utilization_pct, 100);
    if (e->device_allocated > 0) {
      ++with_bytes;
      EXPECT_GE(e->device_reserved, e->device_allocated);
    }
  }
  std::printf("[ telemetry ] %d samples, %d with allocator bytes\n", telemetry, with_bytes);
  EXPECT_TRUE(final_seen);
  EXPECT_GE(telemetry, 2);
  EXPECT_GE(with_bytes, 1) << "no reading carried the allocator's bytes";
  EXPECT_FALSE(telemetry_after_final);
}

}  // namespace
}  // namespace dc
