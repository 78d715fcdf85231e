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
#include "transpose_tile.cuh"

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

template <typename In, typename Out>
void transpose_convert(const In* x, Out* y, int64_t B, int64_t R, int64_t K, bool acc,
                       cudaStream_t s) {
  transpose_map(x, y, B, R, K, acc, NoMap{}, s);
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
