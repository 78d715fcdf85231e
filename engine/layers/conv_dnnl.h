#pragma once
// Conv2D on oneDNN's own convolution kernels (conv_dnnl.cpp): the direct,
// JIT-compiled convolutions that PyTorch's channels-last path runs, instead
// of im2col + GEMM. The layer keeps NCHW; this class reorders into the
// layout oneDNN picks for the shape (blocked channels on AVX-512) and back,
// and keeps the reordered input from forward for the weight gradient.
//
// Grouped and depthwise convolutions take it too (weights as goihw), unless
// DC_CONV=dense keeps them on conv.cpp's kernels. Builds without oneDNN,
// and DC_CONV=im2col, keep the im2col path (create() returns nullptr).
#include <cstdint>
#include <memory>

#include "conv_kernels.h"
#include "fused_relu.h"

namespace dc::conv_kernels {

class DnnlConv {
 public:
  // nullptr when oneDNN is not built in, DC_CONV=im2col is set, or the
  // geometry is not one this path takes (grouped under DC_CONV=dense).
  static std::unique_ptr<DnnlConv> create(const ConvGeom& g);
  // Whether create() takes the geometry (conv_cpu_kernel's answer).
  static bool takes(const ConvGeom& g);
  // The memory the path holds at batch N on `threads` threads (with a
  // fused ReLU when relu):
  // kept, the layer's own (its input in oneDNN's layout, held from forward
  // to backward), and workspace, what the calls need while they run, in a
  // workspace all convolutions share; *winograd (when given), whether the
  // Winograd kernels run; *forward_only (when given), the workspace a
  // forward that keeps nothing needs. False when the path is not taken.
  static bool bytes(const ConvGeom& g, int64_t N, bool relu, int threads, int64_t& kept,
                    int64_t& workspace, bool* winograd = nullptr, int64_t* forward_only = nullptr);
  ~DnnlConv();

  // y = conv(x, w) + b, then the fused activation `act` (none, ReLU or
  // ReLU6, as the layer holds it; oneDNN's relu or clip post-op). b may be
  // null (no bias). False when oneDNN has no kernel for the geometry (the
  // primitives are built on a batch size's first call): the caller then
  // drops this object and unfolds. keep: hold the reordered input for the
  // weight gradient (training a layer that trains its weights); else it
  // lives in the shared workspace only while the call runs.
  bool forward(int64_t N, const float* x, const float* w, const float* b, float* y,
               const FusedRelu& act, bool keep);
  // From dy and the forward's output y (the fused activation's gradient is
  // taken from it; act as forward's, which may not have run on
  // this path: a frozen 1×1 convolution's forward is a GEMM): dw += dL/dw
  // and db += dL/db (each skipped when null), and dx = (fresh) or += (not
  // fresh) dL/dx (skipped when null). x is the forward's input. False,
  // with nothing computed, when oneDNN has no kernel for the geometry (the
  // primitives are built here when forward ran on a GEMM).
  bool backward(int64_t N, const float* x, const float* y, const float* dy, const float* w,
                float* dx, bool fresh, float* dw, float* db, const FusedRelu& act);

 private:
  explicit DnnlConv(const ConvGeom& g);
  struct Impl;
  std::unique_ptr<Impl> p_;
};

}  // namespace dc::conv_kernels
