// LayerNorm over rows of D values (the last dimension of each sample), the
// CUDA counterpart of engine/layers/norm.cpp's LayerNorm: one warp per row
// for the statistics, the output and the input gradient (each row's sums in
// double, as the CPU layer's), and the weight and bias gradients summed
// over rows in chunks and then over the chunks in a fixed order, so results
// repeat exactly between runs and CUDA-graph replays.
#include <cstdint>

#include "kernels.h"
#include "launch.cuh"

namespace dc::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int64_t kRowsPerPart = 64;
constexpr int64_t kMaxParts = 65535;  // the grid's y

__device__ inline double warp_sum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The warp's row; every lane of a warp gets the same one, so a warp past
// the last row leaves as a whole before any shuffle.
__device__ inline int64_t warp_row() {
  return int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
}

__global__ void k_ln_fwd(const float* x, float* y, const float* g, const float* b, float* mean,
                         float* invstd, int64_t R, int D, float eps) {
  const int64_t r = warp_row();
  const int lane = int(threadIdx.x & 31);
  if (r >= R) return;
  const float* p = x + r * D;
  double s = 0;
  for (int i = lane; i < D; i += 32) s += double(p[i]);
  const double m = warp_sum(s) / double(D);
  double q = 0;
  for (int i = lane; i < D; i += 32) {
    const double d = double(p[i]) - m;
    q += d * d;
  }
  const double inv = 1.0 / sqrt(warp_sum(q) / double(D) + double(eps));
  const float fm = float(m), fk = float(inv);
  if (lane == 0) {
    mean[r] = fm;
    invstd[r] = fk;
  }
  float* o = y + r * D;
  for (int i = lane; i < D; i += 32) o[i] = g ? (p[i] - fm) * fk * g[i] + b[i] : (p[i] - fm) * fk;
}

// dx += inv·(γ·dy − mean(γ·dy) − x̂·mean(γ·dy·x̂)) per row.
__global__ void k_ln_bwd_dx(const float* x, const float* dy, float* dx, const float* g,
                            const float* mean, const float* invstd, int64_t R, int D) {
  const int64_t r = warp_row();
  const int lane = int(threadIdx.x & 31);
  if (r >= R) return;
  const float* p = x + r * D;
  const float* d = dy + r * D;
  const float fm = mean[r], fi = invstd[r];
  double sg = 0, sgx = 0;
  for (int i = lane; i < D; i += 32) {
    const double gi = double(d[i]) * (g ? g[i] : 1.f);
    sg += gi;
    sgx += gi * (double(p[i]) - fm) * fi;
  }
  const float a = float(warp_sum(sg) / double(D)), c = float(warp_sum(sgx) / double(D));
  float* o = dx + r * D;
  for (int i = lane; i < D; i += 32) {
    const float xh = (p[i] - fm) * fi;
    o[i] += fi * (d[i] * (g ? g[i] : 1.f) - a - xh * c);
  }
}

// Thread (column i, part p) sums dy·x̂ and dy over its chunk of rows.
__global__ void k_ln_param_parts(const float* x, const float* dy, const float* mean,
                                 const float* invstd, double2* parts, int64_t R, int D,
                                 int64_t chunk) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  const int64_t p = blockIdx.y;
  if (i >= D) return;
  const int64_t lo = p * chunk, hi = lo + chunk < R ? lo + chunk : R;
  double sg = 0, sb = 0;
  for (int64_t r = lo; r < hi; ++r) {
    const double v = dy[r * D + i];
    sg += v * (double(x[r * D + i]) - mean[r]) * invstd[r];
    sb += v;
  }
  parts[p * D + i] = make_double2(sg, sb);
}

__global__ void k_ln_param_total(const double2* parts, int P, int D, float* dg, float* db) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= D) return;
  double sg = 0, sb = 0;
  for (int p = 0; p < P; ++p) {
    sg += parts[int64_t(p) * D + i].x;
    sb += parts[int64_t(p) * D + i].y;
  }
  if (dg) dg[i] += float(sg);
  if (db) db[i] += float(sb);
}

int64_t chunk_for(int64_t R) {
  const int64_t least = (R + kMaxParts - 1) / kMaxParts;
  return least > kRowsPerPart ? least : kRowsPerPart;
}

unsigned row_blocks(int64_t R) {
  return unsigned((R + kWarpsPerBlock - 1) / kWarpsPerBlock);
}

}  // namespace

void layernorm_forward(const float* x, float* y, const float* gamma, const float* beta, float* mean,
                       float* invstd, int64_t rows, int D, float eps, cudaStream_t s) {
  k_ln_fwd<<<row_blocks(rows), kWarpsPerBlock * 32, 0, s>>>(x, y, gamma, beta, mean, invstd, rows,
                                                            D, eps);
}

size_t layernorm_scratch_bytes(int64_t rows, int D) {
  const int64_t parts = (rows + chunk_for(rows) - 1) / chunk_for(rows);
  return size_t(parts) * size_t(D) * sizeof(double2);
}

void layernorm_backward(const float* x, const float* dy, float* dx, const float* gamma,
                        float* dgamma, float* dbeta, const float* mean, const float* invstd,
                        int64_t rows, int D, void* scratch, cudaStream_t s) {
  if (dgamma || dbeta) {
    const int64_t chunk = chunk_for(rows), P = (rows + chunk - 1) / chunk;
    auto* parts = static_cast<double2*>(scratch);
    const dim3 grid(unsigned((D + kThreads - 1) / kThreads), unsigned(P));
    k_ln_param_parts<<<grid, kThreads, 0, s>>>(x, dy, mean, invstd, parts, rows, D, chunk);
    k_ln_param_total<<<unsigned((D + kThreads - 1) / kThreads), kThreads, 0, s>>>(parts, int(P), D,
                                                                                  dgamma, dbeta);
  }
  if (dx)
    k_ln_bwd_dx<<<row_blocks(rows), kWarpsPerBlock * 32, 0, s>>>(x, dy, dx, gamma, mean, invstd,
                                                                 rows, D);
}

}  // namespace dc::cuda
