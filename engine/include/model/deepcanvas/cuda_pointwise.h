#pragma once
// Which Conv2D layers the CUDA plugin runs in bf16 as cuBLAS GEMMs
// straight on the float32 NCHW activations (cuda/conv.cpp), instead of
// cuDNN on 16-bit channels-last copies. One rule for the plugin and the
// advisor's memory model (engine/advisor/memory_model.cpp), which counts
// neither the 16-bit copies nor cuDNN's buffers for these layers.
//
// A 1×1 convolution with stride 1, no padding and one group is, per sample,
// the GEMM y[n] (OC × HW) = W (OC × C) · x[n] (C × HW) on NCHW planes, so
// cuBLAS reads x and writes y where they are, rounding its operands to 16
// bits inside the GEMM (CUBLAS_COMPUTE_32F_FAST_16BF; not in fp16, whose loss
// scaling needs values past 65504 to overflow: cuda/ops.h). That removes the
// two conversion passes around every such layer, which a profile of
// MobileNetV2 on an H200 put at 29 % of its backward kernel time
// (docs/BENCHMARKS.md, 2026-11-28). Small planes stay on cuDNN: a GEMM per
// sample with HW rows wastes most of a tensor-core tile below 64 rows. The
// weight gradient is one GEMM per sample into a float32 scratch of
// N·C·OC values, summed over the batch: kept to layers whose scratch is no
// larger than their input (OC ≤ HW); other trained layers stay on cuDNN.
#include <cstdint>

namespace dc {

inline bool cuda_pointwise_gemm(int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW,
                                int64_t SH, int64_t SW, int64_t groups, int64_t pad_total,
                                bool weight_grad) {
  const int64_t hw = H * W;
  if (KH != 1 || KW != 1 || SH != 1 || SW != 1 || groups != 1 || pad_total != 0) return false;
  if (hw < 64 || (weight_grad && OC > hw)) return false;
  // cuBLAS's sizes and leading dimensions are int.
  const int64_t lim = int64_t(1) << 31;
  return C * hw < lim && OC * hw < lim && C * OC < lim;
}

}  // namespace dc
