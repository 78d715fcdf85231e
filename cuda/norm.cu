// BatchNorm over [N, C, S]: one block per channel, reductions in double (as
// the CPU kernel) so the batch statistics match it to float rounding. Each
// thread walks its elements with ChannelWalk (no division per element).
#include "channel_walk.h"
#include "kernels.h"

namespace dc::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
__device__ T block_sum(T v, T* sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
    __syncthreads();
  }
  T r = sh[0];
  __syncthreads();
  return r;
}

__global__ void k_bn_fwd(const float* x, float* y, const float* gamma, const float* beta, float* rm,
                         float* rv, float* mean_out, float* invstd_out, int N, int C, int S,
                         float momentum, float eps, bool training) {
  __shared__ double sh[kThreads];
  const int c = blockIdx.x;
  const int64_t M = int64_t(N) * S;
  double mean, var;
  if (training) {
    double s = 0;
    ChannelWalk w(threadIdx.x, blockDim.x, S, C);
    for (int64_t j = threadIdx.x; j < M; j += blockDim.x, w.next()) s += x[w.index(c)];
    mean = block_sum(s, sh) / double(M);
    double q = 0;
    w = ChannelWalk(threadIdx.x, blockDim.x, S, C);
    for (int64_t j = threadIdx.x; j < M; j += blockDim.x, w.next()) {
      double d = x[w.index(c)] - mean;
      q += d * d;
    }
    q = block_sum(q, sh);
    var = q / double(M);
    if (threadIdx.x == 0 && M > 1) {
      rm[c] = float((1.0 - momentum) * rm[c] + momentum * mean);
      rv[c] = float((1.0 - momentum) * rv[c] + momentum * q / double(M - 1));
    }
  } else {
    mean = rm[c];
    var = rv[c];
  }
  const double inv = 1.0 / sqrt(var + double(eps));
  if (threadIdx.x == 0) {
    mean_out[c] = float(mean);
    invstd_out[c] = float(inv);
  }
  const float m = float(mean), scale = float(inv * gamma[c]), shift = beta[c];
  ChannelWalk w(threadIdx.x, blockDim.x, S, C);
  for (int64_t j = threadIdx.x; j < M; j += blockDim.x, w.next()) {
    const int64_t i = w.index(c);
    y[i] = (x[i] - m) * scale + shift;
  }
}

__global__ void k_bn_bwd(const float* x, const float* dy, float* dx, const float* gamma,
                         float* dgamma, float* dbeta, const float* mean_in, const float* invstd_in,
                         int N, int C, int S, bool training) {
  __shared__ double sh[kThreads];
  const int c = blockIdx.x;
  const int64_t M = int64_t(N) * S;
  const double mean = mean_in[c], inv = invstd_in[c];
  double sdy = 0, sdyx = 0;
  ChannelWalk w(threadIdx.x, blockDim.x, S, C);
  // A frozen layer (inference form, no dgamma) needs neither sum. The
  // condition is the same for the whole block, as block_sum requires.
  if (training || dgamma) {
    for (int64_t j = threadIdx.x; j < M; j += blockDim.x, w.next()) {
      const int64_t i = w.index(c);
      sdy += dy[i];
      sdyx += dy[i] * (x[i] - mean) * inv;
    }
    sdy = block_sum(sdy, sh);
    sdyx = block_sum(sdyx, sh);
  }
  if (threadIdx.x == 0 && dgamma) {  // null for a frozen layer
    dgamma[c] += float(sdyx);
    dbeta[c] += float(sdy);
  }
  if (!dx) return;
  const double k = gamma[c] * inv;
  const float a = float(k);
  const float b0 = training ? float(-k * sdy / double(M)) : 0.f;
  const float b1 = training ? float(-k * sdyx / double(M) * inv) : 0.f;
  const float m = float(mean);
  w = ChannelWalk(threadIdx.x, blockDim.x, S, C);
  for (int64_t j = threadIdx.x; j < M; j += blockDim.x, w.next()) {
    const int64_t i = w.index(c);
    dx[i] += a * dy[i] + b0 + b1 * (x[i] - m);
  }
}

}  // namespace

void batchnorm_forward(const float* x, float* y, const float* gamma, const float* beta,
                       float* running_mean, float* running_var, float* mean, float* invstd, int N,
                       int C, int S, float momentum, float eps, bool training, cudaStream_t s) {
  k_bn_fwd<<<C, kThreads, 0, s>>>(x, y, gamma, beta, running_mean, running_var, mean, invstd, N, C,
                                  S, momentum, eps, training);
}
void batchnorm_backward(const float* x, const float* dy, float* dx, const float* gamma,
                        float* dgamma, float* dbeta, const float* mean, const float* invstd, int N,
                        int C, int S, bool training, cudaStream_t s) {
  k_bn_bwd<<<C, kThreads, 0, s>>>(x, dy, dx, gamma, dgamma, dbeta, mean, invstd, N, C, S, training);
}

}  // namespace dc::cuda
