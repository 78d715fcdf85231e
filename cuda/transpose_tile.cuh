#pragma once
// [B, R, K] -> [B, K, R] through a 32x32 tile in shared memory, so that both
// the reads and the writes are coalesced, with a per-value map on the way:
// the float32 <-> 16-bit conversions to and from cuDNN's channels-last copies
// (precision.cu) and BatchNorm's apply writing a convolution's 16-bit NHWC
// input (norm.cu) share it. Include from .cu files only.
#include <algorithm>
#include <cstdint>

#include "low_values.cuh"

namespace dc::cuda {

// The plain conversion's map.
struct NoMap {
  __device__ float operator()(float v, int64_t /*r*/) const { return v; }
};

constexpr int kTile = 32, kTileRows = 8;
constexpr int64_t kMaxGridYZ = 65535;  // what the grid's y and z hold

// y[b, k, r] = f(x[b, r, k], r) (added onto y when acc and Out is float;
// the +1 column keeps the transposed reads off a single bank). Grid: (K/32,
// R/32 up to 65535 with the blocks looping over the rest, B up to 65535),
// 32x8 threads.
template <typename In, typename Out, typename F>
__global__ void k_transpose_map(const In* x, Out* y, int64_t R, int64_t K, bool acc, F f) {
  __shared__ float tile[kTile][kTile + 1];
  const int64_t b = blockIdx.z, k0 = int64_t(blockIdx.x) * kTile;
  const In* xb = x + b * R * K;
  Out* yb = y + b * R * K;
  // R (a plane of 2 M pixels and more) can need more tiles than the grid's
  // y holds: each block then takes every gridDim.y-th tile.
  for (int64_t r0 = int64_t(blockIdx.y) * kTile; r0 < R; r0 += int64_t(gridDim.y) * kTile) {
    for (int j = threadIdx.y; j < kTile; j += kTileRows) {
      const int64_t r = r0 + j, k = k0 + threadIdx.x;
      if (r < R && k < K) tile[j][threadIdx.x] = f(widen(xb[r * K + k]), r);
    }
    __syncthreads();
    for (int j = threadIdx.y; j < kTile; j += kTileRows) {
      const int64_t k = k0 + j, r = r0 + threadIdx.x;
      if (r < R && k < K) put(yb[k * R + r], tile[threadIdx.x][j], acc);
    }
    __syncthreads();  // the tile is refilled next round
  }
}

// Launches k_transpose_map over all B matrices, kMaxGridYZ at a time (the
// grid's z holds no more).
template <typename In, typename Out, typename F>
void transpose_map(const In* x, Out* y, int64_t B, int64_t R, int64_t K, bool acc, F f,
                   cudaStream_t s) {
  const int64_t ry = std::min<int64_t>((R + kTile - 1) / kTile, kMaxGridYZ);
  const dim3 block(kTile, kTileRows);
  for (int64_t b = 0; b < B; b += kMaxGridYZ) {
    const dim3 grid(unsigned((K + kTile - 1) / kTile), unsigned(ry),
                    unsigned(std::min(B - b, kMaxGridYZ)));
    const int64_t o = b * R * K;
    k_transpose_map<<<grid, block, 0, s>>>(x + o, y + o, R, K, acc, f);
  }
}

}  // namespace dc::cuda
