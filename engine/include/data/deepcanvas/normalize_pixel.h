#pragma once
// How a sample value is normalised on its way into a batch: one mean and
// 1/std for every value, or (a pretrained base's ImageNet statistics) a mean
// and std per channel. Compiled into Dataset::gather (engine/data/dataset.cpp,
// through per-byte tables) and into the CUDA gather kernels (cuda/data.cu),
// so one source defines the arithmetic on either device. Header-only and
// free of engine types, because nvcc compiles it; normalisation() in data.h
// makes the parameters from a Dataset.
//
// The per-channel form divides by the std and the shared form multiplies by
// its inverse, as the CPU did before this header existed (both round
// differently; each is kept so results stay what they were).
#include <cstdint>

#ifdef __CUDACC__
#define DC_NORM_FN __host__ __device__ inline
#else
#define DC_NORM_FN inline
#endif

namespace dc::norm {

// Per-channel statistics for up to this many channels: images have 1, 3
// or 4; the CUDA kernels take the parameters by value.
constexpr int kMaxChannels = 8;

struct Params {
  int channels = 0;   // 0: mean and inv_std for every value; else per channel
  int64_t plane = 1;  // values per channel in a sample (per-channel form)
  float mean = 0, inv_std = 1;
  float channel_mean[kMaxChannels] = {}, channel_std[kMaxChannels] = {};
};

// Value v (already in [0, 1] for bytes: v / 255) of channel c.
DC_NORM_FN float apply_channel(const Params& p, float v, int c) {
  if (p.channels == 0) return (v - p.mean) * p.inv_std;
  return (v - p.channel_mean[c]) / p.channel_std[c];
}

// Value v at offset f in its sample.
DC_NORM_FN float apply(const Params& p, float v, int64_t f) {
  return apply_channel(p, v, p.channels == 0 ? 0 : int(f / p.plane));
}

}  // namespace dc::norm
