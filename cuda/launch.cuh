#pragma once
// Launch shape of the pointwise kernels: 256 threads a block and a
// grid-stride loop, so one launch fits any size and the grid stays within
// what every supported GPU accepts.
#include <cstdint>

namespace dc::cuda {

constexpr int kThreads = 256;

inline int blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return int(b < 65535 * 8 ? (b > 0 ? b : 1) : 65535 * 8);
}

// A folded ReLU/ReLU6 (FusedRelu in kernels.h): the clamp and where the
// gradient passes, with the CPU ReLU's arithmetic (NaN clamps to 0).
__device__ inline float relu_clamp(float z, float hi) {
  return z > 0.f ? fminf(z, hi) : 0.f;
}
__device__ inline bool relu_passes(float z, float hi) {
  return z > 0.f && z < hi;
}

}  // namespace dc::cuda

#define DC_GRID_LOOP(i, n)                                                  \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); \
       i += int64_t(gridDim.x) * blockDim.x)
