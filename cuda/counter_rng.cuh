#pragma once
// The dropout masks' generator, shared by Dropout (elementwise.cu) and the
// attention weights' dropout (attention.cu).
#include <cstdint>

namespace dc::cuda {

// splitmix64 of (seed, i): a counter-based generator, so backward rebuilds
// the forward mask without storing it.
__device__ inline float uniform01(uint64_t seed, uint64_t i) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (i + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return float(z >> 40) * (1.0f / 16777216.0f);
}

}  // namespace dc::cuda
