// Softmax over the last dimension, one warp per row.
#include <cfloat>

#include "kernels.h"
#include "warp_reduce.cuh"

namespace dc::cuda {
namespace {

__global__ void k_softmax_fwd(const float* x, float* y, int64_t rows, int L) {
  int64_t r = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  if (r >= rows) return;
  const float* xr = x + r * L;
  float* yr = y + r * L;
  float m = -FLT_MAX;
  for (int i = lane; i < L; i += 32) m = fmaxf(m, xr[i]);
  m = warp_max(m);
  float s = 0.f;
  for (int i = lane; i < L; i += 32) {
    float e = expf(xr[i] - m);
    yr[i] = e;
    s += e;
  }
  const float inv = 1.f / warp_sum(s);
  for (int i = lane; i < L; i += 32) yr[i] *= inv;
}

__global__ void k_softmax_bwd(const float* y, const float* dy, float* dx, int64_t rows, int L) {
  int64_t r = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  if (r >= rows) return;
  float d = 0.f;
  for (int i = lane; i < L; i += 32) d += dy[r * L + i] * y[r * L + i];
  d = warp_sum(d);
  for (int i = lane; i < L; i += 32) dx[r * L + i] += y[r * L + i] * (dy[r * L + i] - d);
}

int blocks(int64_t rows) {
  return int((rows * 32 + 255) / 256);
}

}  // namespace

void softmax_forward(const float* x, float* y, int64_t rows, int L, cudaStream_t s) {
  k_softmax_fwd<<<blocks(rows), 256, 0, s>>>(x, y, rows, L);
}
void softmax_backward(const float* y, const float* dy, float* dx, int64_t rows, int L,
                      cudaStream_t s) {
  k_softmax_bwd<<<blocks(rows), 256, 0, s>>>(y, dy, dx, rows, L);
}

}  // namespace dc::cuda
