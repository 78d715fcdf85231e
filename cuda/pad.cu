// The zero-padded input copy of a convolution whose 'same' padding is uneven
// (conv.cpp, conv_layout.h's ConvPadCopy) and the way back for its gradient.
#include <cstdint>

#include "kernels.h"
#include "launch.cuh"

namespace dc::cuda {
namespace {

// Every element of the copy is written, the padding as zeros: the copy's
// buffer also holds the input gradient of the previous backward.
__global__ void k_pad_planes(const float* __restrict__ x, float* __restrict__ y, int64_t total,
                             int64_t h, int64_t w, int64_t top, int64_t left, int64_t ph,
                             int64_t pw) {
  DC_GRID_LOOP(i, total) {
    const int64_t col = i % pw, row = (i / pw) % ph, plane = i / (pw * ph);
    const int64_t r = row - top, c = col - left;
    y[i] = r >= 0 && r < h && c >= 0 && c < w ? x[(plane * h + r) * w + c] : 0.f;
  }
}

__global__ void k_crop_planes_add(const float* __restrict__ y, float* __restrict__ x, int64_t total,
                                  int64_t h, int64_t w, int64_t top, int64_t left, int64_t ph,
                                  int64_t pw) {
  DC_GRID_LOOP(i, total) {
    const int64_t c = i % w, r = (i / w) % h, plane = i / (w * h);
    x[i] += y[(plane * ph + r + top) * pw + c + left];
  }
}

}  // namespace

void pad_planes(const float* x, float* y, int64_t planes, int64_t h, int64_t w, int64_t top,
                int64_t left, int64_t ph, int64_t pw, cudaStream_t s) {
  const int64_t total = planes * ph * pw;
  k_pad_planes<<<blocks_for(total), kThreads, 0, s>>>(x, y, total, h, w, top, left, ph, pw);
}

void crop_planes_add(const float* y, float* x, int64_t planes, int64_t h, int64_t w, int64_t top,
                     int64_t left, int64_t ph, int64_t pw, cudaStream_t s) {
  const int64_t total = planes * h * w;
  k_crop_planes_add<<<blocks_for(total), kThreads, 0, s>>>(y, x, total, h, w, top, left, ph, pw);
}

}  // namespace dc::cuda
