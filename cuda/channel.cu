// Channel layers: ChannelScale (squeeze-and-excitation's gate), ChannelShuffle
// and ChannelSlice. Grid-stride loops over the output, and one warp per
// (sample, channel) row for the gate's gradient, a sum over the row.
#include <cstdint>

#include "kernels.h"
#include "launch.cuh"
#include "warp_reduce.cuh"

namespace dc::cuda {
namespace {

__global__ void k_scale_fwd(const float* x, const float* g, float* y, int64_t n, int64_t S) {
  DC_GRID_LOOP(i, n) y[i] = x[i] * g[i / S];
}
__global__ void k_scale_bwd_x(const float* g, const float* dy, float* dx, int64_t n, int64_t S) {
  DC_GRID_LOOP(i, n) dx[i] += dy[i] * g[i / S];
}
// The row's sum in double, as the CPU layer adds it.
__global__ void k_scale_bwd_g(const float* x, const float* dy, float* dg, int64_t rows, int64_t S) {
  const int64_t r = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (r >= rows) return;
  double s = 0;
  for (int64_t i = lane; i < S; i += 32) s += double(dy[r * S + i]) * x[r * S + i];
  s = warp_sum(s);
  if (lane == 0) dg[r] += float(s);
}

// i indexes the output [N, C, S]; the input channel of output channel o.
__device__ inline int64_t shuffled(int64_t i, int64_t C, int64_t S, int64_t G) {
  const int64_t s = i % S, o = i / S % C, n = i / (S * C);
  const int64_t c = (o % G) * (C / G) + o / G;
  return (n * C + c) * S + s;
}
__global__ void k_shuffle_fwd(const float* x, float* y, int64_t n, int64_t C, int64_t S,
                              int64_t G) {
  DC_GRID_LOOP(i, n) y[i] = x[shuffled(i, C, S, G)];
}
__global__ void k_shuffle_bwd(const float* dy, float* dx, int64_t n, int64_t C, int64_t S,
                              int64_t G) {
  DC_GRID_LOOP(i, n) dx[shuffled(i, C, S, G)] += dy[i];
}

// i indexes the slice [N, count·S]; its place in [N, C·S].
__device__ inline int64_t sliced(int64_t i, int64_t block, int64_t stride, int64_t off) {
  return i / block * stride + off + i % block;
}
__global__ void k_slice_fwd(const float* x, float* y, int64_t n, int64_t block, int64_t stride,
                            int64_t off) {
  DC_GRID_LOOP(i, n) y[i] = x[sliced(i, block, stride, off)];
}
__global__ void k_slice_bwd(const float* dy, float* dx, int64_t n, int64_t block, int64_t stride,
                            int64_t off) {
  DC_GRID_LOOP(i, n) dx[sliced(i, block, stride, off)] += dy[i];
}

}  // namespace

void channel_scale_forward(const float* x, const float* g, float* y, int64_t NC, int64_t S,
                           cudaStream_t s) {
  k_scale_fwd<<<blocks_for(NC * S), kThreads, 0, s>>>(x, g, y, NC * S, S);
}
void channel_scale_backward(const float* x, const float* g, const float* dy, float* dx, float* dg,
                            int64_t NC, int64_t S, cudaStream_t s) {
  if (dx) k_scale_bwd_x<<<blocks_for(NC * S), kThreads, 0, s>>>(g, dy, dx, NC * S, S);
  if (dg)
    k_scale_bwd_g<<<int((NC * 32 + kThreads - 1) / kThreads), kThreads, 0, s>>>(x, dy, dg, NC, S);
}
void channel_shuffle_forward(const float* x, float* y, int64_t N, int64_t C, int64_t S, int64_t G,
                             cudaStream_t s) {
  k_shuffle_fwd<<<blocks_for(N * C * S), kThreads, 0, s>>>(x, y, N * C * S, C, S, G);
}
void channel_shuffle_backward(const float* dy, float* dx, int64_t N, int64_t C, int64_t S,
                              int64_t G, cudaStream_t s) {
  k_shuffle_bwd<<<blocks_for(N * C * S), kThreads, 0, s>>>(dy, dx, N * C * S, C, S, G);
}
void channel_slice_forward(const float* x, float* y, int64_t N, int64_t C, int64_t S, int64_t start,
                           int64_t count, cudaStream_t s) {
  k_slice_fwd<<<blocks_for(N * count * S), kThreads, 0, s>>>(x, y, N * count * S, count * S, C * S,
                                                             start * S);
}
void channel_slice_backward(const float* dy, float* dx, int64_t N, int64_t C, int64_t S,
                            int64_t start, int64_t count, cudaStream_t s) {
  k_slice_bwd<<<blocks_for(N * count * S), kThreads, 0, s>>>(dy, dx, N * count * S, count * S,
                                                             C * S, start * S);
}

}  // namespace dc::cuda
