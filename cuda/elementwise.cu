// Pointwise ops: activations, Add, Dropout, bias. Grid-stride loops so one
// launch shape fits every size.
#include <cstdint>
#include <initializer_list>

#include "channel_sums.cuh"
#include "counter_rng.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace dc::cuda {
namespace {

__device__ inline float act_f(Act a, float slope, float x) {
  switch (a) {
    case Act::Relu:
      return x > 0.f ? x : 0.f;
    case Act::LeakyRelu:
      return x > 0.f ? x : slope * x;
    case Act::Relu6:
      return x > 0.f ? fminf(x, 6.f) : 0.f;
    case Act::Sigmoid:
      return 1.f / (1.f + expf(-x));
    case Act::Tanh:
      return tanhf(x);
    case Act::Gelu:
      return 0.5f * x * erfcf(-x * 0.70710678118654752f);
    case Act::Silu:
      return x / (1.f + expf(-x));
    // fminf/fmaxf would turn NaN into a bound; PyTorch keeps it.
    case Act::HardSwish:
      return x != x ? x : x * fminf(fmaxf(x + 3.f, 0.f), 6.f) * (1.f / 6.f);
    case Act::HardSigmoid:
      return x != x ? x : fminf(fmaxf(x + 3.f, 0.f), 6.f) * (1.f / 6.f);
  }
  return x;
}

__device__ inline float act_df(Act a, float slope, float x, float y) {
  switch (a) {
    case Act::Relu:
      return x > 0.f ? 1.f : 0.f;
    case Act::LeakyRelu:
      return x > 0.f ? 1.f : slope;
    case Act::Relu6:
      return x > 0.f && x < 6.f ? 1.f : 0.f;
    case Act::Sigmoid:
      return y * (1.f - y);
    case Act::Tanh:
      return 1.f - y * y;
    case Act::Gelu: {
      float cdf = 0.5f * erfcf(-x * 0.70710678118654752f);
      float pdf = 0.39894228040143268f * expf(-0.5f * x * x);
      return cdf + x * pdf;
    }
    case Act::Silu: {
      const float sg = 1.f / (1.f + expf(-x));
      return sg * (1.f + x * (1.f - sg));
    }
    // PyTorch's backward formulas (the CPU layers'): the kinks as it takes them.
    case Act::HardSwish:
      return x < -3.f ? 0.f : x <= 3.f ? x * (1.f / 3.f) + 0.5f : 1.f;
    case Act::HardSigmoid:
      return x > -3.f && x < 3.f ? 1.f / 6.f : 0.f;
  }
  return 1.f;
}

__global__ void k_act_fwd(Act a, float slope, const float* x, float* y, int64_t n) {
  DC_GRID_LOOP(i, n) y[i] = act_f(a, slope, x[i]);
}
__global__ void k_act_bwd(Act a, float slope, const float* x, const float* y, const float* dy,
                          float* dx, int64_t n) {
  DC_GRID_LOOP(i, n) dx[i] += dy[i] * act_df(a, slope, x ? x[i] : 0.f, y ? y[i] : 0.f);
}

// Four floats per thread through 16-byte loads where every pointer is
// 16-byte aligned and the length a multiple of 4 (the float4 kernels below);
// each element gets the same arithmetic as in the scalar kernels, so the
// results are the same bit for bit. A 2026-11-27 profile on an H200 had the
// scalar ReLU and Add kernels at 11-12 % of a bf16 ResNet step each.
bool vec4(int64_t n, std::initializer_list<const void*> ptrs) {
  if (n % 4 != 0) return false;
  for (const void* p : ptrs)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  return true;
}
__device__ inline float4 act_f4(Act a, float slope, float4 v) {
  return make_float4(act_f(a, slope, v.x), act_f(a, slope, v.y), act_f(a, slope, v.z),
                     act_f(a, slope, v.w));
}
__global__ void k_act_fwd4(Act a, float slope, const float4* x, float4* y, int64_t n4) {
  DC_GRID_LOOP(i, n4) y[i] = act_f4(a, slope, x[i]);
}
__global__ void k_act_bwd4(Act a, float slope, const float4* x, const float4* y, const float4* dy,
                           float4* dx, int64_t n4) {
  DC_GRID_LOOP(i, n4) {
    const float4 g = dy[i];
    const float4 xv = x ? x[i] : make_float4(0.f, 0.f, 0.f, 0.f);
    const float4 yv = y ? y[i] : make_float4(0.f, 0.f, 0.f, 0.f);
    float4 d = dx[i];
    d.x += g.x * act_df(a, slope, xv.x, yv.x);
    d.y += g.y * act_df(a, slope, xv.y, yv.y);
    d.z += g.z * act_df(a, slope, xv.z, yv.z);
    d.w += g.w * act_df(a, slope, xv.w, yv.w);
    dx[i] = d;
  }
}
__device__ inline void add4(float4* d, float4 v) {
  float4 o = *d;
  o.x += v.x;
  o.y += v.y;
  o.z += v.z;
  o.w += v.w;
  *d = o;
}
__global__ void k_accumulate4(const float4* src, float4* dst, int64_t n4) {
  DC_GRID_LOOP(i, n4) add4(dst + i, src[i]);
}
// Two inputs (every residual connection): the pointers as plain arguments.
// The k-input kernel indexes its parameter array at run time, which puts
// the array in local memory and costs a load per element and input.
// R: a folded ReLU clamps the sum (hi its upper bound).
template <bool R>
__device__ inline float add_out(float z, float hi) {
  if constexpr (R) return relu_clamp(z, hi);
  return z;
}
template <bool R>
__global__ void k_add2(const float* a, const float* b, float* y, int64_t n, float hi) {
  DC_GRID_LOOP(i, n) y[i] = add_out<R>(a[i] + b[i], hi);
}
template <bool R>
__global__ void k_add2_4(const float4* a, const float4* b, float4* y, int64_t n4, float hi) {
  DC_GRID_LOOP(i, n4) {
    const float4 u = a[i], v = b[i];
    y[i] = make_float4(add_out<R>(u.x + v.x, hi), add_out<R>(u.y + v.y, hi),
                       add_out<R>(u.z + v.z, hi), add_out<R>(u.w + v.w, hi));
  }
}
// The fused Add's backward: the mask from its clamped output, and both
// inputs' gradients in the pass that reads dy once.
__device__ inline void split_one(float y, float g, float hi, float* d0, float* d1, int64_t i) {
  const float v = relu_passes(y, hi) ? g : 0.f;
  if (d0) d0[i] += v;
  if (d1) d1[i] += v;
}
__global__ void k_relu_split(const float* y, const float* dy, float* d0, float* d1, int64_t n,
                             float hi) {
  DC_GRID_LOOP(i, n) split_one(y[i], dy[i], hi, d0, d1, i);
}
__global__ void k_relu_split4(const float4* y, const float4* dy, float4* d0, float4* d1, int64_t n4,
                              float hi) {
  DC_GRID_LOOP(i, n4) {
    const float4 yv = y[i], g = dy[i];
    const float4 v =
        make_float4(relu_passes(yv.x, hi) ? g.x : 0.f, relu_passes(yv.y, hi) ? g.y : 0.f,
                    relu_passes(yv.z, hi) ? g.z : 0.f, relu_passes(yv.w, hi) ? g.w : 0.f);
    if (d0) add4(d0 + i, v);
    if (d1) add4(d1 + i, v);
  }
}

struct Ptrs {
  const float* p[8];
};
__global__ void k_add(Ptrs xs, int k, float* y, int64_t n, bool relu, float hi) {
  DC_GRID_LOOP(i, n) {
    float s = xs.p[0][i];
    for (int j = 1; j < k; ++j) s += xs.p[j][i];
    y[i] = relu ? relu_clamp(s, hi) : s;
  }
}
__global__ void k_accumulate(const float* src, float* dst, int64_t n) {
  DC_GRID_LOOP(i, n) dst[i] += src[i];
}
__global__ void k_copy(const float* src, float* dst, int64_t n) {
  DC_GRID_LOOP(i, n) dst[i] = src[i];
}

__global__ void k_dropout_fwd(const float* x, float* y, int64_t n, float rate, float scale,
                              uint64_t seed, uint64_t salt, const uint64_t* dseed) {
  const uint64_t s = (dseed ? *dseed : seed) ^ salt;
  DC_GRID_LOOP(i, n) y[i] = uniform01(s, uint64_t(i)) >= rate ? x[i] * scale : 0.f;
}
__global__ void k_dropout_bwd(const float* dy, float* dx, int64_t n, float rate, float scale,
                              uint64_t seed, uint64_t salt, const uint64_t* dseed) {
  const uint64_t s = (dseed ? *dseed : seed) ^ salt;
  DC_GRID_LOOP(i, n) dx[i] += uniform01(s, uint64_t(i)) >= rate ? dy[i] * scale : 0.f;
}

__global__ void k_add_bias(float* y, const float* b, int64_t total, ChannelOf ch) {
  DC_GRID_LOOP(i, total) y[i] += b[ch(i)];
}
__global__ void k_bias_relu(float* y, const float* b, int64_t total, ChannelOf ch, float hi) {
  DC_GRID_LOOP(i, total) y[i] = relu_clamp(b ? y[i] + b[ch(i)] : y[i], hi);
}
__global__ void k_relu_mask(const float* y, float* dy, int64_t n, float hi) {
  DC_GRID_LOOP(i, n) if (!relu_passes(y[i], hi)) dy[i] = 0.f;
}
__global__ void k_relu_mask4(const float4* y, float4* dy, int64_t n4, float hi) {
  DC_GRID_LOOP(i, n4) {
    const float4 v = y[i];
    float4 g = dy[i];
    if (!relu_passes(v.x, hi)) g.x = 0.f;
    if (!relu_passes(v.y, hi)) g.y = 0.f;
    if (!relu_passes(v.z, hi)) g.z = 0.f;
    if (!relu_passes(v.w, hi)) g.w = 0.f;
    dy[i] = g;
  }
}

// Sums of dy (the bias gradient's terms; the second sum is unused).
struct BiasTerms {
  __device__ void operator()(float4 g, float4, int, int lanes, float& s0, float&) const {
    s0 += g.x;
    if (lanes == 4) s0 += g.y + g.z + g.w;
  }
};

__global__ void k_bias_total(const double2* parts, int P, float* db, int C) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c < C) db[c] += float(channel_total(parts, c, P).x);
}

}  // namespace

void act_forward(Act a, float slope, const float* x, float* y, int64_t n, cudaStream_t s) {
  if (vec4(n, {x, y}))
    k_act_fwd4<<<blocks_for(n / 4), kThreads, 0, s>>>(a, slope, reinterpret_cast<const float4*>(x),
                                                      reinterpret_cast<float4*>(y), n / 4);
  else
    k_act_fwd<<<blocks_for(n), kThreads, 0, s>>>(a, slope, x, y, n);
}
void act_backward(Act a, float slope, const float* x, const float* y, const float* dy, float* dx,
                  int64_t n, cudaStream_t s) {
  if (vec4(n, {x, y, dy, dx}))
    k_act_bwd4<<<blocks_for(n / 4), kThreads, 0, s>>>(
        a, slope, reinterpret_cast<const float4*>(x), reinterpret_cast<const float4*>(y),
        reinterpret_cast<const float4*>(dy), reinterpret_cast<float4*>(dx), n / 4);
  else
    k_act_bwd<<<blocks_for(n), kThreads, 0, s>>>(a, slope, x, y, dy, dx, n);
}
namespace {
template <bool R>
void add2(const float* a, const float* b, float* y, int64_t n, float hi, cudaStream_t s) {
  if (vec4(n, {a, b, y}))
    k_add2_4<R><<<blocks_for(n / 4), kThreads, 0, s>>>(reinterpret_cast<const float4*>(a),
                                                       reinterpret_cast<const float4*>(b),
                                                       reinterpret_cast<float4*>(y), n / 4, hi);
  else
    k_add2<R><<<blocks_for(n), kThreads, 0, s>>>(a, b, y, n, hi);
}
}  // namespace

void add_forward(const float* const* xs, int k, float* y, int64_t n, FusedRelu r, cudaStream_t s) {
  if (k == 2) {
    if (r.on)
      add2<true>(xs[0], xs[1], y, n, r.hi, s);
    else
      add2<false>(xs[0], xs[1], y, n, r.hi, s);
    return;
  }
  Ptrs p{};
  for (int j = 0; j < k && j < 8; ++j) p.p[j] = xs[j];
  k_add<<<blocks_for(n), kThreads, 0, s>>>(p, k, y, n, r.on, r.hi);
}
void relu_split_accumulate(const float* y, const float* dy, float* d0, float* d1, int64_t n,
                           float hi, cudaStream_t s) {
  if (vec4(n, {y, dy, d0, d1}))
    k_relu_split4<<<blocks_for(n / 4), kThreads, 0, s>>>(
        reinterpret_cast<const float4*>(y), reinterpret_cast<const float4*>(dy),
        reinterpret_cast<float4*>(d0), reinterpret_cast<float4*>(d1), n / 4, hi);
  else
    k_relu_split<<<blocks_for(n), kThreads, 0, s>>>(y, dy, d0, d1, n, hi);
}
void accumulate(const float* src, float* dst, int64_t n, cudaStream_t s) {
  if (vec4(n, {src, dst}))
    k_accumulate4<<<blocks_for(n / 4), kThreads, 0, s>>>(reinterpret_cast<const float4*>(src),
                                                         reinterpret_cast<float4*>(dst), n / 4);
  else
    k_accumulate<<<blocks_for(n), kThreads, 0, s>>>(src, dst, n);
}
void copy(const float* src, float* dst, int64_t n, cudaStream_t s) {
  k_copy<<<blocks_for(n), kThreads, 0, s>>>(src, dst, n);
}
void dropout_forward(const float* x, float* y, int64_t n, float rate, uint64_t seed, uint64_t salt,
                     const uint64_t* dseed, cudaStream_t s) {
  k_dropout_fwd<<<blocks_for(n), kThreads, 0, s>>>(x, y, n, rate, 1.f / (1.f - rate), seed, salt,
                                                   dseed);
}
void dropout_backward(const float* dy, float* dx, int64_t n, float rate, uint64_t seed,
                      uint64_t salt, const uint64_t* dseed, cudaStream_t s) {
  k_dropout_bwd<<<blocks_for(n), kThreads, 0, s>>>(dy, dx, n, rate, 1.f / (1.f - rate), seed, salt,
                                                   dseed);
}
void add_bias(float* y, const float* bias, int64_t N, int64_t C, int64_t S, cudaStream_t s) {
  int64_t total = N * C * S;
  k_add_bias<<<blocks_for(total), kThreads, 0, s>>>(y, bias, total, channel_of(N, C, S, 1));
}
void bias_relu(float* y, const float* bias, int64_t N, int64_t C, int64_t S, FusedRelu r,
               cudaStream_t s) {
  if (!r.on) {
    if (bias) add_bias(y, bias, N, C, S, s);
    return;
  }
  const int64_t total = N * C * S;
  k_bias_relu<<<blocks_for(total), kThreads, 0, s>>>(y, bias, total, channel_of(N, C, S, 1), r.hi);
}
void relu_mask(const float* y, float* dy, int64_t n, float hi, cudaStream_t s) {
  if (vec4(n, {y, dy}))
    k_relu_mask4<<<blocks_for(n / 4), kThreads, 0, s>>>(reinterpret_cast<const float4*>(y),
                                                        reinterpret_cast<float4*>(dy), n / 4, hi);
  else
    k_relu_mask<<<blocks_for(n), kThreads, 0, s>>>(y, dy, n, hi);
}
size_t bias_grad_scratch_bytes(int64_t C) {
  return channel_parts_bytes(C);
}
void bias_grad(const float* dy, float* db, int64_t N, int64_t C, int64_t S, void* scratch,
               cudaStream_t s) {
  const ChannelParts cp = channel_parts(C, N * S);
  auto* parts = static_cast<double2*>(scratch);
  launch_channel_parts(dy, nullptr, BiasTerms{}, parts, N, C, S, cp, s);
  k_bias_total<<<int((C + kThreads - 1) / kThreads), kThreads, 0, s>>>(parts, cp.count, db, int(C));
}

}  // namespace dc::cuda
