#pragma once
// Finding the CUDA backend for tests: null (and the reason) when this machine
// has no driver, no GPU or no plugin, so every test can GTEST_SKIP cleanly.
#include <deepcanvas/device.h>

#include <gtest/gtest.h>

#include <cstdlib>
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
  // On the GPU machine (run-on-gpu.sh sets it) a plugin that fails to load
  // must fail the tests, not skip them into a green summary.
  const char* required = std::getenv("DC_REQUIRE_CUDA");
  if (!b && required && std::string(required) == "1")
    ADD_FAILURE() << "DC_REQUIRE_CUDA=1 but " << skip_reason();
  return b;
}

}  // namespace dc::test
