#pragma once
// GPU telemetry through NVML, opened with dlopen (libnvidia-ml.so.1 comes
// with the driver, not the toolkit), so machines without a GPU just report
// "unavailable". A sampler thread polls at a fixed rate and keeps the latest
// sample; consumers (the trainer's event channel, the GUI gauges) read it
// without ever blocking on NVML.
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dc {

struct GpuSample {
  int index = 0;
  double t = 0;              // seconds since the sampler started
  int utilization_pct = -1;  // -1: not reported by this GPU
  int memory_util_pct = -1;  // memory controller busy
  int64_t memory_used = -1, memory_total = -1;
  int temperature_c = -1;
  double power_w = -1, power_limit_w = -1;
  int sm_clock_mhz = -1, mem_clock_mhz = -1;
};

class Nvml {
 public:
  // Loads NVML once per process; available() is false (with why()) when the
  // library or a GPU is missing.
  static Nvml& instance();
  bool available() const { return ok_; }
  const std::string& why() const { return why_; }
  int device_count() const { return count_; }
  // One reading of GPU `index`; fields the GPU does not report stay -1.
  GpuSample sample(int index) const;

 private:
  Nvml();
  bool ok_ = false;
  std::string why_;
  int count_ = 0;
  struct Api;
  Api* api_ = nullptr;
};

// Samples one GPU on its own thread at `hz` (>= 4 by default) until stopped.
class GpuSampler {
 public:
  explicit GpuSampler(int index = 0, double hz = 5.0,
                      std::function<void(const GpuSample&)> on_sample = {});
  ~GpuSampler();
  GpuSampler(const GpuSampler&) = delete;
  GpuSampler& operator=(const GpuSampler&) = delete;
  bool available() const { return Nvml::instance().available(); }
  GpuSample latest() const;
  int64_t samples_taken() const { return taken_; }
  void stop();

 private:
  int index_;
  double hz_;
  std::function<void(const GpuSample&)> cb_;
  mutable std::mutex m_;
  GpuSample latest_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> taken_{0};
  std::thread th_;
};

}  // namespace dc
