#pragma once
// Warp-wide reductions for the one-warp-per-row kernels (softmax, the
// losses, global average pooling): a butterfly over __shfl_xor_sync, so
// every lane ends with the result and the 32 lanes must all be active.
// Lane 0 adds in the same order as a __shfl_down_sync tree would, so its
// sum is the same to the bit.
#include <cuda_runtime.h>

namespace dc::cuda {

__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// float for softmax, double for the losses' sums (as the CPU accumulates).
template <typename T>
__device__ inline T warp_sum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

}  // namespace dc::cuda
