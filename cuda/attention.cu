// MultiHeadAttention's row kernels (the GEMMs are cuBLAS's, in
// attention_ops.cpp): the softmax over each row of scores with the causal
// mask, the dropout of the attention weights, and the softmax's backward.
// One warp per row; the row's sums in double, as the CPU layer's.
#include <cstdint>

#include "counter_rng.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace dc::cuda {
namespace {

constexpr int kWarps = 8;

__device__ inline double warp_sum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Row r of the [rows, S] scores belongs to query step r % T: with the
// causal mask it sees keys 0..t only.
__device__ inline int valid_keys(int64_t r, int T, int S, bool causal) {
  const int t = int(r % T);
  return causal && t + 1 < S ? t + 1 : S;
}

// p = softmax(p) in place over the valid keys, 0 beyond them; with dropout
// (rate > 0) also w = p·mask/(1 − rate), the weights that multiply V.
__global__ void k_attn_softmax(float* p, float* w, int64_t rows, int T, int S, bool causal,
                               float rate, uint64_t seed, uint64_t salt, const uint64_t* dseed) {
  const int64_t r = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;
  const int lane = int(threadIdx.x & 31);
  if (r >= rows) return;
  float* row = p + r * S;
  const int valid = valid_keys(r, T, S, causal);
  float m = -__int_as_float(0x7f800000);
  for (int s = lane; s < valid; s += 32) m = fmaxf(m, row[s]);
  m = warp_max(m);
  double sum = 0;
  for (int s = lane; s < valid; s += 32) {
    const float e = expf(row[s] - m);
    row[s] = e;
    sum += e;
  }
  const float inv = float(1.0 / warp_sum(sum));
  for (int s = lane; s < S; s += 32) row[s] = s < valid ? row[s] * inv : 0.f;
  if (!w) return;
  const uint64_t sd = (dseed ? *dseed : seed) ^ salt;
  const float keep = 1.f / (1.f - rate);
  for (int s = lane; s < S; s += 32) {
    const uint64_t i = uint64_t(r * S + s);
    w[r * S + s] = uniform01(sd, i) >= rate ? row[s] * keep : 0.f;
  }
}

// dp = p ⊙ (dp' − Σ dp'·p) in place, where dp' is the gradient of the
// weights first passed back through the dropout mask.
__global__ void k_attn_softmax_bwd(const float* p, float* dp, int64_t rows, int S, float rate,
                                   uint64_t seed, uint64_t salt, const uint64_t* dseed) {
  const int64_t r = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;
  const int lane = int(threadIdx.x & 31);
  if (r >= rows) return;
  const float* pr = p + r * S;
  float* d = dp + r * S;
  if (rate > 0.f) {
    const uint64_t sd = (dseed ? *dseed : seed) ^ salt;
    const float keep = 1.f / (1.f - rate);
    for (int s = lane; s < S; s += 32)
      d[s] = uniform01(sd, uint64_t(r * S + s)) >= rate ? d[s] * keep : 0.f;
  }
  double dot = 0;
  for (int s = lane; s < S; s += 32) dot += double(d[s]) * pr[s];
  const float t = float(warp_sum(dot));
  for (int s = lane; s < S; s += 32) d[s] = pr[s] * (d[s] - t);
}

unsigned row_blocks(int64_t rows) {
  return unsigned((rows + kWarps - 1) / kWarps);
}

}  // namespace

void attention_softmax(float* p, float* w, int64_t rows, int T, int S, bool causal, float rate,
                       uint64_t seed, uint64_t salt, const uint64_t* dseed, cudaStream_t s) {
  k_attn_softmax<<<row_blocks(rows), kWarps * 32, 0, s>>>(p, w, rows, T, S, causal, rate, seed,
                                                          salt, dseed);
}

void attention_softmax_backward(const float* p, float* dp, int64_t rows, int S, float rate,
                                uint64_t seed, uint64_t salt, const uint64_t* dseed,
                                cudaStream_t s) {
  k_attn_softmax_bwd<<<row_blocks(rows), kWarps * 32, 0, s>>>(p, dp, rows, S, rate, seed, salt,
                                                              dseed);
}

}  // namespace dc::cuda
