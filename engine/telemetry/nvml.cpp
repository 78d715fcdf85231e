// NVML through dlopen. Only the handful of entry points we read are
// resolved; their signatures are NVML's stable C ABI (nvml.h), declared here
// so the engine builds without the CUDA toolkit.
#include <deepcanvas/telemetry.h>

#include <dlfcn.h>

#include <chrono>

namespace dc {

namespace {
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
struct nvmlUtilization_t {
  unsigned int gpu, memory;
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
constexpr int kTempGpu = 0;   // NVML_TEMPERATURE_GPU
constexpr int kClockSm = 1;   // NVML_CLOCK_SM
constexpr int kClockMem = 2;  // NVML_CLOCK_MEM
}  // namespace

struct Nvml::Api {
  nvmlReturn_t (*init)();
  nvmlReturn_t (*count)(unsigned int*);
  nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t*);
  nvmlReturn_t (*util)(nvmlDevice_t, nvmlUtilization_t*);
  nvmlReturn_t (*mem)(nvmlDevice_t, nvmlMemory_t*);
  nvmlReturn_t (*temp)(nvmlDevice_t, int, unsigned int*);
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned int*);
  nvmlReturn_t (*limit)(nvmlDevice_t, unsigned int*);
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned int*);
};

Nvml& Nvml::instance() {
  static Nvml n;
  return n;
}

Nvml::Nvml() {
  void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    why_ = "NVML (libnvidia-ml.so.1, part of the NVIDIA driver) not found";
    return;
  }
  auto* a = new Api{};
  auto sym = [&](auto& fn, const char* name, const char* fallback = nullptr) {
    void* p = dlsym(h, name);
    if (!p && fallback) p = dlsym(h, fallback);
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    return p != nullptr;
  };
  bool ok = sym(a->init, "nvmlInit_v2", "nvmlInit") &&
            sym(a->count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount") &&
            sym(a->handle, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
  sym(a->util, "nvmlDeviceGetUtilizationRates");
  sym(a->mem, "nvmlDeviceGetMemoryInfo");
  sym(a->temp, "nvmlDeviceGetTemperature");
  sym(a->power, "nvmlDeviceGetPowerUsage");
  sym(a->limit, "nvmlDeviceGetEnforcedPowerLimit");
  sym(a->clock, "nvmlDeviceGetClockInfo");
  if (!ok) {
    why_ = "NVML is too old (missing nvmlInit_v2)";
    delete a;
    return;
  }
  if (a->init() != 0) {
    why_ = "NVML could not be initialised (no NVIDIA GPU, or the driver is not loaded)";
    delete a;
    return;
  }
  unsigned int n = 0;
  if (a->count(&n) != 0 || n == 0) {
    why_ = "NVML reports no NVIDIA GPU";
    delete a;
    return;
  }
  api_ = a;
  count_ = int(n);
  ok_ = true;
}

GpuSample Nvml::sample(int index) const {
  GpuSample s;
  s.index = index;
  if (!ok_ || index < 0 || index >= count_) return s;
  nvmlDevice_t d = nullptr;
  if (api_->handle(unsigned(index), &d) != 0) return s;
  nvmlUtilization_t u{};
  if (api_->util && api_->util(d, &u) == 0) {
    s.utilization_pct = int(u.gpu);
    s.memory_util_pct = int(u.memory);
  }
  nvmlMemory_t m{};
  if (api_->mem && api_->mem(d, &m) == 0) {
    s.memory_used = int64_t(m.used);
    s.memory_total = int64_t(m.total);
  }
  unsigned int v = 0;
  if (api_->temp && api_->temp(d, kTempGpu, &v) == 0) s.temperature_c = int(v);
  if (api_->power && api_->power(d, &v) == 0) s.power_w = v / 1000.0;  // milliwatts
  if (api_->limit && api_->limit(d, &v) == 0) s.power_limit_w = v / 1000.0;
  if (api_->clock && api_->clock(d, kClockSm, &v) == 0) s.sm_clock_mhz = int(v);
  if (api_->clock && api_->clock(d, kClockMem, &v) == 0) s.mem_clock_mhz = int(v);
  return s;
}

GpuSampler::GpuSampler(int index, double hz, std::function<void(const GpuSample&)> on_sample)
    : index_(index), hz_(hz < 4.0 ? 4.0 : hz), cb_(std::move(on_sample)) {
  if (!Nvml::instance().available()) return;
  th_ = std::thread([this] {
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    const auto period = std::chrono::duration<double>(1.0 / hz_);
    auto next = t0;
    while (!stop_) {
      GpuSample s = Nvml::instance().sample(index_);
      s.t = std::chrono::duration<double>(Clock::now() - t0).count();
      {
        std::lock_guard<std::mutex> l(m_);
        latest_ = s;
      }
      ++taken_;
      if (cb_) cb_(s);
      next += std::chrono::duration_cast<Clock::duration>(period);
      // Short sleeps so stop() never waits a whole period.
      while (!stop_ && Clock::now() < next)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
}

GpuSampler::~GpuSampler() {
  stop();
}

void GpuSampler::stop() {
  stop_ = true;
  if (th_.joinable()) th_.join();
}

GpuSample GpuSampler::latest() const {
  std::lock_guard<std::mutex> l(m_);
  return latest_;
}

}  // namespace dc
