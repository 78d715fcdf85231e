// The plugin's entry point and error helpers. dc_backend_create is the one
// symbol the engine looks up; everything else stays hidden (the plugin
// carries its own copy of the engine code, linked with --exclude-libs).
#include <deepcanvas/backend.h>
#include <deepcanvas/layer.h>

#include <cstdio>
#include <cstring>

#include "bench.h"
#include "common.h"
#include "op_registry.h"

namespace dc::cuda {

std::unique_ptr<DevicePlan> make_cuda_plan(Plan& host, const DevicePlanOptions& o,
                                           const std::string& name);

void throw_cuda(cudaError_t e, const char* call, const std::string& what) {
  cudaGetLastError();
  std::string msg =
      what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ") in " + call;
  if (e == cudaErrorMemoryAllocation) msg += "; the GPU is out of memory, lower the batch size";
  throw DeviceError(msg);
}
void throw_cudnn(cudnnStatus_t s, const char* call, const std::string& what) {
  throw DeviceError(what + ": cuDNN error " + cudnnGetErrorString(s) + " in " + call);
}
void throw_cublas(cublasStatus_t s, const char* call, const std::string& what) {
  throw DeviceError(what + ": cuBLAS error " + cublasGetStatusString(s) + " in " + call);
}

namespace {

class CudaBackend : public DeviceBackend {
 public:
  std::vector<GpuInfo> devices() override {
    std::vector<GpuInfo> v;
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) return v;
    int drv = 0, rt = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    for (int i = 0; i < n; ++i) {
      cudaDeviceProp p{};
      if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
      GpuInfo g;
      g.index = i;
      g.name = p.name;
      g.cc_major = p.major;
      g.cc_minor = p.minor;
      g.multiprocessors = p.multiProcessorCount;
      g.total_bytes = int64_t(p.totalGlobalMem);
      size_t f = 0, t = 0;
      if (cudaSetDevice(i) == cudaSuccess && cudaMemGetInfo(&f, &t) == cudaSuccess)
        g.free_bytes = int64_t(f);
      g.tensor_cores = p.major >= 7;
      g.driver_version = drv;
      g.runtime_version = rt;
      v.push_back(g);
    }
    return v;
  }

  GpuBenchResult benchmark(int device) override { return cuda::run_gpu_benchmark(device); }

  std::unique_ptr<DevicePlan> create_plan(const Graph& g, Plan& host,
                                          const DevicePlanOptions& o) override {
    register_builtin_layers();
    auto gpus = devices();
    if (o.device < 0 || o.device >= int(gpus.size()))
      throw DeviceError("cuda:" + std::to_string(o.device) + " does not exist");
    return make_cuda_plan(host, o,
                          "cuda:" + std::to_string(o.device) + " (" + gpus[o.device].name + ")");
  }
};

}  // namespace
}  // namespace dc::cuda

extern "C" __attribute__((visibility("default"))) dc::DeviceBackend* dc_backend_create(
    int abi_version, char* err, size_t err_len) {
  auto fail = [&](const std::string& m) -> dc::DeviceBackend* {
    if (err && err_len) std::snprintf(err, err_len, "%s", m.c_str());
    return nullptr;
  };
  if (abi_version != dc::kBackendAbiVersion)
    return fail("the CUDA plugin was built for engine interface " +
                std::to_string(dc::kBackendAbiVersion) + " but this program uses " +
                std::to_string(abi_version) + "; reinstall matching versions");
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaErrorInsufficientDriver) {
    int drv = 0;
    cudaDriverGetVersion(&drv);
    return fail("the NVIDIA driver is too old: it supports CUDA " + std::to_string(drv / 1000) +
                "." + std::to_string(drv % 1000 / 10) + " but this build needs CUDA " +
                std::to_string(CUDART_VERSION / 1000) + "." +
                std::to_string(CUDART_VERSION % 1000 / 10) + "; update the driver");
  }
  if (e == cudaErrorNoDevice || (e == cudaSuccess && n == 0))
    return fail("no CUDA device found (the driver is installed but sees no GPU)");
  if (e != cudaSuccess)
    return fail(std::string("CUDA could not start: ") + cudaGetErrorName(e) + " (" +
                cudaGetErrorString(e) + ")");
  static dc::cuda::CudaBackend backend;
  return &backend;
}

extern "C" __attribute__((visibility("default"))) const char* dc_cuda_op_types() {
  static const std::string types = [] {
    std::string r;
    for (const std::string& t : dc::cuda::OpRegistry::instance().types()) r += t + "\n";
    return r;
  }();
  return types.c_str();
}
