// The token layers' own kernels (token_ops.cpp): slabs of rows copied
// between sequences of different lengths (a class token, the first token),
// a row broadcast to every sample, means over the tokens, and per-column
// sums over a strided batch, each in a fixed order.
#include <cstdint>

#include "kernels.h"
#include "launch.cuh"

namespace dc::cuda {
namespace {

__global__ void k_slab_copy(const float* src, float* dst, int64_t outer, int64_t block,
                            int64_t src_total, int64_t src_off, int64_t dst_total, int64_t dst_off,
                            bool acc) {
  DC_GRID_LOOP(i, outer * block) {
    const int64_t o = i / block, j = i % block;
    const float v = src[o * src_total + src_off + j];
    float& d = dst[o * dst_total + dst_off + j];
    d = acc ? d + v : v;
  }
}

__global__ void k_broadcast_row(const float* row, float* y, int64_t outer, int64_t block,
                                int64_t total, int64_t off) {
  DC_GRID_LOOP(i, outer * block) y[i / block * total + off + i % block] = row[i % block];
}

// y[n, e] = mean over t of x[n, t, e], in double, steps in order.
__global__ void k_token_mean(const float* x, float* y, int64_t N, int64_t T, int64_t E) {
  DC_GRID_LOOP(i, N * E) {
    const int64_t n = i / E, e = i % E;
    double s = 0;
    for (int64_t t = 0; t < T; ++t) s += x[(n * T + t) * E + e];
    y[i] = float(s / double(T));
  }
}

__global__ void k_token_mean_bwd(const float* dy, float* dx, int64_t N, int64_t T, int64_t E) {
  const float k = 1.f / float(T);
  DC_GRID_LOOP(i, N * T * E) {
    const int64_t n = i / (T * E), e = i % E;
    dx[i] += dy[n * E + e] * k;
  }
}

// g[j] += sum over o of x[o·total + off + j], in double, rows in order.
__global__ void k_strided_column_sums(const float* x, float* g, int64_t outer, int64_t block,
                                      int64_t total, int64_t off) {
  DC_GRID_LOOP(j, block) {
    double s = 0;
    for (int64_t o = 0; o < outer; ++o) s += x[o * total + off + j];
    g[j] += float(s);
  }
}

}  // namespace

void slab_copy(const float* src, float* dst, int64_t outer, int64_t block, int64_t src_total,
               int64_t src_off, int64_t dst_total, int64_t dst_off, bool accumulate,
               cudaStream_t s) {
  k_slab_copy<<<blocks_for(outer * block), kThreads, 0, s>>>(
      src, dst, outer, block, src_total, src_off, dst_total, dst_off, accumulate);
}

void broadcast_row(const float* row, float* y, int64_t outer, int64_t block, int64_t total,
                   int64_t offset, cudaStream_t s) {
  k_broadcast_row<<<blocks_for(outer * block), kThreads, 0, s>>>(row, y, outer, block, total,
                                                                 offset);
}

void token_mean(const float* x, float* y, int64_t N, int64_t T, int64_t E, cudaStream_t s) {
  k_token_mean<<<blocks_for(N * E), kThreads, 0, s>>>(x, y, N, T, E);
}

void token_mean_backward(const float* dy, float* dx, int64_t N, int64_t T, int64_t E,
                         cudaStream_t s) {
  k_token_mean_bwd<<<blocks_for(N * T * E), kThreads, 0, s>>>(dy, dx, N, T, E);
}

void strided_column_sums(const float* x, float* g, int64_t outer, int64_t block, int64_t total,
                         int64_t offset, cudaStream_t s) {
  k_strided_column_sums<<<blocks_for(block), kThreads, 0, s>>>(x, g, outer, block, total, offset);
}

}  // namespace dc::cuda
