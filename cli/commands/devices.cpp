// deepcanvas-cli devices: the CPU and each NVIDIA GPU.
#include "commands.h"

#include <deepcanvas/advisor/device_bench.h>
#include <deepcanvas/device.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace dc::cli {

namespace {

using json = nlohmann::json;

int cmd_devices(const Args& a) {
  std::string why;
  std::vector<GpuInfo> gpus = list_gpus(&why);
  if (a.flag("json")) {
    json j = {
        {"cpu",
         {{"name", advisor::cpu_model_name()}, {"threads", std::thread::hardware_concurrency()}}}};
    json g = json::array();
    for (const GpuInfo& d : gpus)
      g.push_back(
          {{"device", "cuda:" + std::to_string(d.index)},
           {"name", d.name},
           {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
           {"multiprocessors", d.multiprocessors},
           {"memory_bytes", d.total_bytes},
           {"free_bytes", d.free_bytes},
           {"tensor_cores", d.tensor_cores}});
    j["cuda"] = g;
    if (gpus.empty()) j["cuda_unavailable"] = why;
    std::cout << j.dump() << std::endl;
    return 0;
  }
  std::printf("cpu      %s, %u hardware threads\n", advisor::cpu_model_name().c_str(),
              std::thread::hardware_concurrency());
  if (gpus.empty()) std::printf("cuda     not available: %s\n", why.c_str());
  for (const GpuInfo& d : gpus)
    std::printf(
        "cuda:%-3d %s, compute capability %d.%d, %d SMs, %.1f GiB (%.1f GiB free), "
        "tensor cores: %s, driver CUDA %d.%d\n",
        d.index, d.name.c_str(), d.cc_major, d.cc_minor, d.multiprocessors,
        double(d.total_bytes) / (1 << 30), double(d.free_bytes) / (1 << 30),
        d.tensor_cores ? "yes" : "no", d.driver_version / 1000, d.driver_version % 1000 / 10);
  return 0;
}

}  // namespace

const Command& devices_command() {
  static const Command cmd{.name = "devices",
                           .operands = "",
                           .summary = "List the CPU and each NVIDIA GPU.",
                           .options = {{"json", "", "print JSON"}},
                           .max_operands = 0,
                           .run = cmd_devices};
  return cmd;
}

}  // namespace dc::cli
