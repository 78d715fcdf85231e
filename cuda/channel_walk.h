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

}  // namespace dc::cuda
