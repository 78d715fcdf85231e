// bench-device --device cuda:N: what the libraries the backend trains with
// reach on this GPU, timed with CUDA events after a warm-up. Not a peak
// search: one representative shape per figure, as the CPU benchmark does.
#include <deepcanvas/backend.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "bench.h"
#include "handles.h"

namespace dc::cuda {

namespace {

// A device allocation for the benchmark's lifetime (handles.h frees it).
class DeviceMem {
 public:
  explicit DeviceMem(size_t bytes) {
    DC_CUDA(cudaMalloc(mem_.out(), bytes),
            "benchmark buffer of " + std::to_string(bytes) + " bytes");
  }
  void* get() const { return mem_.get(); }

 private:
  Handle<void*, &cudaFree> mem_;
};

// Mean seconds of one call of fn over `reps` calls queued on `s`, after
// `warm` unmeasured ones.
template <class F>
double time_on(cudaStream_t s, int warm, int reps, F&& fn) {
  for (int i = 0; i < warm; ++i) fn();
  Event a, b;
  DC_CUDA(cudaEventCreate(a.out()), "benchmark event");
  DC_CUDA(cudaEventCreate(b.out()), "benchmark event");
  DC_CUDA(cudaEventRecord(a.get(), s), "benchmark event");
  for (int i = 0; i < reps; ++i) fn();
  DC_CUDA(cudaEventRecord(b.get(), s), "benchmark event");
  DC_CUDA(cudaEventSynchronize(b.get()), "benchmark");
  float ms = 0;
  DC_CUDA(cudaEventElapsedTime(&ms, a.get(), b.get()), "benchmark event");
  return double(ms) * 1e-3 / reps;
}

double gemm_gflops(cublasHandle_t h, cudaStream_t s, cudaDataType_t type, int n) {
  const size_t elem = type == CUDA_R_32F ? 4 : 2;
  DeviceMem a(size_t(n) * n * elem), b(size_t(n) * n * elem), c(size_t(n) * n * elem);
  DC_CUDA(cudaMemsetAsync(a.get(), 0, size_t(n) * n * elem, s), "benchmark");
  DC_CUDA(cudaMemsetAsync(b.get(), 0, size_t(n) * n * elem, s), "benchmark");
  const float one = 1.f, zero = 0.f;
  const std::string what = "benchmark GEMM " + std::to_string(n);
  const double t = time_on(s, 2, 10, [&] {
    if (type == CUDA_R_32F) {
      DC_CUBLAS(
          cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, static_cast<float*>(a.get()), n,
                      static_cast<float*>(b.get()), n, &zero, static_cast<float*>(c.get()), n),
          what);
    } else {
      DC_CUBLAS(
          cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a.get(), type, n, b.get(), type,
                       n, &zero, c.get(), type, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          what);
    }
  });
  return 2.0 * double(n) * n * n / t * 1e-9;
}

double conv_gflops(cudnnHandle_t h, cudaStream_t s) {
  const int N = 64, C = 64, K = 64, H = 56, W = 56;
  const std::string what = "benchmark convolution";
  TensorDesc xd, yd;
  FilterDesc wd;
  ConvDesc cd;
  DC_CUDNN(cudnnCreateTensorDescriptor(xd.out()), what);
  DC_CUDNN(cudnnCreateTensorDescriptor(yd.out()), what);
  DC_CUDNN(cudnnCreateFilterDescriptor(wd.out()), what);
  DC_CUDNN(cudnnCreateConvolutionDescriptor(cd.out()), what);
  cudnnTensorDescriptor_t x = xd.get(), y = yd.get();
  cudnnFilterDescriptor_t w = wd.get();
  cudnnConvolutionDescriptor_t conv = cd.get();
  DC_CUDNN(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, C, H, W), what);
  DC_CUDNN(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, K, H, W), what);
  DC_CUDNN(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, K, C, 3, 3), what);
  DC_CUDNN(cudnnSetConvolution2dDescriptor(conv, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                           CUDNN_DATA_FLOAT),
           what);
  // fp32 as the backend trains it (no TF32 tensor-op math).
  DC_CUDNN(cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH), what);
  DeviceMem dx(size_t(N) * C * H * W * 4), dy(size_t(N) * K * H * W * 4), dw(size_t(K) * C * 9 * 4);
  DC_CUDA(cudaMemsetAsync(dx.get(), 0, size_t(N) * C * H * W * 4, s), what);
  DC_CUDA(cudaMemsetAsync(dw.get(), 0, size_t(K) * C * 9 * 4, s), what);
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
    DC_CUDNN(cudnnConvolutionForward(h, &one, x, dx.get(), w, dw.get(), conv, perf[pick].algo,
                                     ws.get(), perf[pick].memory, &zero, y, dy.get()),
             what);
  });
  return 2.0 * double(N) * K * H * W * C * 9 / t * 1e-9;
}

}  // namespace

GpuBenchResult run_gpu_benchmark(int device) {
  DC_CUDA(cudaSetDevice(device), "benchmark: cuda:" + std::to_string(device));
  Stream stream;
  DC_CUDA(cudaStreamCreateWithFlags(stream.out(), cudaStreamNonBlocking), "benchmark stream");
  const cudaStream_t s = stream.get();
  BlasHandle blas_h;
  DC_CUBLAS(cublasCreate(blas_h.out()), "benchmark cuBLAS");
  const cublasHandle_t blas = blas_h.get();
  DC_CUBLAS(cublasSetStream(blas, s), "benchmark cuBLAS");
  // fp32 without TF32, as the backend trains in fp32.
  DC_CUBLAS(cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH), "benchmark cuBLAS");
  DnnHandle dnn_h;
  DC_CUDNN(cudnnCreate(dnn_h.out()), "benchmark cuDNN");
  const cudnnHandle_t dnn = dnn_h.get();
  DC_CUDNN(cudnnSetStream(dnn, s), "benchmark cuDNN");

  GpuBenchResult r;
  r.fp32_gflops = gemm_gflops(blas, s, CUDA_R_32F, 4096);
  r.bf16_gflops = gemm_gflops(blas, s, CUDA_R_16BF, 8192);
  r.fp16_gflops = gemm_gflops(blas, s, CUDA_R_16F, 8192);
  r.conv_gflops = conv_gflops(dnn, s);
  {
    const size_t bytes = size_t(1) << 30;
    DeviceMem a(bytes), b(bytes);
    DC_CUDA(cudaMemsetAsync(a.get(), 1, bytes, s), "benchmark");
    const double t = time_on(s, 1, 5, [&] {
      DC_CUDA(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, s),
              "benchmark copy");
    });
    r.mem_bandwidth_gbs = 2.0 * double(bytes) / t * 1e-9;
  }
  {
    const size_t bytes = size_t(256) << 20;
    Pinned<unsigned char> host(bytes, "benchmark pinned host buffer");
    DeviceMem d(bytes);
    const double t = time_on(s, 1, 5, [&] {
      DC_CUDA(cudaMemcpyAsync(d.get(), host.get(), bytes, cudaMemcpyHostToDevice, s),
              "benchmark upload");
    });
    r.h2d_gbs = double(bytes) / t * 1e-9;
  }
  {
    DeviceMem tiny(256);
    r.launch_s = time_on(
        s, 10, 1000, [&] { DC_CUDA(cudaMemsetAsync(tiny.get(), 0, 256, s), "benchmark launch"); });
  }
  DC_CUDA(cudaStreamSynchronize(s), "benchmark");
  return r;
}

}  // namespace dc::cuda
