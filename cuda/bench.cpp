// bench-device --device cuda:N: what the libraries the backend trains with
// reach on this GPU, timed with CUDA events after a warm-up. Not a peak
// search: one representative shape per figure, as the CPU benchmark does.
#include <deepcanvas/backend.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>
#include <vector>

#include "bench.h"
#include "handles.h"

namespace dc::cuda {

namespace {

// Owns a device allocation for the benchmark's lifetime.
struct DeviceMem {
  void* p = nullptr;
  explicit DeviceMem(size_t bytes) { DC_CUDA(cudaMalloc(&p, bytes), "benchmark buffer"); }
  ~DeviceMem() { cudaFree(p); }
  DeviceMem(const DeviceMem&) = delete;
  DeviceMem& operator=(const DeviceMem&) = delete;
};

// Mean seconds of one call of fn over `reps` calls queued on `s`, after
// `warm` unmeasured ones.
template <class F>
double time_on(cudaStream_t s, int warm, int reps, F&& fn) {
  for (int i = 0; i < warm; ++i) fn();
  cudaEvent_t a, b;
  DC_CUDA(cudaEventCreate(&a), "benchmark event");
  DC_CUDA(cudaEventCreate(&b), "benchmark event");
  DC_CUDA(cudaEventRecord(a, s), "benchmark event");
  for (int i = 0; i < reps; ++i) fn();
  DC_CUDA(cudaEventRecord(b, s), "benchmark event");
  DC_CUDA(cudaEventSynchronize(b), "benchmark");
  float ms = 0;
  DC_CUDA(cudaEventElapsedTime(&ms, a, b), "benchmark event");
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return double(ms) * 1e-3 / reps;
}

double gemm_gflops(cublasHandle_t h, cudaStream_t s, cudaDataType_t type, int n) {
  const size_t elem = type == CUDA_R_32F ? 4 : 2;
  DeviceMem a(size_t(n) * n * elem), b(size_t(n) * n * elem), c(size_t(n) * n * elem);
  DC_CUDA(cudaMemsetAsync(a.p, 0, size_t(n) * n * elem, s), "benchmark");
  DC_CUDA(cudaMemsetAsync(b.p, 0, size_t(n) * n * elem, s), "benchmark");
  const float one = 1.f, zero = 0.f;
  const std::string what = "benchmark GEMM " + std::to_string(n);
  const double t = time_on(s, 2, 10, [&] {
    if (type == CUDA_R_32F) {
      DC_CUBLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, static_cast<float*>(a.p), n,
                            static_cast<float*>(b.p), n, &zero, static_cast<float*>(c.p), n),
                what);
    } else {
      DC_CUBLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a.p, type, n, b.p, type, n,
                             &zero, c.p, type, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                what);
    }
  });
  return 2.0 * double(n) * n * n / t * 1e-9;
}

double conv_gflops(cudnnHandle_t h, cudaStream_t s) {
  const int N = 64, C = 64, K = 64, H = 56, W = 56;
  const std::string what = "benchmark convolution";
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  DC_CUDNN(cudnnCreateTensorDescriptor(&x), what);
  DC_CUDNN(cudnnCreateTensorDescriptor(&y), what);
  DC_CUDNN(cudnnCreateFilterDescriptor(&w), what);
  DC_CUDNN(cudnnCreateConvolutionDescriptor(&conv), what);
  struct Free {
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t c;
    ~Free() {
      cudnnDestroyTensorDescriptor(x);
      cudnnDestroyTensorDescriptor(y);
      cudnnDestroyFilterDescriptor(w);
      cudnnDestroyConvolutionDescriptor(c);
    }
  } free_them{x, y, w, conv};
  DC_CUDNN(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, C, H, W), what);
  DC_CUDNN(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, K, H, W), what);
  DC_CUDNN(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, K, C, 3, 3), what);
  DC_CUDNN(cudnnSetConvolution2dDescriptor(conv, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                           CUDNN_DATA_FLOAT),
           what);
  // fp32 as the backend trains it (no TF32 tensor-op math).
  DC_CUDNN(cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH), what);
  DeviceMem dx(size_t(N) * C * H * W * 4), dy(size_t(N) * K * H * W * 4), dw(size_t(K) * C * 9 * 4);
  DC_CUDA(cudaMemsetAsync(dx.p, 0, size_t(N) * C * H * W * 4, s), what);
  DC_CUDA(cudaMemsetAsync(dw.p, 0, size_t(K) * C * 9 * 4, s), what);
  int got = 0;
  cudnnConvolutionFwdAlgoPerf_t perf[8];
  DC_CUDNN(cudnnFindConvolutionForwardAlgorithm(h, x, w, conv, y, 8, &got, perf), what);
  int pick = -1;
  for (int i = 0; i < got && pick < 0; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= (size_t(1) << 30)) pick = i;
  if (pick < 0) throw Error(what + ": cuDNN offered no forward algorithm");
  DeviceMem ws(perf[pick].memory > 0 ? perf[pick].memory : 16);
  const float one = 1.f, zero = 0.f;
  const double t = time_on(s, 2, 10, [&] {
    DC_CUDNN(cudnnConvolutionForward(h, &one, x, dx.p, w, dw.p, conv, perf[pick].algo, ws.p,
                                     perf[pick].memory, &zero, y, dy.p),
             what);
  });
  return 2.0 * double(N) * K * H * W * C * 9 / t * 1e-9;
}

}  // namespace

GpuBenchResult run_gpu_benchmark(int device) {
  DC_CUDA(cudaSetDevice(device), "benchmark: cuda:" + std::to_string(device));
  cudaStream_t s;
  DC_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "benchmark stream");
  struct StreamFree {
    cudaStream_t s;
    ~StreamFree() { cudaStreamDestroy(s); }
  } stream_free{s};
  cublasHandle_t blas;
  DC_CUBLAS(cublasCreate(&blas), "benchmark cuBLAS");
  struct BlasFree {
    cublasHandle_t h;
    ~BlasFree() { cublasDestroy(h); }
  } blas_free{blas};
  DC_CUBLAS(cublasSetStream(blas, s), "benchmark cuBLAS");
  // fp32 without TF32, as the backend trains in fp32.
  DC_CUBLAS(cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH), "benchmark cuBLAS");
  cudnnHandle_t dnn;
  DC_CUDNN(cudnnCreate(&dnn), "benchmark cuDNN");
  struct DnnFree {
    cudnnHandle_t h;
    ~DnnFree() { cudnnDestroy(h); }
  } dnn_free{dnn};
  DC_CUDNN(cudnnSetStream(dnn, s), "benchmark cuDNN");

  GpuBenchResult r;
  r.fp32_gflops = gemm_gflops(blas, s, CUDA_R_32F, 4096);
  r.bf16_gflops = gemm_gflops(blas, s, CUDA_R_16BF, 8192);
  r.fp16_gflops = gemm_gflops(blas, s, CUDA_R_16F, 8192);
  r.conv_gflops = conv_gflops(dnn, s);
  {
    const size_t bytes = size_t(1) << 30;
    DeviceMem a(bytes), b(bytes);
    DC_CUDA(cudaMemsetAsync(a.p, 1, bytes, s), "benchmark");
    const double t = time_on(s, 1, 5, [&] {
      DC_CUDA(cudaMemcpyAsync(b.p, a.p, bytes, cudaMemcpyDeviceToDevice, s), "benchmark copy");
    });
    r.mem_bandwidth_gbs = 2.0 * double(bytes) / t * 1e-9;
  }
  {
    const size_t bytes = size_t(256) << 20;
    void* host = nullptr;
    DC_CUDA(cudaMallocHost(&host, bytes), "benchmark pinned host buffer");
    struct HostFree {
      void* p;
      ~HostFree() { cudaFreeHost(p); }
    } host_free{host};
    DeviceMem d(bytes);
    const double t = time_on(s, 1, 5, [&] {
      DC_CUDA(cudaMemcpyAsync(d.p, host, bytes, cudaMemcpyHostToDevice, s), "benchmark upload");
    });
    r.h2d_gbs = double(bytes) / t * 1e-9;
  }
  {
    DeviceMem tiny(256);
    r.launch_s = time_on(s, 10, 1000,
                         [&] { DC_CUDA(cudaMemsetAsync(tiny.p, 0, 256, s), "benchmark launch"); });
  }
  DC_CUDA(cudaStreamSynchronize(s), "benchmark");
  return r;
}

}  // namespace dc::cuda
