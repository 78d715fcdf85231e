// deepcanvas-cli bench-device: this machine's measured GEMM, convolution
// and memory speed, cached per machine.
#include "commands.h"

#include <deepcanvas/advisor/device_bench.h>
#include <deepcanvas/device.h>

#include <cstdio>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

namespace dc::cli {

namespace {

using json = nlohmann::json;

int cmd_bench_device(const Args& a) {
  const DeviceSpec dev = parse_device(a.get("device", "cpu"));
  bool cached = false;
  const advisor::DeviceBench b = dev.cuda
                                     ? advisor::gpu_bench(dev.index, a.flag("refresh"), &cached)
                                     : advisor::cpu_bench(a.flag("refresh"), &cached);
  if (a.flag("json")) {
    json j = json::parse(advisor::bench_to_json(b));
    j["cached"] = cached;
    j["cache_file"] = advisor::bench_cache_path();
    std::cout << j.dump() << std::endl;
    return 0;
  }
  const char* again = cached ? " (cached; --refresh measures again)" : "";
  if (dev.cuda)
    std::printf("%s (%s)%s\n", b.name.c_str(), b.device.c_str(), again);
  else
    std::printf("%s, %d threads%s\n", b.name.c_str(), b.threads, again);
  std::printf("  fp32 GEMM        %8.1f GFLOP/s\n", b.fp32_gflops);
  if (dev.cuda) {
    std::printf("  bf16 GEMM        %8.1f GFLOP/s (tensor cores)\n", b.bf16_gflops);
    std::printf("  fp16 GEMM        %8.1f GFLOP/s (tensor cores)\n", b.fp16_gflops);
  }
  std::printf("  conv2d forward   %8.1f GFLOP/s\n", b.conv_gflops);
  if (b.depthwise_gflops > 0)
    std::printf("  depthwise conv   %8.1f GFLOP/s forward, %.1f backward\n", b.depthwise_gflops,
                b.depthwise_bwd_gflops);
  std::printf("  memory bandwidth %8.1f GB/s", b.mem_bandwidth_gbs);
  if (b.mem_bandwidth_samples.size() > 1) {
    // Shared hosts move this figure between runs: say what it is made of.
    std::string list;
    for (double v : b.mem_bandwidth_samples)
      list += (list.empty() ? "" : ", ") + std::to_string(int(v + 0.5));
    std::printf(" (median of the last %zu measurements: %s)", b.mem_bandwidth_samples.size(),
                list.c_str());
  }
  std::printf("\n");
  if (dev.cuda) std::printf("  host to device   %8.1f GB/s (pinned)\n", b.h2d_gbs);
  std::printf(dev.cuda ? "  launch overhead  %8.1f us\n" : "  per-step overhead %7.1f us\n",
              b.step_overhead_s * 1e6);
  std::printf("  measured %s, cached in %s\n", b.measured_at.c_str(),
              advisor::bench_cache_path().c_str());
  return 0;
}

}  // namespace

const Command& bench_device_command() {
  static const Command cmd{
      .name = "bench-device",
      .operands = "",
      .summary =
          "Measure GEMM, convolution and memory speed and the per-step overhead (cached per "
          "machine).",
      .options = {{"device", "DEV", "cpu (default) or cuda:N"},
                  {"refresh", "", "measure again even when a cached result exists"},
                  {"json", "", "print JSON"}},
      .max_operands = 0,
      .run = cmd_bench_device};
  return cmd;
}

}  // namespace dc::cli
