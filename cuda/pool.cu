// MaxPool2D, AvgPool2D (padding counted, as PyTorch's default) and
// GlobalAvgPool2D. Backward recomputes the max position from the input
// rather than storing indices; windows can overlap, so it adds atomically.
#include <cfloat>

#include "kernels.h"
#include "warp_reduce.cuh"

namespace dc::cuda {
namespace {

constexpr int kThreads = 256;
inline int blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return int(b > 0 ? (b < (1 << 30) ? b : (1 << 30)) : 1);
}

// First maximum wins and NaN propagates, as in the CPU kernel.
__device__ inline int64_t max_pos(const PoolDims& d, const float* xp, int oh, int ow, float& best) {
  best = -FLT_MAX;
  int64_t pos = -1;
  bool any = false;
  for (int kh = 0; kh < d.KH; ++kh) {
    int ih = oh * d.SH - d.PH + kh;
    if (ih < 0 || ih >= d.H) continue;
    for (int kw = 0; kw < d.KW; ++kw) {
      int iw = ow * d.SW - d.PW + kw;
      if (iw < 0 || iw >= d.W) continue;
      float v = xp[ih * d.W + iw];
      if (!any || v > best || v != v) {
        if (any && best != best) continue;  // keep the first NaN
        best = v;
        pos = ih * d.W + iw;
        any = true;
      }
    }
  }
  return pos;
}

__global__ void k_maxpool_fwd(PoolDims d, const float* x, float* y, int64_t total) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  int ow = int(i % d.OW), oh = int(i / d.OW % d.OH);
  int64_t plane = i / (int64_t(d.OH) * d.OW);
  float best;
  max_pos(d, x + plane * d.H * d.W, oh, ow, best);
  y[i] = best;
}
__global__ void k_maxpool_bwd(PoolDims d, const float* x, const float* dy, float* dx,
                              int64_t total) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  int ow = int(i % d.OW), oh = int(i / d.OW % d.OH);
  int64_t plane = i / (int64_t(d.OH) * d.OW);
  float best;
  int64_t p = max_pos(d, x + plane * d.H * d.W, oh, ow, best);
  if (p >= 0) atomicAdd(dx + plane * d.H * d.W + p, dy[i]);
}
__global__ void k_avgpool_fwd(PoolDims d, const float* x, float* y, int64_t total) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  int ow = int(i % d.OW), oh = int(i / d.OW % d.OH);
  const float* xp = x + i / (int64_t(d.OH) * d.OW) * d.H * d.W;
  float s = 0.f;
  for (int kh = 0; kh < d.KH; ++kh) {
    int ih = oh * d.SH - d.PH + kh;
    if (ih < 0 || ih >= d.H) continue;
    for (int kw = 0; kw < d.KW; ++kw) {
      int iw = ow * d.SW - d.PW + kw;
      if (iw >= 0 && iw < d.W) s += xp[ih * d.W + iw];
    }
  }
  y[i] = s / float(d.KH * d.KW);
}
__global__ void k_avgpool_bwd(PoolDims d, const float* dy, float* dx, int64_t total) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  int ow = int(i % d.OW), oh = int(i / d.OW % d.OH);
  float* dxp = dx + i / (int64_t(d.OH) * d.OW) * d.H * d.W;
  float g = dy[i] / float(d.KH * d.KW);
  for (int kh = 0; kh < d.KH; ++kh) {
    int ih = oh * d.SH - d.PH + kh;
    if (ih < 0 || ih >= d.H) continue;
    for (int kw = 0; kw < d.KW; ++kw) {
      int iw = ow * d.SW - d.PW + kw;
      if (iw >= 0 && iw < d.W) atomicAdd(dxp + ih * d.W + iw, g);
    }
  }
}
// One warp per plane.
__global__ void k_gap_fwd(const float* x, float* y, int64_t planes, int64_t hw) {
  int64_t p = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  if (p >= planes) return;
  float s = 0.f;
  for (int64_t i = lane; i < hw; i += 32) s += x[p * hw + i];
  s = warp_sum(s);
  if (lane == 0) y[p] = s / float(hw);
}
__global__ void k_gap_bwd(const float* dy, float* dx, int64_t planes, int64_t hw) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= planes * hw) return;
  dx[i] += dy[i / hw] / float(hw);
}

int64_t outputs(const PoolDims& d) {
  return int64_t(d.N) * d.C * d.OH * d.OW;
}

}  // namespace

void maxpool_forward(const PoolDims& d, const float* x, float* y, cudaStream_t s) {
  int64_t t = outputs(d);
  k_maxpool_fwd<<<blocks_for(t), kThreads, 0, s>>>(d, x, y, t);
}
void maxpool_backward(const PoolDims& d, const float* x, const float* dy, float* dx,
                      cudaStream_t s) {
  int64_t t = outputs(d);
  k_maxpool_bwd<<<blocks_for(t), kThreads, 0, s>>>(d, x, dy, dx, t);
}
void avgpool_forward(const PoolDims& d, const float* x, float* y, cudaStream_t s) {
  int64_t t = outputs(d);
  k_avgpool_fwd<<<blocks_for(t), kThreads, 0, s>>>(d, x, y, t);
}
void avgpool_backward(const PoolDims& d, const float* dy, float* dx, cudaStream_t s) {
  int64_t t = outputs(d);
  k_avgpool_bwd<<<blocks_for(t), kThreads, 0, s>>>(d, dy, dx, t);
}
void global_avgpool_forward(const float* x, float* y, int64_t planes, int64_t hw, cudaStream_t s) {
  k_gap_fwd<<<blocks_for(planes * 32), kThreads, 0, s>>>(x, y, planes, hw);
}
void global_avgpool_backward(const float* dy, float* dx, int64_t planes, int64_t hw,
                             cudaStream_t s) {
  k_gap_bwd<<<blocks_for(planes * hw), kThreads, 0, s>>>(dy, dx, planes, hw);
}

}  // namespace dc::cuda
