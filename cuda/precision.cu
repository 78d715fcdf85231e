// Mixed precision: float32 <-> bfloat16/float16 conversions for the
// tensor-core GEMMs and convolutions, and fp16's dynamic loss scaling kept
// entirely on the device (scale, skip flag and growth counter live in one
// AmpState), so a training step still never waits for the host.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "channel_walk.h"
#include "kernels.h"
#include "launch.cuh"

namespace dc::cuda {
namespace {

// Round to nearest even, as torch's .to(bfloat16) / .half() do; fp16
// overflows to inf, which the loss scaler detects.
__global__ void k_to_bf16(const float* x, __nv_bfloat16* y, int64_t n) {
  DC_GRID_LOOP(i, n) y[i] = __float2bfloat16_rn(x[i]);
}
__global__ void k_to_fp16(const float* x, __half* y, int64_t n) {
  DC_GRID_LOOP(i, n) y[i] = __float2half_rn(x[i]);
}
__global__ void k_from_bf16(const __nv_bfloat16* x, float* y, int64_t n, bool acc) {
  DC_GRID_LOOP(i, n) {
    float v = __bfloat162float(x[i]);
    y[i] = acc ? y[i] + v : v;
  }
}
__global__ void k_from_fp16(const __half* x, float* y, int64_t n, bool acc) {
  DC_GRID_LOOP(i, n) {
    float v = __half2float(x[i]);
    y[i] = acc ? y[i] + v : v;
  }
}

__device__ inline float widen(float v) {
  return v;
}
__device__ inline float widen(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
__device__ inline float widen(__half v) {
  return __half2float(v);
}
__device__ inline void put(float& d, float v, bool acc) {
  d = acc ? d + v : v;
}
__device__ inline void put(__nv_bfloat16& d, float v, bool) {
  d = __float2bfloat16_rn(v);
}
__device__ inline void put(__half& d, float v, bool) {
  d = __float2half_rn(v);
}

// x [B, R, K] -> y [B, K, R] through a 32x32 tile in shared memory, so that
// both the reads and the writes are coalesced (the +1 column keeps the
// transposed reads off a single bank). Grid: (K/32, R/32 up to 65535 with
// the blocks looping over the rest, B up to 65535), 32x8 threads.
constexpr int kTile = 32, kTileRows = 8;
constexpr int64_t kMaxGridYZ = 65535;  // what the grid's y and z hold
template <typename In, typename Out>
__global__ void k_transpose_convert(const In* x, Out* y, int64_t R, int64_t K, bool acc) {
  __shared__ float tile[kTile][kTile + 1];
  const int64_t b = blockIdx.z, k0 = int64_t(blockIdx.x) * kTile;
  const In* xb = x + b * R * K;
  Out* yb = y + b * R * K;
  // R (a plane of 2 M pixels and more) can need more tiles than the grid's
  // y holds: each block then takes every gridDim.y-th tile.
  for (int64_t r0 = int64_t(blockIdx.y) * kTile; r0 < R; r0 += int64_t(gridDim.y) * kTile) {
    for (int j = threadIdx.y; j < kTile; j += kTileRows) {
      const int64_t r = r0 + j, k = k0 + threadIdx.x;
      if (r < R && k < K) tile[j][threadIdx.x] = widen(xb[r * K + k]);
    }
    __syncthreads();
    for (int j = threadIdx.y; j < kTile; j += kTileRows) {
      const int64_t k = k0 + j, r = r0 + threadIdx.x;
      if (r < R && k < K) put(yb[k * R + r], tile[threadIdx.x][j], acc);
    }
    __syncthreads();  // the tile is refilled next round
  }
}

// Launches k_transpose_convert over all B matrices, kMaxGridYZ at a time
// (the grid's z holds no more).
template <typename In, typename Out>
void transpose_convert(const In* x, Out* y, int64_t B, int64_t R, int64_t K, bool acc,
                       cudaStream_t s) {
  const int64_t ry = std::min<int64_t>((R + kTile - 1) / kTile, kMaxGridYZ);
  const dim3 block(kTile, kTileRows);
  for (int64_t b = 0; b < B; b += kMaxGridYZ) {
    const dim3 grid(unsigned((K + kTile - 1) / kTile), unsigned(ry),
                    unsigned(std::min(B - b, kMaxGridYZ)));
    const int64_t o = b * R * K;
    k_transpose_convert<<<grid, block, 0, s>>>(x + o, y + o, R, K, acc);
  }
}

// One thread per (output pixel, channel): channels fastest, so both the
// reads of x and the writes of each tap's block of columns are coalesced.
template <typename T>
__global__ void k_im2col_nhwc(const T* x, T* col, int64_t total, Im2colDims d, FastDiv byc,
                              FastDiv byohw, FastDiv byow) {
  const int64_t K = int64_t(d.KH) * d.KW * d.C;
  DC_GRID_LOOP(i, total) {
    const uint32_t m = byc.div(uint32_t(i)), c = uint32_t(i) - m * uint32_t(d.C);
    const uint32_t n = byohw.div(m), p = m - n * uint32_t(d.OH * d.OW);
    const uint32_t oh = byow.div(p), ow = p - oh * uint32_t(d.OW);
    T* row = col + int64_t(m) * K + c;
    for (int kh = 0; kh < d.KH; ++kh) {
      const int ih = int(oh) * d.SH - d.PH + kh * d.DH;
      for (int kw = 0; kw < d.KW; ++kw) {
        const int iw = int(ow) * d.SW - d.PW + kw * d.DW;
        const bool in = ih >= 0 && ih < d.H && iw >= 0 && iw < d.W;
        row[(kh * d.KW + kw) * d.C] =
            in ? x[((int64_t(n) * d.H + ih) * d.W + iw) * d.C + c] : T(0.f);
      }
    }
  }
}

__global__ void k_amp_scale(float* x, int64_t n, const AmpState* st) {
  const float s = st->scale;
  DC_GRID_LOOP(i, n) x[i] *= s;
}

__global__ void k_amp_unscale(float* g, int64_t n, AmpState* st) {
  const float inv = 1.0f / st->scale;
  bool bad = false;
  DC_GRID_LOOP(i, n) {
    float v = g[i] * inv;
    bad |= !isfinite(v);
    g[i] = v;
  }
  // One write per warp that saw a non-finite value.
  if (__any_sync(0xffffffffu, bad) && (threadIdx.x & 31) == 0) st->found_inf = 1;
}

// torch.amp.GradScaler's rule: halve on overflow (the step was skipped),
// double after `interval` clean steps in a row.
__global__ void k_amp_update(AmpState* st, int interval) {
  if (st->found_inf) {
    st->scale = fmaxf(st->scale * 0.5f, 1.0f);
    st->good_steps = 0;
    ++st->skipped;
  } else if (++st->good_steps >= interval) {
    st->scale = fminf(st->scale * 2.0f, 16777216.0f);
    st->good_steps = 0;
  }
  st->found_inf = 0;
}

}  // namespace

// Typed pointers are made before the launches (clang-format cannot wrap a
// launch whose arguments hold template brackets).
void to_low(const float* x, void* y, int64_t n, Low t, cudaStream_t s) {
  auto* yb = static_cast<__nv_bfloat16*>(y);
  auto* yh = static_cast<__half*>(y);
  if (t == Low::Bf16)
    k_to_bf16<<<blocks_for(n), kThreads, 0, s>>>(x, yb, n);
  else
    k_to_fp16<<<blocks_for(n), kThreads, 0, s>>>(x, yh, n);
}

void from_low(const void* x, float* y, int64_t n, Low t, bool accumulate, cudaStream_t s) {
  const auto* xb = static_cast<const __nv_bfloat16*>(x);
  const auto* xh = static_cast<const __half*>(x);
  if (t == Low::Bf16)
    k_from_bf16<<<blocks_for(n), kThreads, 0, s>>>(xb, y, n, accumulate);
  else
    k_from_fp16<<<blocks_for(n), kThreads, 0, s>>>(xh, y, n, accumulate);
}

void to_low_transposed(const float* x, void* y, int64_t B, int64_t R, int64_t K, Low t,
                       cudaStream_t s) {
  if (t == Low::Bf16)
    transpose_convert(x, static_cast<__nv_bfloat16*>(y), B, R, K, false, s);
  else
    transpose_convert(x, static_cast<__half*>(y), B, R, K, false, s);
}

void from_low_transposed(const void* x, float* y, int64_t B, int64_t R, int64_t K, Low t,
                         bool accumulate, cudaStream_t s) {
  if (t == Low::Bf16)
    transpose_convert(static_cast<const __nv_bfloat16*>(x), y, B, R, K, accumulate, s);
  else
    transpose_convert(static_cast<const __half*>(x), y, B, R, K, accumulate, s);
}

void transpose(const float* x, float* y, int64_t B, int64_t R, int64_t K, cudaStream_t s) {
  transpose_convert(x, y, B, R, K, false, s);
}

void transpose_accumulate(const float* x, float* y, int64_t B, int64_t R, int64_t K,
                          cudaStream_t s) {
  transpose_convert(x, y, B, R, K, true, s);
}

// n·OH·OW·C < 2^31 (the caller's chunks keep it so), for the 32-bit divisions.
void im2col_nhwc_low(const void* x, void* col, int64_t n, const Im2colDims& d, cudaStream_t s) {
  const int64_t total = n * d.OH * d.OW * d.C;
  const FastDiv byc(uint32_t(d.C)), byohw(uint32_t(d.OH * d.OW)), byow(uint32_t(d.OW));
  // bf16 and fp16 are both 2-byte values copied or zeroed, never computed
  // with: one instantiation serves both.
  const auto* xb = static_cast<const __nv_bfloat16*>(x);
  auto* cb = static_cast<__nv_bfloat16*>(col);
  k_im2col_nhwc<<<blocks_for(total), kThreads, 0, s>>>(xb, cb, total, d, byc, byohw, byow);
}

void amp_scale(float* x, int64_t n, const AmpState* st, cudaStream_t s) {
  k_amp_scale<<<blocks_for(n), kThreads, 0, s>>>(x, n, st);
}

void amp_unscale_check(float* g, int64_t n, AmpState* st, cudaStream_t s) {
  k_amp_unscale<<<blocks_for(n), kThreads, 0, s>>>(g, n, st);
}

void amp_update(AmpState* st, int growth_interval, cudaStream_t s) {
  k_amp_update<<<1, 1, 0, s>>>(st, growth_interval);
}

}  // namespace dc::cuda
