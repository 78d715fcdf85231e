#pragma once
// Host-only layout arithmetic for the convolutions (conv.cpp, conv_graph.cpp),
// kept free of CUDA headers so a host test checks it without a GPU.
#include <algorithm>
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

// cuDNN takes one padding per side pair (the legacy API; conv.cpp runs every
// precision's convolutions through a padded copy rather than the graph
// API's pre/post paddings, so that one rule serves both APIs). 'same'
// padding with a stride can ask for more on one side (the engine's rule,
// same_padding: the odd row at the bottom, the odd column at the right).
// Such a convolution runs on a copy of the input with the difference added
// as zero rows and columns on the side that needs more, and cuDNN pads the
// copy by the part both sides share. Zero extra everywhere: no copy.
struct ConvPadCopy {
  int64_t top = 0, bottom = 0, left = 0, right = 0;  // zero rows/columns the copy adds
  int64_t pad_h = 0, pad_w = 0;                      // what cuDNN pads the copy by, each side
  int64_t h = 0, w = 0;                              // the copy's plane (the input's without one)
  bool needed() const { return top + bottom + left + right > 0; }
  // Every side's padding together, the copy's and cuDNN's.
  int64_t total() const { return top + bottom + left + right + 2 * (pad_h + pad_w); }
};

// For an input plane h × w padded by pt/pb rows (top/bottom) and pl/pr
// columns (left/right), none negative.
inline ConvPadCopy conv_pad_copy(int64_t h, int64_t w, int64_t pt, int64_t pb, int64_t pl,
                                 int64_t pr) {
  ConvPadCopy p;
  p.pad_h = std::min(pt, pb);
  p.pad_w = std::min(pl, pr);
  p.top = pt - p.pad_h;
  p.bottom = pb - p.pad_h;
  p.left = pl - p.pad_w;
  p.right = pr - p.pad_w;
  p.h = h + p.top + p.bottom;
  p.w = w + p.left + p.right;
  return p;
}

}  // namespace dc::cuda
