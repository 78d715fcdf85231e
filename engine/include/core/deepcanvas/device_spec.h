#pragma once
// Device names ("--device cpu|cuda|cuda:N") and where the CUDA plugin is
// looked for. Asking the plugin which GPUs exist needs the backend
// interface, which knows plans, graphs and datasets: that is device.h, in
// the train library.
#include <string>
#include <vector>

namespace dc {

struct DeviceSpec {
  bool cuda = false;
  int index = 0;
  std::string str() const { return cuda ? "cuda:" + std::to_string(index) : "cpu"; }
  bool operator==(const DeviceSpec&) const = default;
};

// Throws Error for anything but cpu, cuda, cuda:N.
DeviceSpec parse_device(const std::string& s);

// Where the loader looks for the plugin, in order (for messages and docs):
// $DC_CUDA_PLUGIN, next to the executable, ../lib, ../lib/deepcanvas.
std::vector<std::string> cuda_plugin_candidates();

}  // namespace dc
