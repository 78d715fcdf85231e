// bench-device --device cuda:N: the micro-benchmark through the plugin, and
// its cache. Rates are only checked to be of a GPU's order (any CUDA GPU the
// backend supports passes), not timed against a target.
#include <deepcanvas/advisor/device_bench.h>
#include <deepcanvas/errors.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "cuda_test_util.h"

namespace dc {
namespace {

TEST(CudaBench, MeasuresEveryRateAndCachesItPerGpu) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  const GpuBenchResult r = be->benchmark(0);
  EXPECT_GT(r.fp32_gflops, 500);  // a T4 reaches about 4,000
  EXPECT_GT(r.conv_gflops, 200);
  EXPECT_GT(r.mem_bandwidth_gbs, 100);
  EXPECT_GT(r.h2d_gbs, 1);
  EXPECT_GT(r.launch_s, 0);
  EXPECT_LT(r.launch_s, 1e-3);
  if (list_gpus()[0].cc_major >= 8) {
    // bf16 tensor cores: several times fp32 on every Ampere or newer GPU.
    EXPECT_GT(r.bf16_gflops, 2 * r.fp32_gflops);
    EXPECT_GT(r.fp16_gflops, 2 * r.fp32_gflops);
  }
  // Through the advisor: measured once, then read from the cache.
  const std::string dir = (std::filesystem::temp_directory_path() / "dc_cuda_bench").string();
  setenv("XDG_CACHE_HOME", dir.c_str(), 1);
  bool cached = true;
  const advisor::DeviceBench b = advisor::gpu_bench(0, true, &cached);
  EXPECT_FALSE(cached);
  EXPECT_EQ(b.device, "cuda:0");
  EXPECT_EQ(b.name, list_gpus()[0].name);
  EXPECT_GT(b.bf16_gflops, 0);
  const advisor::DeviceBench again = advisor::gpu_bench(0, false, &cached);
  EXPECT_TRUE(cached);
  EXPECT_EQ(again.fp32_gflops, b.fp32_gflops);
  EXPECT_EQ(again.h2d_gbs, b.h2d_gbs);
  unsetenv("XDG_CACHE_HOME");
  std::filesystem::remove_all(dir);
  EXPECT_THROW(advisor::gpu_bench(99, false), Error);
}

}  // namespace
}  // namespace dc
