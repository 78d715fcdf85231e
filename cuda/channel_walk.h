#pragma once
// The elements of one channel c of an [N, C, S] tensor, visited as a thread
// of a block-per-channel kernel visits them (j = first, first + step, ...
// over the channel's N·S elements), with each one's flat index
// (n·C + c)·S + s found without dividing per element: a 64-bit division
// costs dozens of instructions on a GPU, more than the load it addresses.
// Host-callable too, so the walk is tested without a GPU.
#include <cstdint>

#if defined(__CUDACC__)
#define DC_HOST_DEVICE __host__ __device__
#else
#define DC_HOST_DEVICE
#endif

namespace dc::cuda {

struct ChannelWalk {
  int64_t n, s;    // the current element's sample and position in the channel plane
  int64_t S, C;    // plane size and channel count
  int64_t dn, ds;  // one step: step / S samples and step % S positions
  DC_HOST_DEVICE ChannelWalk(int64_t first, int64_t step, int64_t S_, int64_t C_)
      : n(first / S_), s(first % S_), S(S_), C(C_), dn(step / S_), ds(step % S_) {}
  DC_HOST_DEVICE int64_t index(int64_t c) const { return (n * C + c) * S + s; }
  DC_HOST_DEVICE void next() {
    n += dn;
    s += ds;
    if (s >= S) {  // ds < S, so one carry at most
      s -= S;
      ++n;
    }
  }
};

// How the per-channel sums of channel_sums.cuh split a channel's M = N·S
// elements: `count` blocks of `chunk` elements (a multiple of 4, for the
// 4-wide loads), enough blocks in all to fill a large GPU, each with enough
// work to be worth its launch. Never more than max_parts(C), so a scratch
// buffer sized from C alone fits every batch size.
struct ChannelParts {
  int count;
  int64_t chunk;
};
constexpr int64_t kPartsTargetBlocks = 1024, kPartsMinChunk = 8192;
DC_HOST_DEVICE inline int64_t max_channel_parts(int64_t C) {
  const int64_t p = (kPartsTargetBlocks + C - 1) / C;
  return p > 1 ? p : 1;
}
DC_HOST_DEVICE inline ChannelParts channel_parts(int64_t C, int64_t M) {
  int64_t P = (M + kPartsMinChunk - 1) / kPartsMinChunk;
  if (P > max_channel_parts(C)) P = max_channel_parts(C);
  if (P < 1) P = 1;
  int64_t chunk = (M + P - 1) / P;
  chunk = (chunk + 3) / 4 * 4;
  if (chunk < 4) chunk = 4;
  P = (M + chunk - 1) / chunk;
  return {int(P > 1 ? P : 1), chunk};
}

// n / d without a division instruction, for 0 <= n < 2^31 and 1 <= d <= 2^31
// (Granlund and Montgomery's multiply-by-reciprocal, as GPU libraries
// use): the pointwise kernels find each element's channel with two of
// these where 64-bit division costs more than the memory access.
struct FastDiv {
  uint32_t d = 1, magic = 1, shift = 0;
  FastDiv() = default;
  explicit FastDiv(uint32_t divisor) : d(divisor) {
    while (shift < 32 && (uint64_t(1) << shift) < divisor) ++shift;
    magic = uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << shift) - divisor)) / divisor + 1);
  }
  DC_HOST_DEVICE uint32_t div(uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const uint32_t t = __umulhi(n, magic);
#else
    const uint32_t t = uint32_t((uint64_t(n) * magic) >> 32);
#endif
    return (t + n) >> shift;
  }
  DC_HOST_DEVICE uint32_t mod(uint32_t n) const {
    return n - div(n) * d;
  }
};

}  // namespace dc::cuda
