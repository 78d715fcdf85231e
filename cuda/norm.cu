// BatchNorm over [N, C, S]. Training sums each channel's values and squares
// over many blocks (channel_sums.cuh; in double, as the CPU kernel, so the
// batch statistics match it to float rounding), one small kernel per
// channel turns the sums into the statistics and the per-channel
// coefficients, and a pointwise kernel over the whole tensor applies them.
// Backward runs the same three steps with the gradient sums.
#include "channel_sums.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace dc::cuda {
namespace {

// Sums of d and d² for d = x − K (forward), K the channel's first value:
// the variance is then E[d²] − E[d]², which does not cancel away when the
// mean is large against the spread, as E[x²] − E[x]² would (the CPU's
// two-pass form would cost a second read of the tensor).
__device__ inline float moment_shift(const float* x, int64_t S, int c) {
  return x[int64_t(c) * S];
}
struct MomentTerms {
  const float* x;
  int64_t S;
  __device__ void operator()(float4 v, float4, int c, int lanes, float& s0, float& s1) const {
    const float k = moment_shift(x, S, c);
    const float d0 = v.x - k;
    s0 += d0;
    s1 += d0 * d0;
    if (lanes == 4) {
      const float d1 = v.y - k, d2 = v.z - k, d3 = v.w - k;
      s0 += d1 + d2 + d3;
      s1 += d1 * d1 + d2 * d2 + d3 * d3;
    }
  }
};

// The forward's y = (x − m)·scale + shift coefficients, kept for the
// backward of a folded ReLU: the mask it rebuilds from x is the forward's
// clamp bit for bit (the same float expression).
struct ForwardCoef {
  const float* coef;  // m, scale, shift; C each
  int C;
  float hi;
  __device__ float z(float x, int c) const { return (x - coef[c]) * coef[C + c] + coef[2 * C + c]; }
  // dy where the folded ReLU passed the gradient on, else 0.
  __device__ float pass(float dy, float x, int c) const {
    return relu_passes(z(x, c), hi) ? dy : 0.f;
  }
};

// Sums of dy and dy·x̂ (backward), x̂ = (x − mean)·invstd; R: dy first
// masked by a folded ReLU.
template <bool R>
struct GradTerms {
  const float* mean;
  const float* invstd;
  ForwardCoef f;
  __device__ void operator()(float4 dy, float4 x, int c, int lanes, float& s0, float& s1) const {
    if constexpr (R) {
      dy.x = f.pass(dy.x, x.x, c);
      if (lanes == 4) {
        dy.y = f.pass(dy.y, x.y, c);
        dy.z = f.pass(dy.z, x.z, c);
        dy.w = f.pass(dy.w, x.w, c);
      }
    }
    const float m = mean[c], inv = invstd[c];
    s0 += dy.x;
    s1 += dy.x * (x.x - m) * inv;
    if (lanes == 4) {
      s0 += dy.y + dy.z + dy.w;
      s1 += (dy.y * (x.y - m) + dy.z * (x.z - m) + dy.w * (x.w - m)) * inv;
    }
  }
};

// Channel c's statistics (batch or running), the running statistics moved,
// and y = (x − m)·scale + shift's coefficients. Run as the sums' Fin in
// training (channel_sums.cuh), by k_bn_fwd_stats in the inference form.
struct FwdStats {
  const double2* parts;
  int P;
  const float* x;
  int64_t S;
  const float* gamma;
  const float* beta;
  float *rm, *rv, *mean_out, *invstd_out, *coef;
  int C;
  int64_t M;
  float momentum, eps;
  bool training;
  __device__ void operator()(int c) const {
    double mean, var;
    if (training) {
      const double2 t = channel_total_cg(parts, c, P);
      const double d = t.x / double(M);
      mean = moment_shift(x, S, c) + d;
      var = t.y / double(M) - d * d;
      if (var < 0) var = 0;  // rounding, for a constant channel
      if (M > 1) {
        rm[c] = float((1.0 - momentum) * rm[c] + momentum * mean);
        rv[c] = float((1.0 - momentum) * rv[c] + momentum * var * double(M) / double(M - 1));
      }
    } else {
      mean = rm[c];
      var = rv[c];
    }
    const double inv = 1.0 / sqrt(var + double(eps));
    mean_out[c] = float(mean);
    invstd_out[c] = float(inv);
    coef[c] = float(mean);
    coef[C + c] = float(inv * gamma[c]);
    coef[2 * C + c] = beta[c];
  }
};

// Channel c's dgamma, dbeta and dx = a·dy + b0 + b1·(x − m)'s coefficients
// (b0 = b1 = 0 in the inference form, whose statistics are constants). The
// sums' Fin where there are sums, else run by k_bn_bwd_coef.
struct BwdCoef {
  const double2* parts;
  int P;
  const float* gamma;
  float *dgamma, *dbeta;
  const float *mean_in, *invstd_in;
  float* coef;
  int C;
  int64_t M;
  bool training, sums;
  __device__ void operator()(int c) const {
    const double inv = invstd_in[c];
    double sdy = 0, sdyx = 0;
    if (sums) {
      const double2 t = channel_total_cg(parts, c, P);
      sdy = t.x;
      sdyx = t.y;
    }
    if (dgamma) {  // null for a frozen layer
      dgamma[c] += float(sdyx);
      dbeta[c] += float(sdy);
    }
    const double k = gamma[c] * inv;
    coef[c] = mean_in[c];
    coef[C + c] = float(k);
    coef[2 * C + c] = training ? float(-k * sdy / double(M)) : 0.f;
    coef[3 * C + c] = training ? float(-k * sdyx / double(M) * inv) : 0.f;
  }
};

// One thread per channel, where no sums run before.
template <class Fin>
__global__ void k_per_channel(Fin fin, int C) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c < C) fin(c);
}

template <int V, bool R>
__global__ void k_bn_fwd_apply(const float* x, float* y, const float* coef, ChannelOf ch, int C,
                               int64_t total, float hi) {
  auto out = [hi](float z) { return R ? relu_clamp(z, hi) : z; };
  DC_GRID_LOOP(i, total) {
    const int c = ch(i);
    const float m = coef[c], scale = coef[C + c], shift = coef[2 * C + c];
    if constexpr (V == 4) {
      float4 v = reinterpret_cast<const float4*>(x)[i];
      v.x = out((v.x - m) * scale + shift);
      v.y = out((v.y - m) * scale + shift);
      v.z = out((v.z - m) * scale + shift);
      v.w = out((v.w - m) * scale + shift);
      reinterpret_cast<float4*>(y)[i] = v;
    } else {
      y[i] = out((x[i] - m) * scale + shift);
    }
  }
}

template <int V, bool R>
__global__ void k_bn_bwd_apply(const float* x, const float* dy, float* dx, const float* coef,
                               ChannelOf ch, int C, int64_t total, ForwardCoef f) {
  auto grad = [&f](float g, float xv, int c) { return R ? f.pass(g, xv, c) : g; };
  DC_GRID_LOOP(i, total) {
    const int c = ch(i);
    const float m = coef[c], a = coef[C + c], b0 = coef[2 * C + c], b1 = coef[3 * C + c];
    if constexpr (V == 4) {
      const float4 xv = reinterpret_cast<const float4*>(x)[i];
      const float4 g = reinterpret_cast<const float4*>(dy)[i];
      float4 d = reinterpret_cast<float4*>(dx)[i];
      d.x += a * grad(g.x, xv.x, c) + b0 + b1 * (xv.x - m);
      d.y += a * grad(g.y, xv.y, c) + b0 + b1 * (xv.y - m);
      d.z += a * grad(g.z, xv.z, c) + b0 + b1 * (xv.z - m);
      d.w += a * grad(g.w, xv.w, c) + b0 + b1 * (xv.w - m);
      reinterpret_cast<float4*>(dx)[i] = d;
    } else {
      dx[i] += a * grad(dy[i], x[i], c) + b0 + b1 * (x[i] - m);
    }
  }
}

// The scratch buffer holds the parts, then the backward's 4·C per-channel
// coefficients, then the forward's 3·C (which the backward of a folded
// ReLU reads while it overwrites its own), then C counters for the sums'
// Fin (zeroed when the buffer is made, batchnorm_scratch_zero).
float* coefficients(void* scratch, int C) {
  return reinterpret_cast<float*>(static_cast<char*>(scratch) + channel_parts_bytes(C));
}
float* forward_coefficients(void* scratch, int C) {
  return coefficients(scratch, C) + 4 * C;
}
unsigned* counters(void* scratch, int C) {
  return reinterpret_cast<unsigned*>(coefficients(scratch, C) + 7 * C);
}

int per_channel_blocks(int C) {
  return (C + kThreads - 1) / kThreads;
}

}  // namespace

size_t batchnorm_scratch_bytes(int C) {
  return channel_parts_bytes(C) + 7 * size_t(C) * sizeof(float) + size_t(C) * sizeof(unsigned);
}

void batchnorm_forward(const float* x, float* y, const float* gamma, const float* beta,
                       float* running_mean, float* running_var, float* mean, float* invstd, int N,
                       int C, int S, float momentum, float eps, bool training, FusedRelu r,
                       void* scratch, cudaStream_t s) {
  const int64_t M = int64_t(N) * S;
  const ChannelParts cp = channel_parts(C, M);
  auto* parts = static_cast<double2*>(scratch);
  auto* coef = forward_coefficients(scratch, C);
  const FwdStats st{parts, cp.count, x,    S, gamma, beta,     running_mean, running_var,
                    mean,  invstd,   coef, C, M,     momentum, eps,          training};
  if (training)
    launch_channel_parts(x, nullptr, MomentTerms{x, S}, parts, N, C, S, cp, s, st,
                         counters(scratch, C));
  else
    k_per_channel<<<per_channel_blocks(C), kThreads, 0, s>>>(st, C);
  const int V = vec4_ok(S, {x, y}) ? 4 : 1;
  const int64_t total = int64_t(N) * C * S / V;
  const ChannelOf ch = channel_of(N, C, S, V);
  const dim3 g(unsigned(blocks_for(total))), b(kThreads);
  if (V == 4 && r.on)
    k_bn_fwd_apply<4, true><<<g, b, 0, s>>>(x, y, coef, ch, C, total, r.hi);
  else if (V == 4)
    k_bn_fwd_apply<4, false><<<g, b, 0, s>>>(x, y, coef, ch, C, total, r.hi);
  else if (r.on)
    k_bn_fwd_apply<1, true><<<g, b, 0, s>>>(x, y, coef, ch, C, total, r.hi);
  else
    k_bn_fwd_apply<1, false><<<g, b, 0, s>>>(x, y, coef, ch, C, total, r.hi);
}

namespace {
template <bool R>
void grad_sums(const float* x, const float* dy, const float* mean, const float* invstd,
               ForwardCoef f, double2* parts, int N, int C, int S, const ChannelParts& cp,
               const BwdCoef& fin, unsigned* done, cudaStream_t s) {
  launch_channel_parts(dy, x, GradTerms<R>{mean, invstd, f}, parts, N, C, S, cp, s, fin, done);
}
}  // namespace

void batchnorm_backward(const float* x, const float* dy, float* dx, const float* gamma,
                        float* dgamma, float* dbeta, const float* mean, const float* invstd, int N,
                        int C, int S, bool training, FusedRelu r, void* scratch, cudaStream_t s) {
  const int64_t M = int64_t(N) * S;
  const ChannelParts cp = channel_parts(C, M);
  auto* parts = static_cast<double2*>(scratch);
  auto* coef = coefficients(scratch, C);
  const ForwardCoef f{forward_coefficients(scratch, C), C, r.hi};
  // A frozen layer (inference form, no dgamma) needs neither sum.
  const bool sums = training || dgamma;
  const BwdCoef bc{parts, cp.count, gamma, dgamma, dbeta, mean, invstd, coef, C, M, training, sums};
  unsigned* done = counters(scratch, C);
  if (sums && r.on)
    grad_sums<true>(x, dy, mean, invstd, f, parts, N, C, S, cp, bc, done, s);
  else if (sums)
    grad_sums<false>(x, dy, mean, invstd, f, parts, N, C, S, cp, bc, done, s);
  else
    k_per_channel<<<per_channel_blocks(C), kThreads, 0, s>>>(bc, C);
  if (!dx) return;
  const int V = vec4_ok(S, {x, dy, dx}) ? 4 : 1;
  const int64_t total = int64_t(N) * C * S / V;
  const ChannelOf ch = channel_of(N, C, S, V);
  const dim3 g(unsigned(blocks_for(total))), b(kThreads);
  if (V == 4 && r.on)
    k_bn_bwd_apply<4, true><<<g, b, 0, s>>>(x, dy, dx, coef, ch, C, total, f);
  else if (V == 4)
    k_bn_bwd_apply<4, false><<<g, b, 0, s>>>(x, dy, dx, coef, ch, C, total, f);
  else if (r.on)
    k_bn_bwd_apply<1, true><<<g, b, 0, s>>>(x, dy, dx, coef, ch, C, total, f);
  else
    k_bn_bwd_apply<1, false><<<g, b, 0, s>>>(x, dy, dx, coef, ch, C, total, f);
}

}  // namespace dc::cuda
