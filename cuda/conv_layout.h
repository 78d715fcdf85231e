#pragma once
// Host-only layout arithmetic for the graph-API convolutions (conv_graph.cpp),
// kept free of CUDA headers so a host test checks it without a GPU.
#include <cstdint>
#include <vector>

namespace dc::cuda {

// The strides of a packed tensor whose dimensions are given in cuDNN's
// logical order [a, b, c, d] (N, C, H, W; or K, C, R, S for a filter): NCHW,
// or channels last (NHWC / KRSC), where b varies fastest.
inline std::vector<int64_t> conv_strides(int64_t a, int64_t b, int64_t c, int64_t d,
                                         bool channels_last) {
  (void)a;
  if (channels_last) return {c * d * b, 1, d * b, b};
  return {b * c * d, c * d, d, 1};
}

// The largest power of two, at most 16, that divides the address: cuDNN is
// told each tensor's real alignment (a weight inside the packed 16-bit
// parameter block need not be 16-byte aligned, and a plan chosen for 16
// would read it with vector loads it cannot take).
inline int64_t pointer_alignment(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  int64_t a = 16;
  while (a > 1 && v % uintptr_t(a) != 0) a /= 2;
  return a;
}

}  // namespace dc::cuda
