// Batches gathered from a dataset resident on the device, normalised on the
// way: the host only sends the sample indices.
#include "kernels.h"

namespace dc::cuda {
namespace {

__global__ void k_gather_u8(const uint8_t* px, const int64_t* idx, int64_t n, int64_t F, float mean,
                            float inv_std, float* x) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n * F;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t s = i / F, f = i % F;
    x[i] = (float(px[idx[s] * F + f]) / 255.0f - mean) * inv_std;
  }
}
__global__ void k_gather_f32(const float* v, const int64_t* idx, int64_t n, int64_t F, float mean,
                             float inv_std, float* x) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n * F;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t s = i / F, f = i % F;
    x[i] = (v[idx[s] * F + f] - mean) * inv_std;
  }
}
__global__ void k_gather_labels(const int32_t* l, const int64_t* idx, int64_t n, int32_t* out) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = l[idx[i]];
}
int blocks(int64_t n) {
  int64_t b = (n + 255) / 256;
  return int(b < 8192 ? (b > 0 ? b : 1) : 8192);
}

}  // namespace

void gather_u8(const uint8_t* pixels, const int64_t* idx, int64_t n, int64_t F, float mean,
               float inv_std, float* x, cudaStream_t s) {
  k_gather_u8<<<blocks(n * F), 256, 0, s>>>(pixels, idx, n, F, mean, inv_std, x);
}
void gather_f32(const float* values, const int64_t* idx, int64_t n, int64_t F, float mean,
                float inv_std, float* x, cudaStream_t s) {
  k_gather_f32<<<blocks(n * F), 256, 0, s>>>(values, idx, n, F, mean, inv_std, x);
}
void gather_labels(const int32_t* labels, const int64_t* idx, int64_t n, int32_t* out,
                   cudaStream_t s) {
  k_gather_labels<<<blocks(n), 256, 0, s>>>(labels, idx, n, out);
}

}  // namespace dc::cuda
