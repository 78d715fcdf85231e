// Depthwise Conv2D kernels (depthwise.h): forward, input gradient
// (accumulated) and weight and bias gradients (accumulated), straight on the
// float32 NCHW tensors in every precision. In bf16/fp16 x, w and dy are
// rounded to 16 bits as they are loaded and the sums kept in float32, and
// y, dx and dw are rounded to 16 bits once, as the cuDNN path computes
// them (its 16-bit copies in, 16-bit results out); the bias and its
// gradient stay float32 there too.
//
// Forward and input gradient: a block covers (part of) one plane, one
// thread per element, the plane's filter read by every thread at the same
// address. Weight gradient: a fixed-order reduction (no float atomics), so
// results repeat from run to run and between CUDA graph replays.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "depthwise.h"
#include "kernels.h"
#include "launch.cuh"
#include "warp_reduce.cuh"

namespace dc::cuda {
namespace {

// 0: float32, 1: bf16, 2: fp16.
template <int P>
struct Round {
  __host__ __device__ float operator()(float v) const {
    if constexpr (P == 1)
      return __bfloat162float(__float2bfloat16_rn(v));
    else if constexpr (P == 2)
      return __half2float(__float2half_rn(v));
    else
      return v;
  }
};

template <int KH_, int KW_, int S_, int P>
__global__ void k_dw_forward(DwDims d, FastDiv fow, const float* __restrict__ x,
                             const float* __restrict__ w, const float* __restrict__ b,
                             float* __restrict__ y, FusedRelu relu) {
  const int plane = int(blockIdx.x), OC = d.C * d.M;
  const int oc = plane % OC, n = plane / OC, c = oc / d.M;
  const int ohw = d.OH * d.OW;
  const int pos = int(blockIdx.y) * int(blockDim.x) + int(threadIdx.x);
  if (pos >= ohw) return;
  const int oh = int(fow.div(uint32_t(pos))), ow = pos - oh * d.OW;
  const float* xp = x + (int64_t(n) * d.C + c) * (int64_t(d.H) * d.W);
  const Round<P> r;
  float v;
  if constexpr (KH_ > 0) {
    // The filter in registers, rounded once.
    float wr[KH_ * KW_];
#pragma unroll
    for (int t = 0; t < KH_ * KW_; ++t) wr[t] = r(w[oc * KH_ * KW_ + t]);
    v = dw_output_at<KH_, KW_, S_>(d, xp, wr, oh, ow, r, DwIdentity{});
  } else {
    v = dw_output_at<0, 0, 0>(d, xp, w + int64_t(oc) * d.KH * d.KW, oh, ow, r, r);
  }
  v = r(v);
  if (b) v += b[oc];
  if (relu.on) v = relu_clamp(v, relu.hi);
  y[int64_t(plane) * ohw + pos] = v;
}

template <int KH_, int KW_, int S_, int P>
__global__ void k_dw_backward_data(DwDims d, FastDiv fw, const float* __restrict__ dy,
                                   const float* __restrict__ w, float* __restrict__ dx) {
  const int plane = int(blockIdx.x);  // n·C + c
  const int c = plane % d.C, n = plane / d.C;
  const int hw = d.H * d.W;
  const int pos = int(blockIdx.y) * int(blockDim.x) + int(threadIdx.x);
  if (pos >= hw) return;
  const int ih = int(fw.div(uint32_t(pos))), iw = pos - ih * d.W;
  const int OC = d.C * d.M, kk = d.KH * d.KW;
  const float* dyp = dy + (int64_t(n) * OC + int64_t(c) * d.M) * (int64_t(d.OH) * d.OW);
  const float* wk = w + int64_t(c) * d.M * kk;
  const Round<P> r;
  const float v = dw_input_grad_at<KH_, KW_, S_>(d, dyp, wk, ih, iw, r, r);
  dx[int64_t(plane) * hw + pos] += r(v);
}

// Sums v over the block (kDwThreads threads) in a fixed order; every
// thread gets the result. sh: kDwThreads / 32 floats.
__device__ inline float block_sum(float v, float* sh) {
  v = warp_sum(v);
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  float t = 0.f;
  for (int k = 0; k < kDwThreads / 32; ++k) t += sh[k];
  __syncthreads();
  return t;
}

// Block (oc, p[, tap]): part p of output channel oc's N·OH·OW terms. With
// the kernel size fixed (KH_ > 0) every tap and the bias are summed at
// once in registers; otherwise blockIdx.z picks one tap (KH·KW: the bias).
template <int KH_, int KW_, int S_, int P>
__global__ void __launch_bounds__(kDwThreads)
    k_dw_weight_parts(DwDims d, FastDiv fohw, FastDiv fow, const float* __restrict__ x,
                      const float* __restrict__ dy, float* __restrict__ parts, int64_t chunk,
                      int count) {
  constexpr int T = KH_ > 0 ? KH_ * KW_ + 1 : 1;
  __shared__ float sh[kDwThreads / 32];
  const int oc = int(blockIdx.x), p = int(blockIdx.y), c = oc / d.M, OC = d.C * d.M;
  const int kk = d.KH * d.KW, tap = KH_ > 0 ? 0 : int(blockIdx.z);
  const int ohw = d.OH * d.OW, total = d.N * ohw;
  const int64_t lo64 = int64_t(p) * chunk, hi64 = lo64 + chunk < total ? lo64 + chunk : total;
  const int lo = int(lo64), hi = int(hi64);
  const int64_t hw = int64_t(d.H) * d.W;
  const Round<P> r;
  float acc[T];
#pragma unroll
  for (int t = 0; t < T; ++t) acc[t] = 0.f;
  for (int e = lo + int(threadIdx.x); e < hi; e += kDwThreads) {
    const int n = int(fohw.div(uint32_t(e))), pos = e - n * ohw;
    const int oh = int(fow.div(uint32_t(pos))), ow = pos - oh * d.OW;
    const float g = dy[(int64_t(n) * OC + oc) * ohw + pos];
    const float* xp = x + (int64_t(n) * d.C + c) * hw;
    if constexpr (KH_ > 0) {
      acc[T - 1] += g;  // the bias: float32 dy, as the cuDNN path's bias_grad
      dw_weight_terms<KH_, KW_, S_>(d, xp, r(g), oh, ow, acc, r);
    } else {
      acc[0] += tap == kk ? g : dw_weight_term(d, xp, r(g), oh, ow, tap, r);
    }
  }
#pragma unroll
  for (int t = 0; t < T; ++t) {
    const float s = block_sum(acc[t], sh);
    if (threadIdx.x == 0) parts[(int64_t(oc) * (kk + 1) + tap + t) * count + p] = s;
  }
}

// One thread per (oc, tap): the parts in order, then into dw (rounded in
// 16-bit precisions) or, for the bias, db.
template <int P>
__global__ void k_dw_weight_total(const float* __restrict__ parts, int count, int OC, int kk,
                                  float* __restrict__ dw, float* __restrict__ db) {
  const int i = int(blockIdx.x) * int(blockDim.x) + int(threadIdx.x);
  if (i >= OC * (kk + 1)) return;
  const int oc = i / (kk + 1), tap = i - oc * (kk + 1);
  double s = 0;
  for (int p = 0; p < count; ++p) s += parts[int64_t(i) * count + p];
  if (tap < kk) {
    if (dw) dw[int64_t(oc) * kk + tap] += Round<P>{}(float(s));
  } else if (db) {
    db[oc] += float(s);
  }
}

template <int P>
void forward_p(const DwDims& d, const float* x, const float* w, const float* b, float* y,
               FusedRelu r, cudaStream_t s) {
  const int ohw = d.OH * d.OW, threads = dw_plane_threads(ohw);
  const dim3 grid(unsigned(d.N * d.C * d.M), unsigned((ohw + threads - 1) / threads));
  const FastDiv fow(uint32_t(d.OW));
  const DwVariant v = dw_variant(d);
  if (v.k == 3 && v.s == 1)
    k_dw_forward<3, 3, 1, P><<<grid, threads, 0, s>>>(d, fow, x, w, b, y, r);
  else if (v.k == 3 && v.s == 2)
    k_dw_forward<3, 3, 2, P><<<grid, threads, 0, s>>>(d, fow, x, w, b, y, r);
  else if (v.k == 5 && v.s == 1)
    k_dw_forward<5, 5, 1, P><<<grid, threads, 0, s>>>(d, fow, x, w, b, y, r);
  else if (v.k == 5 && v.s == 2)
    k_dw_forward<5, 5, 2, P><<<grid, threads, 0, s>>>(d, fow, x, w, b, y, r);
  else
    k_dw_forward<0, 0, 0, P><<<grid, threads, 0, s>>>(d, fow, x, w, b, y, r);
}

template <int P>
void backward_data_p(const DwDims& d, const float* dy, const float* w, float* dx, cudaStream_t s) {
  const int hw = d.H * d.W, threads = dw_plane_threads(hw);
  const dim3 grid(unsigned(d.N * d.C), unsigned((hw + threads - 1) / threads));
  const FastDiv fw(uint32_t(d.W));
  const DwVariant v = dw_variant(d);
  if (v.k == 3 && v.s == 1)
    k_dw_backward_data<3, 3, 1, P><<<grid, threads, 0, s>>>(d, fw, dy, w, dx);
  else if (v.k == 3 && v.s == 2)
    k_dw_backward_data<3, 3, 2, P><<<grid, threads, 0, s>>>(d, fw, dy, w, dx);
  else if (v.k == 5 && v.s == 1)
    k_dw_backward_data<5, 5, 1, P><<<grid, threads, 0, s>>>(d, fw, dy, w, dx);
  else if (v.k == 5 && v.s == 2)
    k_dw_backward_data<5, 5, 2, P><<<grid, threads, 0, s>>>(d, fw, dy, w, dx);
  else
    k_dw_backward_data<0, 0, 0, P><<<grid, threads, 0, s>>>(d, fw, dy, w, dx);
}

template <int P>
void backward_weight_p(const DwDims& d, const float* x, const float* dy, float* dw, float* db,
                       float* parts, cudaStream_t s) {
  const int OC = d.C * d.M, kk = d.KH * d.KW, ohw = d.OH * d.OW;
  const ChannelParts cp = channel_parts(OC, int64_t(d.N) * ohw);
  const FastDiv fohw{uint32_t(ohw)}, fow{uint32_t(d.OW)};
  const DwVariant v = dw_variant(d);
  const dim3 grid(unsigned(OC), unsigned(cp.count));
  if (v.k == 3 && v.s == 1)
    k_dw_weight_parts<3, 3, 1, P>
        <<<grid, kDwThreads, 0, s>>>(d, fohw, fow, x, dy, parts, cp.chunk, cp.count);
  else if (v.k == 3 && v.s == 2)
    k_dw_weight_parts<3, 3, 2, P>
        <<<grid, kDwThreads, 0, s>>>(d, fohw, fow, x, dy, parts, cp.chunk, cp.count);
  else if (v.k == 5 && v.s == 1)
    k_dw_weight_parts<5, 5, 1, P>
        <<<grid, kDwThreads, 0, s>>>(d, fohw, fow, x, dy, parts, cp.chunk, cp.count);
  else if (v.k == 5 && v.s == 2)
    k_dw_weight_parts<5, 5, 2, P>
        <<<grid, kDwThreads, 0, s>>>(d, fohw, fow, x, dy, parts, cp.chunk, cp.count);
  else
    k_dw_weight_parts<0, 0, 0, P>
        <<<dim3(unsigned(OC), unsigned(cp.count), unsigned(kk + 1)), kDwThreads, 0, s>>>(
            d, fohw, fow, x, dy, parts, cp.chunk, cp.count);
  const int totals = OC * (kk + 1);
  k_dw_weight_total<P>
      <<<(totals + kThreads - 1) / kThreads, kThreads, 0, s>>>(parts, cp.count, OC, kk, dw, db);
}

}  // namespace

void depthwise_forward(const DwDims& d, const float* x, const float* w, const float* b, float* y,
                       bool reduced, Low low, FusedRelu r, cudaStream_t s) {
  if (!reduced)
    forward_p<0>(d, x, w, b, y, r, s);
  else if (low == Low::Bf16)
    forward_p<1>(d, x, w, b, y, r, s);
  else
    forward_p<2>(d, x, w, b, y, r, s);
}

void depthwise_backward_data(const DwDims& d, const float* dy, const float* w, float* dx,
                             bool reduced, Low low, cudaStream_t s) {
  if (!reduced)
    backward_data_p<0>(d, dy, w, dx, s);
  else if (low == Low::Bf16)
    backward_data_p<1>(d, dy, w, dx, s);
  else
    backward_data_p<2>(d, dy, w, dx, s);
}

void depthwise_backward_weight(const DwDims& d, const float* x, const float* dy, float* dw,
                               float* db, void* scratch, bool reduced, Low low, cudaStream_t s) {
  auto* parts = static_cast<float*>(scratch);
  if (!reduced)
    backward_weight_p<0>(d, x, dy, dw, db, parts, s);
  else if (low == Low::Bf16)
    backward_weight_p<1>(d, x, dy, dw, db, parts, s);
  else
    backward_weight_p<2>(d, x, dy, dw, db, parts, s);
}

}  // namespace dc::cuda
