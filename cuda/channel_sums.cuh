#pragma once
// Per-channel sums over an [N, C, S] tensor (BatchNorm's statistics and
// gradient sums, a bias gradient) spread over many blocks: a grid of
// C x P blocks, block (c, p) summing the p-th chunk of channel c's N·S
// elements into parts[c·P + p], then a per-channel kernel adding the P
// parts in a fixed order (results repeat from run to run and between graph
// replays, which atomics would not give). One block per channel, the
// earlier design, left most of a 132-SM GPU idle with 32-64 channels and
// held a single load in flight per thread: VGG-BN ran at a fifth of
// PyTorch's speed on an H100.
//
// Each thread keeps kUnroll loads in flight, of 4 floats at once where
// S % 4 == 0 and the arrays are 16-byte aligned (4 consecutive elements
// then share their channel); partial sums in float over one unrolled
// round, then in double (as the CPU kernels), so the sums match the CPU's
// to float rounding.
#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>

#include "channel_walk.h"

namespace dc::cuda {

constexpr int kSumThreads = 256;
constexpr int kUnroll = 4;

// Whether 4-wide loads fit: every pointer 16-byte aligned (null ones do).
inline bool vec4_ok(int64_t S, std::initializer_list<const void*> ptrs) {
  if (S % 4) return false;
  for (const void* p : ptrs)
    if (reinterpret_cast<uintptr_t>(p) % 16) return false;
  return true;
}

template <int V>
struct VecLoad;
template <>
struct VecLoad<1> {
  __device__ static float4 at(const float* p, int64_t i) {
    return make_float4(p[i], 0.f, 0.f, 0.f);
  }
};
template <>
struct VecLoad<4> {
  __device__ static float4 at(const float* p, int64_t i) {
    return reinterpret_cast<const float4*>(p)[i];
  }
};

__device__ inline double block_sum_d(double v, double* sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
    __syncthreads();
  }
  const double r = sh[0];
  __syncthreads();
  return r;
}

// F: `__device__ void operator()(float4 a, float4 b, int c, int lanes,
// float& s0, float& s1) const` adds `lanes` (V) elements' terms to s0 and
// s1, given a's and b's values there (b is the second array, or a when
// there is none). Grid: (C, parts.count); V-wide elements throughout.
//
// Fin (optional, with `done`): `__device__ void operator()(int c) const`,
// run by the block that finishes channel c's last part, after every part
// of c is written (it reads them with channel_total_cg). That saves the
// launch of a one-thread-per-channel kernel after the sums, which cost
// 5-6 us a call on an H100 for a few hundred threads of work (2026-11-28
// profile: BatchNorm's statistics and coefficient kernels were 6 % of a
// VGG-BN step). done: C counters, zero before the first launch; the
// finishing block sets its channel's back to zero, so captured CUDA graphs
// replay with zeros. Which block finishes varies; the total does not (the
// parts are added in a fixed order).
struct NoFinish {
  __device__ void operator()(int) const {}
};
template <int V, class F, class Fin = NoFinish>
__global__ void k_channel_parts(const float* a, const float* b, F f, double2* out, int C,
                                int64_t SV, int64_t MV, int64_t chunk, int P, Fin fin = {},
                                unsigned* done = nullptr) {
  __shared__ double sh[kSumThreads];
  const int c = blockIdx.x, p = blockIdx.y;
  const int64_t lo = p * chunk, hi = lo + chunk < MV ? lo + chunk : MV;
  const int64_t T = blockDim.x;
  double d0 = 0, d1 = 0;
  ChannelWalk w(lo + threadIdx.x, T, SV, C);
  for (int64_t j = lo + threadIdx.x; j < hi; j += kUnroll * T) {
    float4 va[kUnroll], vb[kUnroll];
    bool ok[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      ok[u] = j + u * T < hi;
      if (ok[u]) {
        const int64_t i = w.index(c);
        va[u] = VecLoad<V>::at(a, i);
        vb[u] = b ? VecLoad<V>::at(b, i) : va[u];
      }
      w.next();
    }
    float s0 = 0.f, s1 = 0.f;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (ok[u]) f(va[u], vb[u], c, V, s0, s1);
    d0 += s0;
    d1 += s1;
  }
  d0 = block_sum_d(d0, sh);
  d1 = block_sum_d(d1, sh);
  if (threadIdx.x == 0) {
    out[int64_t(c) * P + p] = make_double2(d0, d1);
    if (done) {
      __threadfence();  // the part is visible device-wide before it is counted
      if (atomicAdd(&done[c], 1u) == unsigned(P - 1)) {
        __threadfence();  // and the others' parts before they are read
        fin(c);
        done[c] = 0;
      }
    }
  }
}

// Launches the parts kernel over x viewed as [N, C, S]; parts has room for
// C · channel_parts(C, N·S).count entries. With `done` (C zeroed counters),
// fin runs for each channel once its parts are summed.
template <class F, class Fin = NoFinish>
void launch_channel_parts(const float* a, const float* b, F f, double2* parts, int64_t N, int64_t C,
                          int64_t S, const ChannelParts& cp, cudaStream_t s, Fin fin = {},
                          unsigned* done = nullptr) {
  const dim3 grid(unsigned(C), unsigned(cp.count));
  if (vec4_ok(S, {a, b}))
    k_channel_parts<4><<<grid, kSumThreads, 0, s>>>(a, b, f, parts, int(C), S / 4, N * S / 4,
                                                    cp.chunk / 4, cp.count, fin, done);
  else
    k_channel_parts<1><<<grid, kSumThreads, 0, s>>>(a, b, f, parts, int(C), S, N * S, cp.chunk,
                                                    cp.count, fin, done);
}

// The parts buffer for C channels: room for every batch size.
inline size_t channel_parts_bytes(int64_t C) {
  return size_t(C) * size_t(max_channel_parts(C)) * sizeof(double2);
}

// Channel c's total of the P parts, in order.
__device__ inline double2 channel_total(const double2* parts, int c, int P) {
  double2 t = make_double2(0, 0);
  for (int p = 0; p < P; ++p) {
    t.x += parts[int64_t(c) * P + p].x;
    t.y += parts[int64_t(c) * P + p].y;
  }
  return t;
}
// The same inside a Fin, where other blocks wrote the parts during this
// launch: loads that bypass L1 (in L2, where their fenced writes are).
__device__ inline double2 channel_total_cg(const double2* parts, int c, int P) {
  double2 t = make_double2(0, 0);
  for (int p = 0; p < P; ++p) {
    const double2 v = __ldcg(parts + int64_t(c) * P + p);
    t.x += v.x;
    t.y += v.y;
  }
  return t;
}

// The channel of V-wide element i of [N, C, S/V]: 32-bit reciprocal
// division where the tensor allows it (always, short of 8 G elements).
struct ChannelOf {
  FastDiv sv, c;
  bool wide;
  int64_t SV, C;
  __device__ int operator()(int64_t i) const {
    if (wide) return int((i / SV) % C);
    return int(c.mod(sv.div(uint32_t(i))));
  }
};

inline ChannelOf channel_of(int64_t N, int64_t C, int64_t S, int V) {
  ChannelOf ch;
  ch.SV = S / V;
  ch.C = C;
  ch.wide = N * C * ch.SV >= (int64_t(1) << 31);
  if (!ch.wide) {
    ch.sv = FastDiv(uint32_t(ch.SV));
    ch.c = FastDiv(uint32_t(C));
  }
  return ch;
}

}  // namespace dc::cuda
