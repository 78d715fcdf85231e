#pragma once
// Finding the CUDA backend for tests: null (and the reason) when this machine
// has no driver, no GPU or no plugin, so every test can GTEST_SKIP cleanly.
#include <deepcanvas/device.h>

#include <string>

namespace dc::test {

inline std::string& skip_reason() {
  static std::string why;
  return why;
}

inline DeviceBackend* gpu_or_skip() {
  std::string why;
  DeviceBackend* b = cuda_backend(&why);
  if (!b) skip_reason() = "no usable CUDA device: " + why;
  return b;
}

}  // namespace dc::test
