#pragma once
// One convolution direction (forward, backward data, backward filter) through
// cuDNN's graph (backend) API: an operation graph of one convolution built
// from the real dimensions and strides (NCHW or channels last), engine
// configurations from the heuristics (mode A, then the fallback list) with
// those that down-convert their inputs dropped, a handful of execution plans
// timed on the device once and the fastest kept. PyTorch's cudnn/Conv_v8.cpp
// takes the same route for every 16-bit convolution; cuDNN 9 deprecates the
// legacy cudnnConvolution* calls, whose bf16 weight gradient stays on the slow
// wgrad_alg0 engine (docs/BENCHMARKS.md). The raw backend API rather than
// the header-only cudnn-frontend: it is in the cuDNN that is installed, so
// the plugin builds from Debian-packaged CUDA alone (docs/ARCHITECTURE.md).
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "allocator.h"
#include "conv_layout.h"
#include "handles.h"

namespace dc::cuda {

using BackendDesc = Handle<cudnnBackendDescriptor_t, &cudnnBackendDestroyDescriptor>;

enum class ConvDir { Forward, BackwardData, BackwardFilter };

const char* conv_dir_name(ConvDir d);

// Dimensions in cuDNN's logical order (N, C, H, W; the filter K, C/groups, R,
// S); `channels_last` gives the activations NHWC strides and the filter KRSC.
struct ConvGeometry {
  int64_t n = 1, c = 1, h = 1, w = 1;  // input
  int64_t k = 1, r = 1, s = 1;         // filters and their size
  int64_t oh = 1, ow = 1;              // output plane
  int64_t groups = 1;
  int64_t pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  bool channels_last = false;
  cudnnDataType_t data = CUDNN_DATA_BFLOAT16;  // x, w, y; the arithmetic is float32
  bool allow_tensor_cores = true;              // false: float32 data without TF32
};

class ConvGraph {
 public:
  // Builds and chooses a plan for `dir`: y = alpha * conv(x, w) + beta * y in
  // its direction's terms (dx for BackwardData, dw for BackwardFilter). x, w,
  // y are the buffers it will run on (plans are chosen for their
  // alignments); they are read and written while candidates are timed.
  // Candidates needing more than `max_workspace` bytes are skipped; a scratch
  // workspace for the timing comes from `alloc` and goes back after. Throws
  // DeviceError saying why when cuDNN offers no usable plan.
  void build(cudnnHandle_t dnn, cudaStream_t stream, Allocator& alloc, const ConvGeometry& g,
             ConvDir dir, float alpha, float beta, const void* x, const void* w, const void* y,
             size_t max_workspace, const std::string& what);
  size_t workspace() const { return ws_; }
  // The chosen engine, its timing and how many were timed, for logs.
  const std::string& choice() const { return choice_; }
  void run(cudnnHandle_t dnn, const void* x, const void* w, const void* y, void* workspace,
           const std::string& what) const;

 private:
  std::vector<BackendDesc> keep_;  // tensors, convolution, operation, graph
  BackendDesc cfg_, plan_;
  size_t ws_ = 0;
  std::string choice_;
};

}  // namespace dc::cuda
