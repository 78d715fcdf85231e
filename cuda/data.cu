// Batches gathered from a dataset resident on the device, normalised on the
// way: the host only sends the sample indices. Training batches of images
// may be augmented on the way too (random crop with padding, flips,
// rotation, translation, brightness), with the engine's own draw and pixel
// arithmetic (augment_pixel.h), so they match the CPU trainer's.
#include "kernels.h"

namespace dc::cuda {
namespace {

// As Dataset::gather computes them (normalize_pixel.h), bytes divided by 255
// first (not multiplied by 1/255, which rounds differently).
__global__ void k_gather_u8(const uint8_t* px, const int64_t* idx, int64_t n, int64_t F,
                            norm::Params p, float* x) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n * F;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t s = i / F, f = i % F;
    x[i] = norm::apply(p, float(px[idx[s] * F + f]) / 255.0f, f);
  }
}
__global__ void k_gather_f32(const float* v, const int64_t* idx, int64_t n, int64_t F,
                             norm::Params p, float* x) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n * F;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t s = i / F, f = i % F;
    x[i] = norm::apply(p, v[idx[s] * F + f], f);
  }
}
// As the CPU gather computes it: a division for bytes (not a multiplication
// by 1/255, which rounds differently).
__device__ inline float value(const uint8_t* p) {
  return float(*p) / 255.0f;
}
__device__ inline float value(const float* p) {
  return *p;
}

// One thread per output value; the sample's draw is recomputed per value
// (a few hashes and a short polynomial) rather than staged through shared
// memory, which keeps the kernel as simple as the CPU loop it must match.
// A pixel of channel c reads channel c only, so with per-channel levels
// (augment_batch's) each channel gets its own black and white.
template <typename T>
__global__ void k_gather_aug(const T* src, const int64_t* idx, int64_t n, aug::Params a,
                             ChannelLevels lv, norm::Params p, uint64_t seed, const uint64_t* dseed,
                             float* x) {
  if (dseed) seed = *dseed;
  const int64_t HW = int64_t(a.H) * a.W, F = a.C * HW;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n * F;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t s = i / F, r = i - s * F, c = r / HW, y = (r / a.W) % a.H, xo = r % a.W;
    const T* sample = src + idx[s] * F;
    // The normalisation of the plain gather and of Dataset::gather; a pixel
    // of channel c reads channel c only.
    auto at = [&](int64_t off) { return norm::apply_channel(p, value(sample + off), int(c)); };
    aug::Params ac = a;
    const int k = lv.n > 1 ? int(c) : 0;
    ac.black = lv.black[k];
    ac.white = lv.white[k];
    x[i] = aug::pixel(ac, aug::draw(a, seed, s), int(c), int(y), int(xo), at);
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

void gather_u8(const uint8_t* pixels, const int64_t* idx, int64_t n, int64_t F,
               const norm::Params& p, float* x, cudaStream_t s) {
  k_gather_u8<<<blocks(n * F), 256, 0, s>>>(pixels, idx, n, F, p, x);
}
void gather_f32(const float* values, const int64_t* idx, int64_t n, int64_t F,
                const norm::Params& p, float* x, cudaStream_t s) {
  k_gather_f32<<<blocks(n * F), 256, 0, s>>>(values, idx, n, F, p, x);
}
void gather_augmented(const uint8_t* pixels, const float* values, const int64_t* idx, int64_t n,
                      const aug::Params& a, const ChannelLevels& lv, const norm::Params& p,
                      uint64_t seed, const uint64_t* dseed, float* x, cudaStream_t s) {
  const int64_t total = n * a.C * a.H * a.W;
  if (pixels)
    k_gather_aug<<<blocks(total), 256, 0, s>>>(pixels, idx, n, a, lv, p, seed, dseed, x);
  else
    k_gather_aug<<<blocks(total), 256, 0, s>>>(values, idx, n, a, lv, p, seed, dseed, x);
}
void gather_labels(const int32_t* labels, const int64_t* idx, int64_t n, int32_t* out,
                   cudaStream_t s) {
  k_gather_labels<<<blocks(n), 256, 0, s>>>(labels, idx, n, out);
}

}  // namespace dc::cuda
