#pragma once
// Depthwise Conv2D (groups = input channels, OC = C·M filters, M the channel
// multiplier) on the plan's float32 NCHW tensors, for depthwise.cu. cuDNN
// runs these layers as grouped convolutions: in bf16/fp16 behind two
// conversion passes over every activation, and with grouped kernels that
// are slower than a direct loop on a layer that is all memory traffic.
//
// What decides the launch and the arithmetic of one output, one input
// gradient or one weight-gradient term is here, host-callable, so that a
// test without a GPU runs the kernels' index math against the CPU layer.
// Within a plane indices are 32-bit; plane offsets 64-bit.
#include <cstddef>
#include <cstdint>

#include "channel_walk.h"

#if defined(__CUDACC__)
#define DC_DW_UNROLL _Pragma("unroll")
#else
#define DC_DW_UNROLL
#endif

namespace dc::cuda {

struct DwDims {
  int N, C, M;  // batch, input channels, channel multiplier (OC = C·M)
  int H, W, OH, OW, KH, KW, SH, SW, DH, DW;
  int PT, PL;  // top and left padding (bottom and right follow from OH, OW)
  int OC() const { return C * M; }
};

// A Conv2D the depthwise kernels compute: one input channel per group,
// more than one group (a single group is a plain convolution).
inline bool is_depthwise(int64_t C, int64_t OC, int64_t G) {
  return G > 1 && G == C && OC % C == 0;
}

// Planes of up to 256 threads a block (a multiple of 32 for small planes);
// grid x is the planes, y the blocks of a plane.
constexpr int kDwThreads = 256;
inline int dw_plane_threads(int64_t plane) {
  const int64_t t = (plane + 31) / 32 * 32;
  return int(t < kDwThreads ? t : kDwThreads);
}

// Whether the kernels' 32-bit in-plane indices, the FastDiv range (< 2^31)
// and the launch grid (y at most 65535 blocks a plane) hold for this
// geometry; otherwise cuDNN runs the layer.
inline bool depthwise_fits(const DwDims& d) {
  // 2^30: room for a grid-stride step past the last index in int.
  const int64_t lim = int64_t(1) << 30;
  const int64_t hw = int64_t(d.H) * d.W, ohw = int64_t(d.OH) * d.OW;
  const int64_t planes_out = int64_t(d.N) * d.C * d.M, planes_in = int64_t(d.N) * d.C;
  if (d.N < 1 || d.C < 1 || d.M < 1 || hw < 1 || ohw < 1) return false;
  if (hw > lim || int64_t(d.N) * ohw > lim || planes_out > lim || planes_in > lim) return false;
  if (int64_t(d.KH) * d.KW > 4096) return false;  // the weight-gradient parts buffer
  const int64_t per_block = kDwThreads;
  return (ohw + per_block - 1) / per_block <= 65535 && (hw + per_block - 1) / per_block <= 65535;
}

// Which kernel variant: unrolled 3×3 and 5×5 taps at stride 1 or 2 (the same
// in both directions), or the general loop. Dilation is a runtime value in
// every variant.
struct DwVariant {
  int k, s;  // 0, 0: general
};
inline DwVariant dw_variant(const DwDims& d) {
  if (d.KH == d.KW && (d.KH == 3 || d.KH == 5) && d.SH == d.SW && (d.SH == 1 || d.SH == 2))
    return {d.KH, d.SH};
  return {0, 0};
}

// Weight gradient: block (oc, p) sums part p of the N·OH·OW terms of
// output channel oc, for each tap and the bias (one value past the taps),
// into parts[(oc·(KH·KW + 1) + tap)·P + p]; a second kernel adds the P
// parts in order. channel_parts (channel_walk.h) splits the terms, so the
// buffer for the largest split fits every batch size.
inline size_t depthwise_wgrad_scratch_bytes(const DwDims& d) {
  return size_t(d.OC()) * size_t(d.KH * d.KW + 1) * size_t(max_channel_parts(d.OC())) *
         sizeof(float);
}

struct DwIdentity {
  DC_HOST_DEVICE float operator()(float v) const { return v; }
};

// One output y[oh, ow] of a plane (before rounding and bias): xp is the
// input channel's plane, wk its filter's KH·KW taps. KH_, KW_, S_ fixed at
// compile time when not 0. rx and rw: the precision's rounding of x and w.
template <int KH_, int KW_, int S_, class RX, class RW>
DC_HOST_DEVICE inline float dw_output_at(const DwDims& d, const float* xp, const float* wk, int oh,
                                         int ow, RX rx, RW rw) {
  const int KH = KH_ ? KH_ : d.KH, KW = KW_ ? KW_ : d.KW;
  const int SH = S_ ? S_ : d.SH, SW = S_ ? S_ : d.SW;
  const int ih0 = oh * SH - d.PT, iw0 = ow * SW - d.PL;
  float acc = 0.f;
  DC_DW_UNROLL
  for (int i = 0; i < KH; ++i) {
    const int ih = ih0 + i * d.DH;
    if (ih < 0 || ih >= d.H) continue;
    const float* row = xp + int64_t(ih) * d.W;
    DC_DW_UNROLL
    for (int j = 0; j < KW; ++j) {
      const int iw = iw0 + j * d.DW;
      if (iw >= 0 && iw < d.W) acc += rx(row[iw]) * rw(wk[i * KW + j]);
    }
  }
  return acc;
}

// The output index o that tap k of a window reads input i from
// (o·S − P + k·D = i), when there is one in [0, O).
DC_HOST_DEVICE inline bool dw_source(int i, int k, int S, int D, int P, int O, int& o) {
  const int t = i + P - k * D;
  if (t < 0) return false;
  o = t / S;
  return o * S == t && o < O;
}

// One input gradient dx[ih, iw] of channel c (before rounding): dyp is the
// gradient plane of output channel c·M (the next multiplier's plane
// OH·OW further), wk the taps of filter c·M (the next KH·KW further).
template <int KH_, int KW_, int S_, class RD, class RW>
DC_HOST_DEVICE inline float dw_input_grad_at(const DwDims& d, const float* dyp, const float* wk,
                                             int ih, int iw, RD rd, RW rw) {
  const int KH = KH_ ? KH_ : d.KH, KW = KW_ ? KW_ : d.KW;
  const int SH = S_ ? S_ : d.SH, SW = S_ ? S_ : d.SW;
  const int64_t ohw = int64_t(d.OH) * d.OW;
  float acc = 0.f;
  for (int m = 0; m < d.M; ++m) {
    const float* g = dyp + m * ohw;
    const float* w = wk + m * KH * KW;
    DC_DW_UNROLL
    for (int i = 0; i < KH; ++i) {
      int oh;
      if (!dw_source(ih, i, SH, d.DH, d.PT, d.OH, oh)) continue;
      DC_DW_UNROLL
      for (int j = 0; j < KW; ++j) {
        int ow;
        if (dw_source(iw, j, SW, d.DW, d.PL, d.OW, ow))
          acc += rd(g[int64_t(oh) * d.OW + ow]) * rw(w[i * KW + j]);
      }
    }
  }
  return acc;
}

// The weight-gradient terms of output (oh, ow) with gradient g (already
// rounded): acc[tap] += g · x at the tap's input, for every tap.
template <int KH_, int KW_, int S_, class RX>
DC_HOST_DEVICE inline void dw_weight_terms(const DwDims& d, const float* xp, float g, int oh,
                                           int ow, float* acc, RX rx) {
  const int KH = KH_ ? KH_ : d.KH, KW = KW_ ? KW_ : d.KW;
  const int SH = S_ ? S_ : d.SH, SW = S_ ? S_ : d.SW;
  const int ih0 = oh * SH - d.PT, iw0 = ow * SW - d.PL;
  DC_DW_UNROLL
  for (int i = 0; i < KH; ++i) {
    const int ih = ih0 + i * d.DH;
    if (ih < 0 || ih >= d.H) continue;
    const float* row = xp + int64_t(ih) * d.W;
    DC_DW_UNROLL
    for (int j = 0; j < KW; ++j) {
      const int iw = iw0 + j * d.DW;
      if (iw >= 0 && iw < d.W) acc[i * KW + j] += g * rx(row[iw]);
    }
  }
}

// The same for a single tap (the general kernel, one tap a block).
template <class RX>
DC_HOST_DEVICE inline float dw_weight_term(const DwDims& d, const float* xp, float g, int oh,
                                           int ow, int tap, RX rx) {
  const int i = tap / d.KW, j = tap - i * d.KW;
  const int ih = oh * d.SH - d.PT + i * d.DH, iw = ow * d.SW - d.PL + j * d.DW;
  if (ih < 0 || ih >= d.H || iw < 0 || iw >= d.W) return 0.f;
  return g * rx(xp[int64_t(ih) * d.W + iw]);
}

}  // namespace dc::cuda
