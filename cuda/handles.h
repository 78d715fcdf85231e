#pragma once
// Owning holders for the CUDA, cuDNN and cuBLAS objects a CudaPlan and its
// ops keep (stream, library handles, events, pinned host memory, an
// instantiated graph, cuDNN descriptors). Each frees its object when it goes,
// so a plan or op whose construction throws part way (out of memory is the
// documented case, and the GUI retries with smaller batches) releases what
// it had made instead of leaking it.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>
#include <string>
#include <utility>

#include "common.h"

namespace dc::cuda {

template <typename T, auto Destroy>
class Handle {
 public:
  Handle() = default;
  ~Handle() { reset(); }
  Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, T{})) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, T{});
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  T get() const { return h_; }
  explicit operator bool() const { return h_ != T{}; }
  // For the library's create call: frees what is held, then lends the slot.
  T* out() {
    reset();
    return &h_;
  }
  void reset() {
    if (h_ != T{}) Destroy(h_);
    h_ = T{};
  }

 private:
  T h_{};
};

using Stream = Handle<cudaStream_t, &cudaStreamDestroy>;
using Event = Handle<cudaEvent_t, &cudaEventDestroy>;
using CudaGraph = Handle<cudaGraph_t, &cudaGraphDestroy>;
using GraphExec = Handle<cudaGraphExec_t, &cudaGraphExecDestroy>;
using DnnHandle = Handle<cudnnHandle_t, &cudnnDestroy>;
using BlasHandle = Handle<cublasHandle_t, &cublasDestroy>;

// cuDNN descriptors. Members that refer to one another (an RNN descriptor
// to its dropout descriptor, that to its state buffer) are declared so that
// the referring one goes first: members are destroyed in reverse order.
using TensorDesc = Handle<cudnnTensorDescriptor_t, &cudnnDestroyTensorDescriptor>;
using FilterDesc = Handle<cudnnFilterDescriptor_t, &cudnnDestroyFilterDescriptor>;
using ConvDesc = Handle<cudnnConvolutionDescriptor_t, &cudnnDestroyConvolutionDescriptor>;
using RnnDesc = Handle<cudnnRNNDescriptor_t, &cudnnDestroyRNNDescriptor>;
using RnnDataDesc = Handle<cudnnRNNDataDescriptor_t, &cudnnDestroyRNNDataDescriptor>;
using DropoutDesc = Handle<cudnnDropoutDescriptor_t, &cudnnDestroyDropoutDescriptor>;

// Page-locked host memory for `count` values of T (cudaMallocHost).
template <typename T>
class Pinned {
 public:
  Pinned() = default;
  Pinned(size_t count, const std::string& what) {
    void* p = nullptr;
    DC_CUDA(cudaMallocHost(&p, sizeof(T) * count), what);
    *mem_.out() = p;
  }
  T* get() const { return static_cast<T*>(mem_.get()); }

 private:
  Handle<void*, &cudaFreeHost> mem_;
};

}  // namespace dc::cuda
