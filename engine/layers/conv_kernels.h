#pragma once
// What the CPU Conv2D (conv.cpp) shares with its geometry and column
// kernels (conv_kernels.cpp): the geometry resolved once from attributes
// and input shape, and the im2col/col2im unfolding the GEMM path runs on.
#include <deepcanvas/layer.h>

#include <cstdint>
#include <vector>

namespace dc::conv_kernels {

// Everything a kernel needs, resolved once from attributes and input shape.
struct ConvGeom {
  int64_t C = 0, H = 0, W = 0;  // input
  int64_t OC = 0, KH = 0, KW = 0, SH = 1, SW = 1, DH = 1, DW = 1, G = 1;
  int64_t PT = 0, PB = 0, PL = 0, PR = 0;  // "same" may pad asymmetrically
  int64_t OH = 0, OW = 0;
  bool bias = true;

  int64_t Cg() const { return C / G; }
  int64_t OCg() const { return OC / G; }
  int64_t Kg() const { return Cg() * KH * KW; }  // GEMM depth per group
  int64_t K() const { return C * KH * KW; }      // rows of the column buffer
  int64_t HW() const { return H * W; }
  int64_t OHW() const { return OH * OW; }
  // A 1x1 stride-1 unpadded convolution is a plain GEMM on the input.
  bool pointwise() const {
    return KH == 1 && KW == 1 && SH == 1 && SW == 1 && PT == 0 && PB == 0 && PL == 0 && PR == 0;
  }
  // One input channel per group (MobileNet's and EfficientNet's depthwise
  // convolutions, any channel multiplier): run directly, without columns.
  // Through im2col each group was a 1-row GEMM, all call overhead: EfficientNet-
  // Lite0's depthwise layers took 80 % of its forward time that way.
  bool depthwise() const { return G > 1 && Cg() == 1 && !pointwise(); }
  ConvKernel kernel() const {
    return pointwise()   ? ConvKernel::Pointwise
           : depthwise() ? ConvKernel::Depthwise
                         : ConvKernel::Im2col;
  }
};

ConvGeom conv_geom(const std::vector<Shape>& in, const Attrs& a);

// One sample's columns for the GEMM path: im2col unfolds, col2im folds back.
void im2col(const ConvGeom& g, const float* x, float* col, int64_t ld);
void col2im(const ConvGeom& g, const float* col, float* dx, int64_t ld);

}  // namespace dc::conv_kernels
