// Sequence plumbing for the recurrent layers: Embedding lookup, picking one
// step of a [N, T, F] sequence, broadcasting learned initial states over the
// batch, and the table-driven copies that move PyTorch-layout parameters in
// and out of cuDNN's RNN weight space.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels.h"
#include "launch.cuh"

namespace dc::cuda {
namespace {

// Ids arrive as floats (every activation is float). The plan rejects
// out-of-range ids on the host before they get here; the clamp only keeps a
// bad value computed on the device from reading outside the table.
__device__ inline int64_t token(float v, int64_t V) {
  int64_t id = __float2ll_rn(v);
  return id < 0 ? 0 : (id >= V ? V - 1 : id);
}

__global__ void k_embed_fwd(const float* ids, const float* w, float* y, int64_t rows, int64_t D,
                            int64_t V) {
  DC_GRID_LOOP(i, rows * D) {
    int64_t r = i / D, k = i - r * D;
    y[i] = w[token(ids[r], V) * D + k];
  }
}

// Several rows may hold the same token, so the table gradient needs atomics.
__global__ void k_embed_bwd(const float* ids, const float* dy, float* dw, int64_t rows, int64_t D,
                            int64_t V, int64_t pad) {
  DC_GRID_LOOP(i, rows * D) {
    int64_t r = i / D, k = i - r * D;
    int64_t id = token(ids[r], V);
    if (id != pad) atomicAdd(dw + id * D + k, dy[i]);
  }
}

__global__ void k_step_fwd(const float* x, float* y, int64_t N, int64_t T, int64_t t, int64_t ldx,
                           int64_t W, int64_t ldy) {
  DC_GRID_LOOP(i, N * W) {
    int64_t n = i / W, j = i - n * W;
    y[n * ldy + j] = x[(n * T + t) * ldx + j];
  }
}

__global__ void k_step_bwd(const float* dy, float* dx, int64_t N, int64_t T, int64_t t, int64_t ldx,
                           int64_t W, int64_t ldy) {
  DC_GRID_LOOP(i, N * W) {
    int64_t n = i / W, j = i - n * W;
    dx[(n * T + t) * ldx + j] += dy[n * ldy + j];
  }
}

__global__ void k_bcast_states(const float* const* src, float* dst, int U, int64_t N, int64_t H) {
  DC_GRID_LOOP(i, U * N * H) {
    int64_t u = i / (N * H), j = i % H;
    dst[i] = src[u][j];
  }
}

// One thread per (unit, j), summing over the batch in order (repeatable).
__global__ void k_reduce_states(const float* src, float* const* dst, int U, int64_t N, int64_t H) {
  DC_GRID_LOOP(i, U * H) {
    int64_t u = i / H, j = i - u * H;
    float s = 0.f;
    for (int64_t n = 0; n < N; ++n) s += src[(u * N + n) * H + j];
    dst[u][j] += s;
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
__device__ inline void narrow(float v, float& d) {
  d = v;
}
__device__ inline void narrow(float v, __nv_bfloat16& d) {
  d = __float2bfloat16_rn(v);
}
__device__ inline void narrow(float v, __half& d) {
  d = __float2half_rn(v);
}

template <typename W>
__global__ void k_pack_weights(const WeightSegment* segs) {
  const WeightSegment sg = segs[blockIdx.y];
  W* w = static_cast<W*>(sg.w);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < sg.n;
       i += int64_t(gridDim.x) * blockDim.x)
    narrow(sg.f[i], w[i]);
}

template <typename W>
__global__ void k_unpack_weight_grads(const WeightSegment* segs) {
  const WeightSegment sg = segs[blockIdx.y];
  W* w = static_cast<W*>(sg.w);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < sg.n;
       i += int64_t(gridDim.x) * blockDim.x) {
    sg.f[i] += widen(w[i]);
    narrow(0.f, w[i]);
  }
}

dim3 segment_grid(int count, int64_t longest) {
  int64_t bx = (longest + kThreads - 1) / kThreads;
  return dim3(unsigned(bx < 1024 ? (bx > 0 ? bx : 1) : 1024), unsigned(count));
}

}  // namespace

void embedding_forward(const float* ids, const float* w, float* y, int64_t rows, int64_t D,
                       int64_t V, cudaStream_t s) {
  k_embed_fwd<<<blocks_for(rows * D), kThreads, 0, s>>>(ids, w, y, rows, D, V);
}

void embedding_backward(const float* ids, const float* dy, float* dw, int64_t rows, int64_t D,
                        int64_t V, int64_t pad, cudaStream_t s) {
  k_embed_bwd<<<blocks_for(rows * D), kThreads, 0, s>>>(ids, dy, dw, rows, D, V, pad);
}

void step_select(const float* x, float* y, int64_t N, int64_t T, int64_t t, int64_t ldx, int64_t W,
                 int64_t ldy, cudaStream_t s) {
  k_step_fwd<<<blocks_for(N * W), kThreads, 0, s>>>(x, y, N, T, t, ldx, W, ldy);
}

void step_select_backward(const float* dy, float* dx, int64_t N, int64_t T, int64_t t, int64_t ldx,
                          int64_t W, int64_t ldy, cudaStream_t s) {
  k_step_bwd<<<blocks_for(N * W), kThreads, 0, s>>>(dy, dx, N, T, t, ldx, W, ldy);
}

void broadcast_states(const float* const* src, float* dst, int U, int64_t N, int64_t H,
                      cudaStream_t s) {
  k_bcast_states<<<blocks_for(U * N * H), kThreads, 0, s>>>(src, dst, U, N, H);
}

void reduce_states(const float* src, float* const* dst, int U, int64_t N, int64_t H,
                   cudaStream_t s) {
  k_reduce_states<<<blocks_for(U * H), kThreads, 0, s>>>(src, dst, U, N, H);
}

void pack_weights(const WeightSegment* segs, int count, int64_t longest, SpaceType t,
                  cudaStream_t s) {
  if (count == 0) return;
  const dim3 grid = segment_grid(count, longest);
  if (t == SpaceType::Bf16)
    k_pack_weights<__nv_bfloat16><<<grid, kThreads, 0, s>>>(segs);
  else if (t == SpaceType::Fp16)
    k_pack_weights<__half><<<grid, kThreads, 0, s>>>(segs);
  else
    k_pack_weights<float><<<grid, kThreads, 0, s>>>(segs);
}

void unpack_weight_grads(const WeightSegment* segs, int count, int64_t longest, SpaceType t,
                         cudaStream_t s) {
  if (count == 0) return;
  const dim3 grid = segment_grid(count, longest);
  if (t == SpaceType::Bf16)
    k_unpack_weight_grads<__nv_bfloat16><<<grid, kThreads, 0, s>>>(segs);
  else if (t == SpaceType::Fp16)
    k_unpack_weight_grads<__half><<<grid, kThreads, 0, s>>>(segs);
  else
    k_unpack_weight_grads<float><<<grid, kThreads, 0, s>>>(segs);
}

}  // namespace dc::cuda
