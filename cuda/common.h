#pragma once
// Error checking shared by the plugin. Every CUDA, cuDNN and cuBLAS call goes
// through one of these macros; the message names what was being done (the
// layer and shapes, passed as `what`) so a user can tell which node failed.
#include <deepcanvas/errors.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <string>

namespace dc::cuda {

[[noreturn]] void throw_cuda(cudaError_t e, const char* call, const std::string& what);
[[noreturn]] void throw_cudnn(cudnnStatus_t s, const char* call, const std::string& what);
[[noreturn]] void throw_cublas(cublasStatus_t s, const char* call, const std::string& what);

}  // namespace dc::cuda

#define DC_CUDA(call, what)                                               \
  do {                                                                    \
    cudaError_t dc_e_ = (call);                                           \
    if (dc_e_ != cudaSuccess) ::dc::cuda::throw_cuda(dc_e_, #call, what); \
  } while (0)
#define DC_CUDNN(call, what)                                                        \
  do {                                                                              \
    cudnnStatus_t dc_s_ = (call);                                                   \
    if (dc_s_ != CUDNN_STATUS_SUCCESS) ::dc::cuda::throw_cudnn(dc_s_, #call, what); \
  } while (0)
#define DC_CUBLAS(call, what)                                                         \
  do {                                                                                \
    cublasStatus_t dc_s_ = (call);                                                    \
    if (dc_s_ != CUBLAS_STATUS_SUCCESS) ::dc::cuda::throw_cublas(dc_s_, #call, what); \
  } while (0)
// After a kernel launch: catches bad launch configurations at once (faults
// inside kernels surface at the next synchronising call, which is checked too).
#define DC_LAUNCHED(what) DC_CUDA(cudaGetLastError(), what)
