// The CUDA plugin loader. dlopen keeps every CUDA library out of the
// engine's link line: a machine without the driver only loses the GPU, not
// the program.
#include <deepcanvas/device.h>
#include <deepcanvas/errors.h>

#include <dlfcn.h>

#include <filesystem>
#include <mutex>

namespace dc {

namespace fs = std::filesystem;

const std::vector<CpuOnlyLayer>& cpu_only_layers() {
  static const std::vector<CpuOnlyLayer> none;
  return none;
}

namespace {

struct Loaded {
  DeviceBackend* backend = nullptr;
  std::string why_not;
};

Loaded load_plugin() {
  Loaded r;
  // The driver first: without it the plugin would fail to load with a
  // linker message that does not tell the user what to install.
  void* drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!drv) {
    r.why_not =
        "no NVIDIA driver (libcuda.so.1 not found); install the NVIDIA driver to train on a GPU";
    return r;
  }
  std::string tried;
  void* h = nullptr;
  std::string last_error;
  for (const std::string& c : cuda_plugin_candidates()) {
    if (!fs::exists(c)) {
      tried += (tried.empty() ? "" : ", ") + c;
      continue;
    }
    // RTLD_LOCAL: the plugin carries its own copy of the engine code; its
    // symbols must not replace ours.
    h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h) break;
    const char* e = dlerror();
    last_error = c + ": " + (e ? e : "unknown error");
  }
  if (!h) {
    r.why_not = last_error.empty()
                    ? "the CUDA plugin libdeepcanvas-cuda.so was not found (looked in " + tried +
                          "); this build may have been made without CUDA (DEEPCANVAS_CUDA=OFF), "
                          "or set DC_CUDA_PLUGIN to its path"
                    : "the CUDA plugin could not be loaded: " + last_error +
                          " (a missing CUDA runtime, cuBLAS or cuDNN library?)";
    return r;
  }
  auto create = reinterpret_cast<dc_backend_create_fn>(dlsym(h, "dc_backend_create"));
  if (!create) {
    r.why_not = "the CUDA plugin has no dc_backend_create entry point (a stale build?)";
    return r;
  }
  char err[1024] = {0};
  r.backend = create(kBackendAbiVersion, err, sizeof err);
  if (!r.backend) r.why_not = err[0] ? err : "the CUDA plugin found no usable device";
  return r;
}

Loaded& loaded() {
  static Loaded l = load_plugin();
  return l;
}

}  // namespace

DeviceBackend* cuda_backend(std::string* why_not) {
  static std::mutex m;
  std::lock_guard<std::mutex> lock(m);
  Loaded& l = loaded();
  if (!l.backend && why_not) *why_not = l.why_not;
  return l.backend;
}

std::vector<GpuInfo> list_gpus(std::string* why_not) {
  DeviceBackend* b = cuda_backend(why_not);
  if (!b) return {};
  return b->devices();
}

DeviceBackend* require_device(const DeviceSpec& spec) {
  if (!spec.cuda) return nullptr;
  std::string why;
  DeviceBackend* b = cuda_backend(&why);
  if (!b)
    throw DeviceError("device '" + spec.str() + "' is not available: " + why +
                      "; set training.device to cpu to train on the CPU");
  auto gpus = b->devices();
  if (spec.index < 0 || spec.index >= int(gpus.size()))
    throw DeviceError(
        "device '" + spec.str() + "' does not exist: " + std::to_string(gpus.size()) +
        " CUDA device(s) found (cuda:0 to cuda:" + std::to_string(int(gpus.size()) - 1) + ")");
  return b;
}

std::string cuda_status() {
  std::string why;
  DeviceBackend* b = cuda_backend(&why);
  if (!b) return "off, " + why;
  const size_t n = b->devices().size();
  return "on, " + std::to_string(n) + (n == 1 ? " GPU" : " GPUs");
}

}  // namespace dc
