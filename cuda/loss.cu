// Losses with their gradient in one pass, one warp per sample. The batch's
// loss sum and top-1 hits accumulate in device memory, so a training step
// needs no copy back to the host.
#include <algorithm>
#include <cfloat>

#include "kernels.h"
#include "warp_reduce.cuh"

namespace dc::cuda {
namespace {

// First index of the maximum (the CPU metric's tie rule).
__device__ inline int warp_argmax(const float* z, int C, int lane) {
  float best = -FLT_MAX;
  int bi = C;
  for (int c = lane; c < C; c += 32)
    if (z[c] > best || bi == C) {
      if (bi != C && !(z[c] > best)) continue;
      best = z[c];
      bi = c;
    }
  for (int o = 16; o > 0; o >>= 1) {
    float ob = __shfl_xor_sync(0xffffffffu, best, o);
    int oi = __shfl_xor_sync(0xffffffffu, bi, o);
    if (ob > best || (ob == best && oi < bi)) {
      best = ob;
      bi = oi;
    }
  }
  return bi;
}

__global__ void k_loss(LossKind kind, const float* out, const int32_t* labels, const float* values,
                       float* dout, int N, int C, float smoothing, bool classification,
                       LossStats* st) {
  const int n = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (n >= N) return;
  const float* z = out + int64_t(n) * C;
  float* g = dout + int64_t(n) * C;
  const int y = labels ? labels[n] : -1;
  double row = 0;
  if (kind == LossKind::SoftmaxCE) {
    float m = -FLT_MAX;
    for (int c = lane; c < C; c += 32) m = fmaxf(m, z[c]);
    m = warp_max(m);
    double se = 0, sz = 0;
    for (int c = lane; c < C; c += 32) {
      se += exp(double(z[c]) - m);
      sz += z[c];
    }
    se = warp_sum(se);
    sz = warp_sum(sz);
    const double lse = m + log(se), s = smoothing, inv_n = 1.0 / N;
    for (int c = lane; c < C; c += 32) {
      double p = exp(double(z[c]) - lse);
      double q = s / C + (c == y ? 1.0 - s : 0.0);
      g[c] = float((p - q) * inv_n);
    }
    const float zy = (y >= 0 && y < C) ? z[y] : NAN;
    row = lse - (1.0 - s) * zy - s / C * sz;
  } else {
    const double inv = 1.0 / (double(N) * C);
    double part = 0;
    for (int c = lane; c < C; c += 32) {
      const int64_t i = int64_t(n) * C + c;
      double t = values ? double(values[i]) : C > 1 ? (y == c ? 1.0 : 0.0) : double(y);
      double zz = z[c], grad, term;
      if (kind == LossKind::BCE) {
        double e = exp(-fabs(zz));
        double sig = zz >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
        grad = sig - t;
        term = fmax(zz, 0.0) - zz * t + log1p(e);
      } else {
        double d = zz - t;
        grad = 2.0 * d;
        term = d * d;
      }
      g[c] = float(grad * inv);
      part += term;
    }
    // The caller's mean is over N*C values; per-sample sums are scaled so
    // that loss_sum / samples is that mean.
    row = warp_sum(part) / C;
  }
  const int pred = warp_argmax(z, C, lane);
  if (lane == 0) {
    atomicAdd(&st->loss_sum, row);
    atomicAdd(&st->samples, 1ull);
    if (classification && pred == y) atomicAdd(&st->correct, 1ull);
    if (!isfinite(row)) atomicOr(&st->nonfinite, 1u);
  }
}

}  // namespace

void loss_forward_backward(LossKind k, const float* out, const int32_t* labels, const float* values,
                           float* dout, int N, int C, float smoothing, bool classification,
                           LossStats* stats, cudaStream_t s) {
  const int blocks = std::max(1, (N * 32 + 255) / 256);
  k_loss<<<blocks, 256, 0, s>>>(k, out, labels, values, dout, N, C, smoothing, classification,
                                stats);
}

}  // namespace dc::cuda
